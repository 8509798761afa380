"""`tenprof import-ncu`: an Nsight Compute report the user made -> a profile.

Its metrics become a counters pass (what tenprof asks for and the report lacks reads as missing); if
the report has SourceCounters data (per-PC warp samples), a stalls pass too, with the blame shift.
Without tenprof's NVTX ranges the kernels have no op, and each counts once.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from tenprof.core.ncu_names import METRICS
from tenprof.core.rawfiles import COUNTERS_FILE, STALLS_FILE
from tenprof.importers.counters_import import build_counter_tables, write_gz_json
from tenprof.importers.formats.ncu_report_reader import read_report, read_source_counters
from tenprof.importers.stalls_import import build_stall_tables
from tenprof.importers.timeline_import import import_output
from tenprof.store.meta import Meta, PassStatus, write_meta
from tenprof.store.schema import Pass
from tenprof.store.writer import PassWriter


def _write_pass(
    out_dir: Path, name: str, raw_file: str, columns: dict[str, Any], tables: dict[str, Any]
) -> dict[str, int]:
    writer = PassWriter(out_dir, name)
    raw_dir = writer.tmp_dir / "raw"
    raw_dir.mkdir()
    try:
        write_gz_json(raw_dir / raw_file, columns)
        for table_name, table in tables.items():
            writer.write_table(table_name, table)
    except Exception:
        writer.abandon()
        raise
    writer.commit()
    return dict(writer.rows)


def import_ncu_report(report: Path, out_dir: Path, force: bool) -> Meta:
    with import_output(report, out_dir, force, "import-ncu", Pass.COUNTERS) as (path, meta):
        started = time.perf_counter()
        columns = read_report(report, list(METRICS))
        tables, result = build_counter_tables(columns, None, None)
        rows = _write_pass(path, Pass.COUNTERS, COUNTERS_FILE, columns, tables)
        meta.passes[Pass.COUNTERS] = PassStatus(
            state="complete",
            started_at=meta.created_at,
            duration_s=time.perf_counter() - started,
            reason="; ".join([*result.warnings, f"{result.replays} kernels in the report"]),
            rows=rows,
        )
        source = read_source_counters(report)
        if any(k["samples"] for k in source["kernels"]):
            stall_tables, stalls = build_stall_tables(source, None)
            meta.passes[Pass.STALLS] = PassStatus(
                state="complete",
                started_at=meta.created_at,
                reason="; ".join(
                    [*stalls.warnings, f"{stalls.kernels} kernels sampled, {stalls.samples:.0f} warp samples"]
                ),
                rows=_write_pass(path, Pass.STALLS, STALLS_FILE, source, stall_tables),
            )
        write_meta(path, meta)
    return meta
