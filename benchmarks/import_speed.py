"""Seconds and peak memory to import a big Kineto trace (`tenprof import`), streaming.

    python benchmarks/import_speed.py --workdir /tmp/big [--target-mb 600] [--trace existing.json]

Without --trace it first makes one: torch.profiler with record_shapes, profile_memory and with_stack
over a long run of the small MLP (tens of thousands of events per step), growing the step count until
the exported JSON passes --target-mb. The import runs in a child process; its peak RSS is read from
getrusage(RUSAGE_CHILDREN).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

MAKER = r"""
import sys, torch
from torch import nn
from torch.profiler import profile, ProfilerActivity
steps, out = int(sys.argv[1]), sys.argv[2]
dev = "cuda" if torch.cuda.is_available() else "cpu"
layers = []
for _ in range(16):
    layers += [nn.Linear(256, 256), nn.ReLU()]
model = nn.Sequential(*layers).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
x = torch.randn(64, 256, device=dev)
acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if dev == "cuda" else [])
with profile(activities=acts, record_shapes=True, profile_memory=True, with_stack=True) as prof:
    for _ in range(steps):
        model(x).square().mean().backward(); opt.step(); opt.zero_grad()
prof.export_chrome_trace(out)
"""


def make_trace(workdir: Path, target_mb: float) -> Path:
    workdir.mkdir(parents=True, exist_ok=True)
    pilot = workdir / "pilot.json"
    subprocess.run([sys.executable, "-c", MAKER, "20", str(pilot)], check=True)
    per_step = pilot.stat().st_size / 20
    steps = int(target_mb * 1e6 / per_step * 1.1) + 1
    trace = workdir / "big.json"
    print(f"pilot: {per_step / 1e6:.2f} MB per step; making {steps} steps", flush=True)
    subprocess.run([sys.executable, "-c", MAKER, str(steps), str(trace)], check=True)
    return trace


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workdir", default="/tmp/tenprof-import-bench")
    parser.add_argument("--target-mb", type=float, default=600)
    parser.add_argument("--trace", default="")
    args = parser.parse_args()
    workdir = Path(args.workdir)
    trace = Path(args.trace) if args.trace else make_trace(workdir, args.target_mb)
    size_mb = trace.stat().st_size / 1e6
    out = workdir / "imported"
    # A fresh interpreter runs the import as its only child, so its RUSAGE_CHILDREN peak is the import's.
    measure = (
        "import resource, subprocess, sys, time; t = time.perf_counter(); "
        "r = subprocess.run([sys.executable, '-m', 'tenprof', 'import', sys.argv[1], '-o', sys.argv[2], "
        "'--force', '--quiet'], capture_output=True, text=True); "
        "print(r.returncode, time.perf_counter() - t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); "
        "print(r.stderr[-2000:], file=sys.stderr)"
    )
    done = subprocess.run(
        [sys.executable, "-c", measure, str(trace), str(out)], capture_output=True, text=True, check=False
    )
    code, seconds, peak_kb = done.stdout.split()
    if code != "0":
        raise SystemExit(f"import failed: {done.stderr[-2000:]}")
    seconds_f, peak_mb = float(seconds), int(peak_kb) / 1024
    tables_mb = sum(p.stat().st_size for p in (out / "timeline").glob("*.parquet")) / 1e6
    print(
        f"trace {size_mb:.0f} MB -> import {seconds_f:.1f} s ({size_mb / seconds_f:.0f} MB/s), "
        f"peak RSS {peak_mb:.0f} MB, Parquet tables {tables_mb:.1f} MB"
    )


if __name__ == "__main__":
    main()
