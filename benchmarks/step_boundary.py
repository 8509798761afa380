"""What tenprof's own work at a recorded step's boundary costs: the time between the clock reads that bracket
it inside `tenprof.step()` (the sidecar's step bounds), which the steps' own times leave out but a whole
loop pays.

    python benchmarks/step_boundary.py [--captures native,native-ops,kineto] [--runs 3] [--steps 100]

Each run is `tenprof run --capture C --overhead-steps 0 examples/small_mlp.py --steps N` (the `-ops`
variants with TENPROF_OPS=sampled); prints each run's median and 90th percentile over its recorded
boundaries (the first five left out) and the machine. On a machine without a GPU the MLP runs on the CPU.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from overhead import machine_info

from tenprof.core.rawfiles import CALLSITES_FILE
from tenprof.importers.callsites import read_callsites

ROOT = Path(__file__).resolve().parents[1]
RECORDED = 0  # a step bound's state (capture.overhead_plan.RECORDED)


def boundaries_us(out: Path) -> list[float]:
    """Each recorded step's boundary (us), from the sidecar's step bounds: [ended, resumed, state]."""
    bounds = read_callsites(out / "timeline" / "raw" / CALLSITES_FILE).step_bounds
    return [(resumed - ended) / 1e3 for ended, resumed, state in bounds if state == RECORDED][5:]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--captures", default="native,native-ops,kineto")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--steps", type=int, default=100)
    args = parser.parse_args()
    info = machine_info()
    print(f"{info.get('card') or 'no GPU'}, torch {info.get('torch')}, {info['date']}", flush=True)
    with tempfile.TemporaryDirectory(prefix="tenprof-boundary-") as scratch:
        for run in range(1, args.runs + 1):
            for capture in args.captures.split(","):
                env = dict(os.environ)
                if capture.endswith("-ops"):
                    env["TENPROF_OPS"] = "sampled"
                out = Path(scratch) / f"{capture}-{run}"
                command = [sys.executable, "-m", "tenprof", "run", "--quiet", "--capture", capture.removesuffix("-ops")]
                command += ["--overhead-steps", "0", "-o", str(out)]
                command += ["examples/small_mlp.py", "--steps", str(args.steps)]
                ran = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
                if ran.returncode != 0:
                    print(f"run {run} {capture:12s} failed: {(ran.stderr.strip().splitlines() or ['?'])[-1]}")
                    continue
                times = sorted(boundaries_us(out))
                p90 = times[int(len(times) * 0.9)]
                print(
                    f"run {run} {capture:12s} {len(times)} boundaries: median {statistics.median(times):7.1f} us, "
                    f"p90 {p90:7.1f} us",
                    flush=True,
                )


if __name__ == "__main__":
    main()
