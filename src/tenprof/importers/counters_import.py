"""Counters pass: the report's kernels (read by ncu_report_reader) -> tables, and their metrics given to
every timeline kernel that has the same signature.

Each replayed kernel ran inside the NVTX range `tp:<signature id>` the counters child pushed around an
op; the signature table names the op, its input shapes and dtypes. A timeline kernel gets a replay's
metrics when, in order of preference:
- `signature`: same kernel name, grid and block size, same op, and the op's tensor shapes agree;
- `op+launch`: same kernel name, grid, block and op (shapes differ or are unknown);
- `launch`: same kernel name, grid and block, another op.
Kernel names are compared by their function name (template arguments and parameters dropped), since
Kineto and ncu demangle the same symbol differently. Timeline kernels that match no replay keep
`replay_id = -1` and are listed by the report, never dropped.

The tables hold what ncu measured and how kernels matched, nothing judged: the roofline verdict and the
occupancy limiter are computed by the reports (tenprof.analyses.kernels.replays), so their limits can change
without importing again.
"""

from __future__ import annotations

import gzip
import math
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pyarrow as pa

from tenprof.core.kernel_names import base_name
from tenprof.core.ncu_names import KEEP_RANGE, METRICS, OP_RANGE_PREFIX
from tenprof.errors import TraceFormatError
from tenprof.store.schema import COUNTER_SIGNATURES, KERNEL_COUNTERS, KERNEL_METRICS, MATCH_CONFIDENCE, NCU_METRICS
from tenprof.store.writer import PassWriter


@dataclass
class CountersReport:
    replays: int = 0
    signatures: int = 0
    op_instances: int = 0
    matched_kernels: int = 0
    timeline_kernels: int = 0
    warnings: list[str] = field(default_factory=list)


def read_gz_json(path: Path) -> dict[str, Any]:
    try:
        data: dict[str, Any] = orjson.loads(gzip.decompress(path.read_bytes()))
    except (OSError, EOFError, zlib.error, orjson.JSONDecodeError) as exc:
        raise TraceFormatError(f"{path.name} is damaged ({exc.__class__.__name__})") from exc
    return data


def write_gz_json(path: Path, data: object) -> None:
    """A raw recording's plain columns as gzipped JSON (fast to write; read back with read_gz_json)."""
    path.write_bytes(gzip.compress(orjson.dumps(data), compresslevel=1))


def _signature_of(ranges: list[str]) -> int:
    for r in reversed(ranges):
        if r.startswith(OP_RANGE_PREFIX):
            try:
                return int(r[len(OP_RANGE_PREFIX) :])
            except ValueError:
                return -1
    return -1


def _metric(values: dict[str, Any], ncu_name: str) -> float:
    v = values.get(ncu_name)
    return float(v) if isinstance(v, (int, float)) else math.nan


def build_counter_tables(
    report_columns: dict[str, Any], signatures: dict[str, Any] | None, timeline: dict[str, pa.Table] | None
) -> tuple[dict[str, pa.Table], CountersReport]:
    k = report_columns["kernels"]
    n = len(k["replay_id"])
    sig_op: dict[int, str] = {}
    sig_shapes: dict[int, str] = {}
    if signatures:
        s = signatures["signatures"]
        for sid, op, shapes in zip(s["signature_id"], s["op"], s["shapes"], strict=True):
            sig_op[int(sid)] = str(op)
            sig_shapes[int(sid)] = orjson.dumps([x for x in shapes if x]).decode()
    by_column: dict[str, list[Any]] = {c: [] for c in KERNEL_METRICS.names}
    raw_rows: dict[str, list[Any]] = {"replay_id": [], "metric": [], "value": []}
    outside = 0
    for i in range(n):
        values: dict[str, Any] = k["metrics"][i]
        ranges: list[str] = k["nvtx"][i]
        if signatures is not None and KEEP_RANGE not in ranges:
            outside += 1
        sid = _signature_of(ranges)
        m = {col: _metric(values, name) for name, col in METRICS.items()}
        flops = 2 * m["ffma"] + m["fadd"] + m["fmul"] + 2 * m["hfma"] + m["hadd"] + m["hmul"]
        dram = m["dram_read_bytes"] + m["dram_write_bytes"]
        row = {
            "replay_id": int(k["replay_id"][i]),
            "name": base_name(str(k["name"][i])),
            "demangled": str(k["demangled"][i] or k["name"][i]),
            "signature_id": sid,
            "op": sig_op.get(sid, ""),
            "grid_size": _int(m["grid_size"]),
            "block_size": _int(m["block_size"]),
            "registers_per_thread": _int(m["registers_per_thread"]),
            "flops": flops,
            "arithmetic_intensity": flops / dram if dram > 0 else math.nan,
        }
        for col in KERNEL_METRICS.names:
            by_column[col].append(row[col] if col in row else m[col])
        for name, value in values.items():
            if isinstance(value, (int, float)):
                raw_rows["replay_id"].append(row["replay_id"])
                raw_rows["metric"].append(name)
                raw_rows["value"].append(float(value))
    metrics = pa.table(by_column, schema=KERNEL_METRICS)
    report = CountersReport(replays=n)
    if outside:
        report.warnings.append(f"{outside} profiled kernels ran outside tenprof's op ranges")
    if signatures:
        s = signatures["signatures"]
        sig_table = pa.table(
            {
                "signature_id": s["signature_id"],
                "op": s["op"],
                "shapes": [orjson.dumps(x).decode() for x in s["shapes"]],
                "dtypes": [orjson.dumps(x).decode() for x in s["dtypes"]],
                "first_op_seq": s["first_op_seq"],
                "count": s["count"],
            },
            schema=COUNTER_SIGNATURES,
        )
        report.signatures = sig_table.num_rows
        report.op_instances = int(signatures.get("op_count", 0))
    else:
        sig_table = COUNTER_SIGNATURES.empty_table()
    links = KERNEL_COUNTERS.empty_table()
    if timeline is not None and timeline["kernels"].num_rows:
        links = match_timeline(metrics, sig_shapes, timeline["kernels"], timeline["ops"])
        report.timeline_kernels = links.num_rows
        report.matched_kernels = int((links.column("replay_id").to_numpy() >= 0).sum())
        missing = report.timeline_kernels - report.matched_kernels
        benchmarks = sum(1 for m in links.column("method").to_pylist() if m == "autotuning")
        if missing > benchmarks:
            report.warnings.append(
                f"{missing - benchmarks} of {report.timeline_kernels} timeline kernels matched no replay"
                + (f" (and {benchmarks} autotuning benchmark launches, never replayed)" if benchmarks else "")
            )
    tables = {
        "kernel_metrics": metrics,
        "ncu_metrics": pa.table(raw_rows, schema=NCU_METRICS),
        "counter_signatures": sig_table,
        "kernel_counters": links,
    }
    return tables, report


def _int(value: float) -> int:
    return -1 if math.isnan(value) else int(value)


def match_timeline(metrics: pa.Table, sig_shapes: dict[int, str], kernels: pa.Table, ops: pa.Table) -> pa.Table:
    """Give each timeline kernel the replay with its signature (see the module docstring)."""
    by_full: dict[tuple[str, int, int, str], list[int]] = {}
    by_launch: dict[tuple[str, int, int], list[int]] = {}
    names = metrics.column("name").to_pylist()
    grids = metrics.column("grid_size").to_pylist()
    blocks = metrics.column("block_size").to_pylist()
    op_names = metrics.column("op").to_pylist()
    sig_ids = metrics.column("signature_id").to_pylist()
    for i, (name, grid, block, op) in enumerate(zip(names, grids, blocks, op_names, strict=True)):
        by_full.setdefault((name, grid, block, op), []).append(i)
        by_launch.setdefault((name, grid, block), []).append(i)
    op_name = ops.column("name").to_pylist()
    op_shapes = ops.column("input_shapes").to_pylist()
    replay_ids = metrics.column("replay_id").to_pylist()
    kid = kernels.column("kernel_id").to_numpy()
    grid = (
        kernels.column("grid_x").to_numpy() * kernels.column("grid_y").to_numpy() * kernels.column("grid_z").to_numpy()
    ).tolist()
    block = (
        kernels.column("block_x").to_numpy()
        * kernels.column("block_y").to_numpy()
        * kernels.column("block_z").to_numpy()
    ).tolist()
    kop = kernels.column("op_id").to_pylist()
    tuning = ops.column("is_autotuning").to_numpy()
    out_replay = np.full(len(kid), -1, dtype=np.int64)
    out_method: list[str] = []
    cache: dict[tuple[str, int, int, int], tuple[int, str]] = {}
    for j, full_name in enumerate(kernels.column("name").to_pylist()):
        short = base_name(full_name)
        op = kop[j]
        if op is not None and op >= 0 and tuning[op]:  # a benchmark launch, not one of the program's
            out_method.append("autotuning")
            continue
        name_of_op = op_name[op] if op is not None and op >= 0 else ""
        key = (short, grid[j], block[j], op if op is not None else -1)
        found = cache.get(key)
        if found is None:
            found = (-1, "none")
            candidates = by_full.get((short, grid[j], block[j], name_of_op), [])
            if candidates:
                shapes = _tensor_shapes(op_shapes[op]) if op is not None and op >= 0 else ""
                exact = [c for c in candidates if sig_shapes.get(sig_ids[c]) == shapes]
                found = (replay_ids[exact[0]], "signature") if exact else (replay_ids[candidates[0]], "op+launch")
            elif (short, grid[j], block[j]) in by_launch:
                found = (replay_ids[by_launch[(short, grid[j], block[j])][0]], "launch")
            cache[key] = found
        out_replay[j] = found[0]
        out_method.append(found[1])
    return pa.table(
        {
            "kernel_id": kid,
            "replay_id": out_replay,
            "method": out_method,
            "confidence": [MATCH_CONFIDENCE[m] for m in out_method],
        },
        schema=KERNEL_COUNTERS,
    )


def _tensor_shapes(kineto_shapes: str | None) -> str:
    """Kineto's `Input Dims` (non-tensor arguments as []) in the signature table's form."""
    if not kineto_shapes:
        return ""
    try:
        dims = orjson.loads(kineto_shapes)
    except orjson.JSONDecodeError:
        return ""
    flat: list[Any] = []
    for d in dims:
        if isinstance(d, list) and d and all(isinstance(x, list) for x in d):
            flat.extend(x for x in d if x)  # a tensor list argument
        elif isinstance(d, list) and d:
            flat.append(d)
    return orjson.dumps(flat).decode()


def expected_replays(kernels: pa.Table, ops: pa.Table) -> int:
    """Distinct (kernel name, grid, block, op, op input shapes) in a timeline: about what ncu will replay."""
    op_name = ops.column("name").to_pylist()
    op_shapes = ops.column("input_shapes").to_pylist()
    seen = set()
    for name, gx, gy, gz, bx, by, bz, op in zip(
        kernels.column("name").to_pylist(),
        kernels.column("grid_x").to_pylist(),
        kernels.column("grid_y").to_pylist(),
        kernels.column("grid_z").to_pylist(),
        kernels.column("block_x").to_pylist(),
        kernels.column("block_y").to_pylist(),
        kernels.column("block_z").to_pylist(),
        kernels.column("op_id").to_pylist(),
        strict=True,
    ):
        has_op = op is not None and op >= 0
        seen.add((name, gx, gy, gz, bx, by, bz, op_name[op] if has_op else "", op_shapes[op] if has_op else ""))
    return len(seen)


def build_counters_pass(
    writer: PassWriter, raw_report: Path, signatures: Path | None, timeline: dict[str, pa.Table] | None
) -> CountersReport:
    columns = read_gz_json(raw_report)
    sigs = read_gz_json(signatures) if signatures is not None and signatures.exists() else None
    tables, report = build_counter_tables(columns, sigs, timeline)
    for name, table in tables.items():
        writer.write_table(name, table)
    return report
