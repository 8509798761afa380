"""Hardware metrics per operator: each timeline kernel gets its replay's metrics (kernel_counters), and
kernels are summed per (aten op, user line).

Sums (bytes, FLOPs, instructions) are per launch times launches; percentages are averaged weighted by the
kernels' timeline time, so an op's throughput reads like one long kernel's; the op's verdict comes from
those weighted percentages (tenprof.analyses.kernels.roofline). Every verdict and occupancy limiter is computed
here, under the `RooflineLimits` the caller passes, from the stored metrics (tenprof.analyses.kernels.replays):
the profile stores none. Without a timeline pass, ops are the counters pass's own signatures and
launches are the signature's op count.

The JSON shape (`OperatorsReport`) follows the per-operator profile users of the Operator Profiler know:
`operators[]` with `kernels[]` and `aggregated{}`, `unattributed_kernels[]`, `warnings[]`.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

import numpy as np
from pydantic import BaseModel, Field

from tenprof.analyses.kernels.replays import judged_replays
from tenprof.analyses.kernels.roofline import DEFAULT_LIMITS, RooflineLimits, verdict
from tenprof.analyses.timeline.summary import OpLines
from tenprof.store.profile import Profile
from tenprof.store.schema import MATCH_CONFIDENCE, Pass

SUMMED = ("dram_read_bytes", "dram_write_bytes", "flops", "instructions")
AVERAGED = (
    "dram_throughput_pct",
    "memory_throughput_pct",
    "sm_throughput_pct",
    "tensor_pipe_pct",
    "achieved_occupancy_pct",
    "l1_hit_rate_pct",
    "l2_hit_rate_pct",
)
PER_KERNEL = (
    "duration_ns",
    *SUMMED,
    *AVERAGED,
    "theoretical_occupancy_pct",
    "arithmetic_intensity",
    "waves_per_sm",
    "registers_per_thread",
)


class KernelEntry(BaseModel):
    name: str
    grid_size: int
    block_size: int
    launches: int
    time_ns: int | None = Field(description="timeline time of these launches (null without a timeline pass)")
    replay_id: int = Field(description="the replay whose metrics they carry")
    method: str = Field(description="how the replay was matched: signature | op+launch | launch | replayed")
    confidence: str = Field(description="high | medium | low for matches; measured for the replay itself")
    verdict: str
    occupancy_limiter: str
    metrics: dict[str, float] = Field(description="per launch, from the replay")


class Aggregated(BaseModel):
    """Totals over an op's kernels; a metric no kernel's replay measured is None (null), never 0."""

    time_ns: int
    launches: int
    dram_bytes: float | None
    flops: float | None
    instructions: float | None
    arithmetic_intensity: float | None
    dram_throughput_pct: float | None
    memory_throughput_pct: float | None
    sm_throughput_pct: float | None
    tensor_pipe_pct: float | None
    achieved_occupancy_pct: float | None
    l1_hit_rate_pct: float | None
    l2_hit_rate_pct: float | None
    verdict: str


class OperatorEntry(BaseModel):
    op: str
    line: str
    calls: int
    kernels: list[KernelEntry]
    aggregated: Aggregated


class UnattributedKernel(BaseModel):
    name: str
    launches: int
    time_ns: int
    reason: str


class OperatorsReport(BaseModel):
    schema_version: int = 1
    operators: list[OperatorEntry] = Field(default_factory=list)
    unattributed_kernels: list[UnattributedKernel] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)


def _clean(value: Any) -> float:
    v = float(value) if value is not None else math.nan
    return v


def operators_report(profile: Profile, limits: RooflineLimits = DEFAULT_LIMITS) -> OperatorsReport | None:
    """The counters pass per (op, line); verdicts judged under `limits` (see the module docstring)."""
    if profile.table("kernel_metrics").num_rows == 0:
        return None
    rows = judged_replays(profile, limits)
    status = profile.meta.passes.get(Pass.COUNTERS)
    warnings = [status.reason] if status is not None and status.reason else []
    links = profile.table("kernel_counters")
    if links.num_rows == 0:
        return _from_signatures(profile, rows, warnings, limits)
    kernels = profile.table("kernels")
    ops = profile.table("ops")
    op_of = kernels.column("op_id").to_numpy()
    duration = kernels.column("duration_ns").to_numpy()
    names = kernels.column("name").to_pylist()
    replay = links.column("replay_id").to_numpy()
    method = links.column("method").to_pylist()
    op_names = ops.column("name").to_pylist()
    line_of = OpLines(profile)

    autotuning = ops.column("is_autotuning").to_numpy()
    compiled = {
        r["kernel"]: (f"compiled: {r['aten_ops']}", (r["lines"] or "").split(";")[0])
        for r in profile.table("compiled_kernels").to_pylist()
        if r["aten_ops"]
    }

    def key_of(op: int) -> tuple[str, str]:
        """A generated kernel's record (its launch, named after it) stands for the aten ops it fuses."""
        if op < 0:
            return ("(no op)", "")
        fused = compiled.get(op_names[op])
        if fused is not None:
            return (fused[0], fused[1] or line_of(op))
        return (op_names[op], line_of(op))

    groups: dict[tuple[str, str], dict[tuple[int, str], list[int]]] = defaultdict(lambda: defaultdict(list))
    calls: dict[tuple[str, str], set[int]] = defaultdict(set)
    unattributed: dict[tuple[str, str], list[int]] = defaultdict(list)
    for j in range(kernels.num_rows):
        op = int(op_of[j])
        if op >= 0 and autotuning[op]:  # not the program's launch, even where its config won and matched
            reason = "a benchmark launch of torch.compile's autotuning (only the launch after it is replayed)"
            unattributed[(names[j], reason)].append(j)
            continue
        if replay[j] < 0:
            reason = "no replay has this kernel name and launch configuration" + (
                "" if op >= 0 else " (it ran outside any aten op: compiled graph or extension)"
            )
            unattributed[(names[j], reason)].append(j)
            continue
        key = key_of(op)
        groups[key][(int(replay[j]), method[j])].append(j)
        calls[key].add(op)
    operators = []
    for key, by_replay in groups.items():
        entries = []
        for (rid, how), members in by_replay.items():
            entries.append(_kernel_entry(rows[rid], len(members), int(duration[members].sum()), how))
        entries.sort(key=lambda e: -(e.time_ns or 0))
        operators.append(
            OperatorEntry(
                op=key[0], line=key[1], calls=len(calls[key]), kernels=entries, aggregated=_aggregate(entries, limits)
            )
        )
    operators.sort(key=lambda o: -o.aggregated.time_ns)
    missing = [
        UnattributedKernel(name=name, launches=len(members), time_ns=int(duration[members].sum()), reason=reason)
        for (name, reason), members in unattributed.items()
    ]
    missing.sort(key=lambda u: -u.time_ns)
    return OperatorsReport(operators=operators, unattributed_kernels=missing, warnings=warnings)


def _from_signatures(
    profile: Profile, rows: dict[int, dict[str, Any]], warnings: list[str], limits: RooflineLimits
) -> OperatorsReport:
    """No timeline: each replay counts once per op instance of its signature."""
    sigs = {int(r["signature_id"]): r for r in profile.table("counter_signatures").to_pylist()}
    groups: dict[str, list[KernelEntry]] = defaultdict(list)
    call_count: dict[str, int] = defaultdict(int)
    for row in rows.values():
        sig = sigs.get(int(row["signature_id"]))
        launches = int(sig["count"]) if sig else 1
        # A report made without tenprof has no op per kernel: each kernel name stands on its own.
        key = str(row["op"]) or f"(no op) {row['name']}"
        groups[key].append(_kernel_entry(row, launches, None, "replayed"))
        if not sig:
            call_count[key] += 1
    for sig in sigs.values():
        call_count[str(sig["op"])] += int(sig["count"])
    operators = [
        OperatorEntry(
            op=op, line="", calls=call_count.get(op, 0), kernels=entries, aggregated=_aggregate(entries, limits)
        )
        for op, entries in groups.items()
    ]
    operators.sort(key=lambda o: -o.aggregated.time_ns)
    return OperatorsReport(operators=operators, warnings=warnings)


def _kernel_entry(row: dict[str, Any], launches: int, time_ns: int | None, how: str) -> KernelEntry:
    """`row`: a judged replay (judged_replays), its verdict and limiter computed, never read from the profile."""
    metrics = {m: _clean(row[m]) for m in PER_KERNEL}
    return KernelEntry(
        name=str(row["name"]),
        grid_size=int(row["grid_size"]),
        block_size=int(row["block_size"]),
        launches=launches,
        time_ns=time_ns,
        replay_id=int(row["replay_id"]),
        method=how,
        confidence=MATCH_CONFIDENCE.get(how, "measured"),
        verdict=str(row["verdict"]),
        occupancy_limiter=str(row["occupancy_limiter"]),
        metrics={k: v for k, v in metrics.items() if not math.isnan(v)},
    )


def _aggregate(entries: list[KernelEntry], limits: RooflineLimits) -> Aggregated:
    # Weight by timeline time; without one (all zero), by the replayed duration times launches.
    weights = np.array([e.time_ns or e.metrics.get("duration_ns", 0.0) * e.launches for e in entries], dtype=float)

    def total(*metrics: str) -> float | None:
        measured = [e for e in entries if any(m in e.metrics for m in metrics)]
        if not measured:
            return None
        return float(sum(e.metrics.get(m, 0.0) * e.launches for e in measured for m in metrics))

    def average(metric: str) -> float | None:
        values = np.array([e.metrics.get(metric, math.nan) for e in entries], dtype=float)
        ok = ~np.isnan(values) & (weights > 0)
        return float((values[ok] * weights[ok]).sum() / weights[ok].sum()) if ok.any() else None

    dram = total("dram_read_bytes", "dram_write_bytes")
    flops = total("flops")
    averaged = {m: average(m) for m in AVERAGED}
    time_ns = int(sum(e.time_ns or 0 for e in entries)) or int(
        sum(e.metrics.get("duration_ns", 0.0) * e.launches for e in entries)
    )
    launches = sum(e.launches for e in entries)
    return Aggregated(
        time_ns=time_ns,
        launches=launches,
        dram_bytes=dram,
        flops=flops,
        instructions=total("instructions"),
        arithmetic_intensity=flops / dram if flops is not None and dram else None,
        verdict=verdict(
            time_ns / max(launches, 1),
            averaged["sm_throughput_pct"],
            averaged["memory_throughput_pct"],
            averaged["tensor_pipe_pct"],
            averaged["achieved_occupancy_pct"],
            limits,
        ),
        **averaged,
    )
