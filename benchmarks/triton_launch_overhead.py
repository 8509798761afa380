"""What recording the script's own Triton launches costs per launch (issue 20).

A loop of small Triton kernel launches (64 elements each: the launch is all there is to it), timed in
its own process for each way of watching it, the ways interleaved over the repeats:
  plain     nothing watches;
  tenprof   tenprof's launch wrapper alone (tenprof.capture.own_launches, no profiler around it);
  proton    Proton's launch hook (triton.profiler.start(hook="triton")), which also collects the kernels
            through CUPTI: it is the tool's whole cost, not its hook alone.
Prints microseconds per launch (median over repeats) and the cost added to the plain loop.

    python benchmarks/triton_launch_overhead.py --launches 20000 --repeats 3 [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time

MODES = ("plain", "tenprof", "proton")


def one_run(mode: str, launches: int) -> float:
    """Seconds for `launches` launches, after a warm-up, watched as `mode`."""
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def tiny(x_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1.0, mask=mask)

    x = torch.zeros(64, device="cuda")
    for _ in range(50):
        tiny[(1,)](x, 64, BLOCK=64)
    torch.cuda.synchronize()
    stop = None
    if mode == "tenprof":
        from tenprof.capture.callsites import new_interner
        from tenprof.capture.own_launches import OwnLaunches

        recorder = OwnLaunches(new_interner(None))
        recorder.start()
        stop = recorder.stop
    elif mode == "proton":
        import triton.profiler as proton

        proton.start(tempfile.mktemp(prefix="proton-"), hook="triton")
        stop = proton.finalize
    began = time.perf_counter()
    for _ in range(launches):
        tiny[(1,)](x, 64, BLOCK=64)
    torch.cuda.synchronize()
    took = time.perf_counter() - began
    if stop is not None:
        stop()
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--launches", type=int, default=20000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", default="")
    parser.add_argument("--one", choices=MODES, help=argparse.SUPPRESS)  # a single run, in this process
    args = parser.parse_args()
    if args.one:
        print(json.dumps({"seconds": one_run(args.one, args.launches)}))
        return
    import torch

    card = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU"
    seconds: dict[str, list[float]] = {m: [] for m in MODES}
    for r in range(args.repeats):
        for mode in MODES[r % len(MODES) :] + MODES[: r % len(MODES)]:  # order rotated per repeat
            done = subprocess.run(
                [sys.executable, __file__, "--one", mode, "--launches", str(args.launches)],
                capture_output=True,
                text=True,
                check=False,
            )
            if done.returncode != 0:
                print(f"{mode}: failed: {done.stderr.strip().splitlines()[-1:]}")
                continue
            seconds[mode].append(json.loads(done.stdout.strip().splitlines()[-1])["seconds"])
            print(f"r{r} {mode:8s} {1e6 * seconds[mode][-1] / args.launches:.2f} us per launch", flush=True)
    per_launch = {m: 1e6 * statistics.median(v) / args.launches for m, v in seconds.items() if v}
    print(f"\n{card}, {args.launches} launches, median of {args.repeats} repeat(s):")
    for mode, us in per_launch.items():
        added = us - per_launch.get("plain", us)
        print(f"  {mode:8s} {us:6.2f} us per launch  (+{added:.2f} us, {us / per_launch['plain']:.2f}x)")
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"card": card, "launches": args.launches, "seconds": seconds, "us_per_launch": per_launch}, out)


if __name__ == "__main__":
    main()
