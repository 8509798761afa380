"""Are the steps a tenprof recording times with its capture off the program's own steps? One process.

    python benchmarks/timed_steps_inproc.py --workload mlp|gpt2|gpt2-compiled [--plain 20] [--timed 8] [--rounds 2]

Across processes a loop's step varies by up to 40% on the GPU machines (compiled GPT-2 19-29 ms, the
small MLP 2.9-4.2 ms: docs/BENCHMARKS.md), more than the 10% this is to judge. So the comparison is made
inside one process, on one compiled model and one warm GPU: `--rounds` times, `--plain` plain steps (each
timed from a synchronize to a synchronize, as tenprof times its own), then a `tenprof.profile()` block with
`--timed` steps timed un-profiled (tenprof's plan: the 4th and 5th and every 5th pair after, the second of a
pair timed), then plain steps again at the end. Prints each phase's steps, the medians, and the ratio of
the recording's own un-profiled step (its report's median) to the plain steps around it. Workloads as
benchmarks/toggle_probe.py builds them. Writes the profiles under --out (kept for reading).
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

import torch
from overhead import recorded_overhead
from toggle_probe import gpt2_step, mlp_step, timed

import tenprof
from tenprof.capture.overhead_plan import OverheadPlan


def steps_for(timed_count: int) -> int:
    """The fewest steps a recording needs for tenprof's plan to time `timed_count` of them, and two more."""
    plan = OverheadPlan.for_run(timed_count, None)  # as the environment sets it
    n, seen = 0, 0
    while seen < timed_count:
        if plan.is_off(n) and not plan.is_settling(n):
            seen += 1
        n += 1
    return n + 2


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workload", choices=("mlp", "gpt2", "gpt2-compiled"), default="mlp")
    parser.add_argument("--plain", type=int, default=20, help="plain steps before each recording and at the end")
    parser.add_argument("--timed", type=int, default=8, help="steps each recording times with its capture off")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out", default="timed-inproc-out")
    parser.add_argument("--json", default="", help="write the results here too")
    args = parser.parse_args()
    card = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "CPU"
    step = mlp_step() if args.workload == "mlp" else gpt2_step(compiled=args.workload == "gpt2-compiled")
    timed(step, 5)  # warm-up (and the compilation)
    recorded_steps = steps_for(args.timed)
    plain: list[list[float]] = [timed(step, args.plain)]
    rounds = []
    for r in range(args.rounds):
        out = Path(args.out) / f"{args.workload}-{r}"
        with tenprof.profile(str(out), force=True, overhead_steps=args.timed) as prof:
            for _ in range(recorded_steps):
                step()
                prof.step()
        plain.append(timed(step, args.plain))
        rounds.append({"profile": str(out), **recorded_overhead(out)})
    around = [statistics.median(p) for p in plain]
    results = {"card": card, "workload": args.workload, "torch": torch.__version__, "plain_medians_s": around}
    print(f"{args.workload} on {card}, torch {torch.__version__}; {args.plain} plain steps a phase, "
          f"{recorded_steps} recorded with {args.timed} timed un-profiled")  # fmt: skip
    for k, phase in enumerate(plain):
        steps = ", ".join(f"{t * 1e3:.2f}" for t in phase)
        print(f"  plain phase {k}: median {around[k] * 1e3:.2f} ms; steps (ms) {steps}")
    for r, done in enumerate(rounds):
        base = statistics.median([around[r], around[r + 1]])
        u, p = done["unprofiled_s"], done["recorded_s"]
        done["plain_around_s"] = base
        done["ratio"] = u / base if u else None
        u_text = f"{u * 1e3:.2f} ms" if u else "none"
        p_text = f"{p * 1e3:.2f} ms" if p else "none"
        ratio = f"{u / base:.3f}" if u else "n/a"
        print(f"  recording {r}: un-profiled step {u_text}, recorded {p_text}; plain around it {base * 1e3:.2f} ms; "
              f"un-profiled / plain {ratio}")  # fmt: skip
    results["rounds"] = rounds
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
