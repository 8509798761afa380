"""Seconds and peak memory to import big Kineto traces: tenprof's `tenprof import`, and HTA's parser
beside it when a Python with HTA is given, each in its own process.

    python benchmarks/import_speed.py [--sizes 100,500] [--source TRACE] [--workdir DIR]
                                      [--hta-python /path/to/python-with-hta]

The traces are made from a real recording (default: GPT-2 small's, tests/data/gpt2) by
tests/trace_replica.py: its events repeated, each copy shifted in time and in every linking id, until
the file passes each size. Peak RSS is the child's (getrusage(RUSAGE_CHILDREN) in a fresh interpreter
whose only child it is). Prints a line per size and tool, and the growth of time and memory per MB.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.trace_replica import replicate  # noqa: E402

MEASURE = (
    "import resource, subprocess, sys, time; t = time.perf_counter(); "
    "r = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
    "print(r.returncode, time.perf_counter() - t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); "
    "print(r.stderr[-2000:], file=sys.stderr)"
)
HTA = (
    "import sys; from hta.common.trace_parser import parse_trace_dataframe; "
    "from hta.configs.parser_config import ParserConfig; "
    "meta, df, symbols = parse_trace_dataframe(sys.argv[1], ParserConfig()); print(len(df))"
)


def measure(command: list[str]) -> tuple[float, float]:
    """Seconds and peak RSS (MB) of `command`, run as the only child of a fresh interpreter."""
    done = subprocess.run([sys.executable, "-c", MEASURE, *command], capture_output=True, text=True, check=False)
    code, seconds, peak_kb = done.stdout.split()
    if code != "0":
        raise SystemExit(f"{command[:3]} failed: {done.stderr[-2000:]}")
    return float(seconds), int(peak_kb) / 1024


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="100,500", help="trace sizes in MB")
    parser.add_argument("--source", default=str(REPO / "tests/data/gpt2/timeline/raw/kineto_trace.json.gz"))
    parser.add_argument("--workdir", default="/tmp/tenprof-import-bench")
    parser.add_argument("--hta-python", default="", help="a Python interpreter with HTA installed")
    args = parser.parse_args()
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    rows = []
    for size in (int(s) for s in args.sizes.split(",")):
        trace = workdir / f"trace_{size}mb.json"
        if not trace.exists():
            copies = replicate(Path(args.source), trace, target_bytes=size * 1_000_000)
            print(f"made {trace} ({copies} copies)", flush=True)
        mb = trace.stat().st_size / 1e6
        out = workdir / f"imported_{size}"
        seconds, peak = measure(
            [sys.executable, "-m", "tenprof", "import", str(trace), "-o", str(out), "--force", "--quiet"]
        )
        rows.append(("tenprof", mb, seconds, peak))
        print(f"tenprof {mb:.0f} MB: {seconds:.1f} s ({mb / seconds:.0f} MB/s), peak RSS {peak:.0f} MB", flush=True)
        if args.hta_python:
            seconds, peak = measure([args.hta_python, "-c", HTA, str(trace)])
            rows.append(("HTA", mb, seconds, peak))
            print(f"HTA     {mb:.0f} MB: {seconds:.1f} s ({mb / seconds:.0f} MB/s), peak RSS {peak:.0f} MB", flush=True)
    for tool in ("tenprof", "HTA"):
        mine = [r for r in rows if r[0] == tool]
        if len(mine) >= 2:
            (_, m0, s0, p0), (_, m1, s1, p1) = mine[0], mine[-1]
            per_mb = (1000 * (s1 - s0) / (m1 - m0), (p1 - p0) / (m1 - m0))
            print(f"{tool}: growth per MB of trace {per_mb[0]:.0f} ms, {per_mb[1]:.2f} MB")


if __name__ == "__main__":
    main()
