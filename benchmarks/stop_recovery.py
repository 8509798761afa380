"""How many steps a loop needs after a torch.profiler stop to run at its plain speed again. One process.

    python benchmarks/stop_recovery.py [--eager] [--settle 1] [--sleep-s 0] [--rounds 12] [--no-export]
                                       [--no-profiler [--spin-s 0.2]] [--keep-cupti]

tenprof times its un-profiled steps right after stopping the profiler, with `--settle` untimed steps
between (TENPROF_SETTLING_STEPS). This measures what that leaves in the timed step, with torch.profiler
alone (CPU activity, and CUDA where there is a GPU): an MLP's training step (compiled, or eager with
`--eager`) timed plain, then `--rounds` times: the profiler started, three steps recorded, stopped, its
trace exported (unless `--no-export`), `--sleep-s` of sleep, `--settle` steps, one step timed; then plain
again. Prints the timed steps' median against the plain steps'. `--no-profiler` leaves the profiler out: the
loop only stops for `--sleep-s` of sleep or `--spin-s` of a busy Python loop, then settles and times the same
way (is it the profiler, or any break in the loop?). On a GPU, CUPTI is torn down at each stop
(TEARDOWN_CUPTI=1, where the environment does not set it), as tenprof's runs do; `--keep-cupti` leaves it
attached, as torch.profiler does by default (the GPU figures of 2026-12-01 22:22 UTC were taken so, before
this option: there the timed step also paid for CUPTI still attached).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

import torch
from compiled_under_capture import timed, training_step
from torch.profiler import ProfilerActivity, profile


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--eager", action="store_true")
    parser.add_argument("--settle", type=int, default=1)
    parser.add_argument("--sleep-s", type=float, default=0.0)
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--no-export", action="store_true")
    parser.add_argument("--no-profiler", action="store_true", help="only a break in the loop: sleep or spin")
    parser.add_argument("--spin-s", type=float, default=0.0, help="with --no-profiler: a busy Python loop")
    parser.add_argument("--keep-cupti", action="store_true", help="CUPTI stays attached after each stop")
    args = parser.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not args.keep_cupti:
        os.environ.setdefault("TEARDOWN_CUPTI", "1")  # read by Kineto at each stop, as tenprof sets it
    step = training_step(8, 32, 4, device, compiled=not args.eager)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    timed(step, 5, device)
    plain = timed(step, 100, device)
    after: list[int] = []
    with tempfile.TemporaryDirectory() as out:
        for r in range(args.rounds):
            if args.no_profiler:
                spin_until = time.perf_counter() + args.spin_s
                while time.perf_counter() < spin_until:
                    pass
                time.sleep(args.sleep_s)
                timed(step, args.settle, device)
                after += timed(step, 1, device)
                continue
            prof = profile(activities=activities)
            prof.start()
            for _ in range(3):
                step()
            prof.stop()
            if not args.no_export:
                prof.export_chrome_trace(f"{out}/trace{r}.json")
            del prof
            time.sleep(args.sleep_s)
            timed(step, args.settle, device)
            after += timed(step, 1, device)
    plain += timed(step, 100, device)
    p, a = statistics.median(plain) / 1e3, statistics.median(after) / 1e3
    card = torch.cuda.get_device_name(0) if device == "cuda" else "CPU"
    kind = "eager" if args.eager else "compiled"
    stop = f"no profiler, spin {args.spin_s} s" if args.no_profiler else f"export {not args.no_export}"
    if device == "cuda" and not args.no_profiler:
        stop += f", CUPTI torn down {os.environ.get('TEARDOWN_CUPTI') == '1'}"
    print(
        f"{card}, {kind}, settle {args.settle}, sleep {args.sleep_s} s, {stop}: plain {p:.0f} us, "
        f"timed after the stop {a:.0f} us ({len(after)} steps): {a / p:.2f}x"
    )


if __name__ == "__main__":
    main()
