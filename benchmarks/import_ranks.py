"""Importing a job's many ranks: `tenprof import FOLDER` in local processes against the same on a 2-worker
Dask cluster of this machine (`--scheduler ADDRESS`), then the merged report made here and on the cluster;
wall time, the workers' peak memory, and whether the planted clock shifts and straggler are found.

    python benchmarks/import_ranks.py --source tests/data/corpus_traces/ddp_no_sync.json.gz --ranks 256,1024 \
        --keep-steps 1 --workdir /tmp/import_ranks

The ranks are copies of one real rank's trace (rank 0 of a 2-GPU DDP job), cut to its first
`--keep-steps` steps: rank r's clock is moved by a planted shift (uniform in +-500 us, so larger than one
host's 50 us and found), and one rank (the middle one) arrives late at every collective (its NCCL kernels
start 80% of their duration later and end when they did). Each import runs in its own process; the
cluster is started before its timing and its workers are the ones measured.
"""

from __future__ import annotations

import argparse
import gzip
import json
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np


def _cut(trace: dict[str, Any], steps: int) -> dict[str, Any]:
    """The trace's events within its first `steps` ProfilerStep ranges (all of it where it has fewer)."""
    steps_of = [e for e in trace["traceEvents"] if str(e.get("name", "")).startswith("ProfilerStep#")]
    marks = sorted((e["ts"], e["ts"] + e["dur"]) for e in steps_of)
    if len(marks) <= steps:
        return trace
    end = marks[steps - 1][1]
    kept = [e for e in trace["traceEvents"] if not isinstance(e.get("ts"), int | float) or e["ts"] <= end]
    return dict(trace, traceEvents=kept)


def _build(source: Path, folder: Path, ranks: int, steps: int, seed: int) -> tuple[dict[int, float], int]:
    """The rank copies; returns the planted shifts (us) and the straggler."""
    trace = _cut(json.loads(gzip.decompress(source.read_bytes())), steps)
    shifts = {r: float(s) for r, s in enumerate(np.random.default_rng(seed).uniform(-500, 500, ranks))}
    shifts[0] = 0.0
    straggler = ranks // 2
    folder.mkdir(parents=True)
    for rank in range(ranks):
        events = []
        for e in trace["traceEvents"]:
            if not isinstance(e.get("ts"), int | float):
                events.append(e)
                continue
            moved = dict(e, ts=e["ts"] + shifts[rank])
            if rank == straggler and e.get("cat") == "kernel" and str(e.get("name", "")).startswith("nccl"):
                late = 0.8 * e.get("dur", 0.0)  # arrives late, ends with the others
                moved.update(ts=moved["ts"] + late, dur=e["dur"] - late)
            events.append(moved)
        info = dict(trace.get("distributedInfo", {}), rank=rank, world_size=ranks)
        body = json.dumps(dict(trace, traceEvents=events, distributedInfo=info)).encode()
        (folder / f"rank{rank:05d}.json.gz").write_bytes(gzip.compress(body, 1))
    return shifts, straggler


def _timed(command: list[str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, check=False)
    took = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"{' '.join(command)} failed: {done.stderr.decode()[-2000:]}")
    return took


def _worker_peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--source", type=Path, required=True)
    parser.add_argument("--ranks", default="256")
    parser.add_argument("--keep-steps", type=int, default=1)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/import_ranks"))
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    from distributed import Client, LocalCluster

    tenprof = [sys.executable, "-m", "tenprof"]
    for count in (int(n) for n in args.ranks.split(",")):
        work = args.workdir / str(count)
        shutil.rmtree(work, ignore_errors=True)
        shifts, straggler = _build(args.source, work / "traces", count, args.keep_steps, args.seed)
        size = sum(p.stat().st_size for p in (work / "traces").iterdir())
        local = _timed([*tenprof, "import", str(work / "traces"), "-o", str(work / "local"), "--quiet"])
        with (
            LocalCluster(
                n_workers=args.workers, threads_per_worker=1, processes=True, dashboard_address=None
            ) as cluster,
            Client(cluster) as client,
        ):
            on_dask = _timed(
                [*tenprof, "import", str(work / "traces"), "-o", str(work / "dask"), "--quiet", "--scheduler",
                 cluster.scheduler_address]
            )  # fmt: skip
            peaks = sorted(client.run(_worker_peak_mb).values())
            started = time.perf_counter()
            subprocess.run(
                [*tenprof, "report", str(work / "dask"), "--json", "--scheduler", cluster.scheduler_address],
                capture_output=True,
                check=True,
            )
            merged_on_dask_s = time.perf_counter() - started
        started = time.perf_counter()
        report = subprocess.run([*tenprof, "report", str(work / "dask"), "--json"], capture_output=True, check=True)
        merged_s = time.perf_counter() - started
        merged = json.loads(report.stdout)
        found = {r["rank"]: r["clock_shift_ns"] for r in merged["ranks"]}
        errors_us = [abs(found[r] / 1e3 + shifts[r]) for r in found]
        (group,) = merged["arrivals"]
        print(
            json.dumps(
                {
                    "ranks": count,
                    "trace_mb_gz": round(size / 1e6, 1),
                    "local_processes_s": round(local, 1),
                    "dask_s": round(on_dask, 1),
                    "dask_workers": args.workers,
                    "worker_peak_rss_mb": [round(p) for p in peaks],
                    "merged_report_s": round(merged_s, 1),
                    "merged_report_on_dask_s": round(merged_on_dask_s, 1),
                    "clock_shift_error_us_max": round(max(errors_us), 2),
                    "straggler_planted": straggler,
                    "most_often_last": group["most_often_last"],
                    "straggler_last_share": next(r["last_share"] for r in group["ranks"] if r["rank"] == straggler),
                }
            ),
            flush=True,
        )
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
