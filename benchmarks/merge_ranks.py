"""Cost of merging per-rank profiles: wall time and peak memory of `tenprof report OUT` (the per-rank
summaries streamed one rank at a time, and the cross-rank kernel tally in DuckDB) for 2 real ranks and
for many synthetic ranks made from them.

    python benchmarks/merge_ranks.py --source tests/data/ranks/slowed --ranks 2,16,64,256 --workdir /tmp/merge

Synthetic rank i is a copy of real rank i % 2 whose kernel and step times are scaled by a factor drawn
around 1 (+-5%), so every rank differs; unchanged tables are hard links. Each size is measured in a
fresh process (peak RSS from getrusage).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

MEASURE = """
import json, resource, sys, time
from pathlib import Path
from tenprof.analyses.compare.ranks import ranks_report
from tenprof.report.ranks import kernels_across_ranks
out = Path(sys.argv[1])
t = time.perf_counter()
report = ranks_report(out)
kernels = kernels_across_ranks(out)
elapsed = time.perf_counter() - t
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"ranks": len(report.ranks), "seconds": elapsed, "stragglers": len(report.stragglers),
                  "kernel_rows": len(kernels), "peak_rss_mb": peak}))
"""


def _scaled(table: pa.Table, factor: float, columns: tuple[str, str]) -> pa.Table:
    start, end = (table.column(c).to_numpy() for c in columns)
    base = int(start.min()) if len(start) else 0
    new_start = base + ((start - base) * factor).astype(np.int64)
    new_end = base + ((end - base) * factor).astype(np.int64)
    table = table.set_column(table.schema.get_field_index(columns[0]), columns[0], pa.array(new_start))
    table = table.set_column(table.schema.get_field_index(columns[1]), columns[1], pa.array(new_end))
    if "duration_ns" in table.column_names:
        table = table.set_column(
            table.schema.get_field_index("duration_ns"), "duration_ns", pa.array(new_end - new_start)
        )
    return table


def make_ranks(source: Path, count: int, target: Path, seed: int = 0) -> None:
    real = sorted(p for p in source.glob("rank[0-9]*") if (p / "meta.json").exists())
    rng = np.random.default_rng(seed)
    if target.exists():
        shutil.rmtree(target)
    for i in range(count):
        src = real[i % len(real)]
        dst = target / f"rank{i:05d}"
        (dst / "timeline").mkdir(parents=True)
        meta = json.loads((src / "meta.json").read_text())
        meta["rank"], meta["world_size"] = i, count
        (dst / "meta.json").write_text(json.dumps(meta))
        factor = float(rng.normal(1.0, 0.05)) if i >= len(real) else 1.0
        for table in (src / "timeline").glob("*.parquet"):
            if table.stem in ("kernels", "steps") and factor != 1.0:
                pq.write_table(
                    _scaled(pq.read_table(table), factor, ("start_ns", "end_ns")), dst / "timeline" / table.name
                )
            else:
                os.link(table, dst / "timeline" / table.name)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--source", default="tests/data/ranks/slowed")
    parser.add_argument("--ranks", default="2,16,64,256")
    parser.add_argument("--workdir", default="/tmp/tenprof-merge")
    args = parser.parse_args()
    rows = []
    for count in (int(x) for x in args.ranks.split(",")):
        target = Path(args.workdir) / f"n{count}"
        make_ranks(Path(args.source), count, target)
        done = subprocess.run([sys.executable, "-c", MEASURE, str(target)], capture_output=True, text=True, check=True)
        row = json.loads(done.stdout.strip().splitlines()[-1])
        rows.append(row)
        print(
            f"{row['ranks']:5d} ranks  {row['seconds']:8.2f} s  {row['seconds'] / row['ranks'] * 1e3:7.1f} ms/rank  "
            f"peak RSS {row['peak_rss_mb']:7.1f} MB  stragglers {row['stragglers']}",
            flush=True,
        )
        shutil.rmtree(target)
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
