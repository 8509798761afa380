"""Findings from Nsight Compute's metrics (the counters pass), per op and line:

- gemm-without-tensor-cores: a matrix multiply whose tensor-core pipe stays nearly idle (fp32 GEMMs
  run on the FMA pipes unless TF32 is allowed; fp16/bf16 ones use tensor cores);
- memory-bound-slow: an op that does under one FLOP per DRAM byte yet moves data at a small fraction of
  DRAM bandwidth, in launches long enough that launch cost is not the explanation (strided or
  uncoalesced access, too little parallelism);
- register-limited: low achieved occupancy where registers are what caps blocks per SM.

The cost is the op's kernel time in the timeline (what fixing it could at most save), so these rank
with the other findings.
"""

from __future__ import annotations

import math

from tenprof.analyses.findings.context import Context
from tenprof.analyses.findings.model import Finding
from tenprof.analyses.kernels.counters import OperatorEntry, operators_report
from tenprof.analyses.op_kinds import GEMM_OPS
from tenprof.core.quantities import duration


def check(ctx: Context) -> list[Finding]:
    report = operators_report(ctx.profile, ctx.t.roofline())
    if report is None:
        return []
    total = sum(o.aggregated.time_ns for o in report.operators) or 1
    t = ctx.t
    found: list[Finding] = []
    for o in report.operators:
        mark = len(found)
        a = o.aggregated
        if a.time_ns < t.counters_min_share * total:
            continue
        seen = _seen(o, total)
        where = [o.line] if o.line else []
        # Each check needs the metric it judges: one the report did not measure is not 0%.
        tensor_pct, dram_pct = _measured(a.tensor_pipe_pct), _measured(a.dram_throughput_pct)
        if o.op in GEMM_OPS and tensor_pct is not None and tensor_pct < t.counters_max_tensor_pct:
            found.append(
                Finding(
                    id="gemm-without-tensor-cores",
                    title=f"{o.op} runs without tensor cores "
                    f"({duration(a.time_ns)}, {a.time_ns / total:.0%} of kernel time)",
                    cost_ns=a.time_ns,
                    seen=[*seen, f"tensor-core pipe busy {tensor_pct:.1f}% of peak"],
                    where=where,
                    why="A GEMM on the FMA pipes gets a fraction of the GPU's matrix throughput.",
                    fix="Run it in bf16/fp16 (torch.autocast), or allow TF32 for fp32 matmuls: "
                    "torch.set_float32_matmul_precision('high').",
                    numbers={"tensor_pipe_pct": tensor_pct, "time_ns": float(a.time_ns)},
                )
            )
        per_launch_us = a.time_ns / max(a.launches, 1) / 1e3
        intensity = _measured(a.arithmetic_intensity)
        if (
            intensity is not None
            and dram_pct is not None
            and intensity < 1.0
            and dram_pct < t.counters_max_dram_pct
            and per_launch_us >= t.counters_min_launch_us
            and a.verdict != "compute-bound"
        ):
            found.append(
                Finding(
                    id="memory-bound-slow",
                    title=f"{o.op} moves data at {dram_pct:.0f}% of DRAM bandwidth ({duration(a.time_ns)})",
                    cost_ns=a.time_ns,
                    seen=[*seen, f"{intensity:.2f} FLOP per DRAM byte, {per_launch_us:.0f} us per launch"],
                    where=where,
                    why="An op this light on arithmetic is limited by memory; far below the bandwidth peak, "
                    "its accesses are wasteful (strided, uncoalesced) or it has too little parallelism.",
                    fix="Check its inputs' layout (a transposed or sliced view read by an elementwise kernel: "
                    "make it contiguous once), fuse it with its neighbours (torch.compile), or batch the work.",
                    numbers={"dram_throughput_pct": dram_pct, "time_ns": float(a.time_ns)},
                )
            )
        limiters = {k.occupancy_limiter for k in o.kernels}
        theoretical = max(k.metrics.get("theoretical_occupancy_pct", 100.0) for k in o.kernels)
        if (
            (_measured(a.achieved_occupancy_pct) or 100.0) < t.counters_max_occupancy_pct
            and limiters == {"registers"}
            and theoretical < 2 * t.counters_max_occupancy_pct  # the registers, not a small grid, keep it low
            and a.verdict != "launch-bound"
        ):
            regs = max(int(k.metrics.get("registers_per_thread", 0)) for k in o.kernels)
            found.append(
                Finding(
                    id="register-limited",
                    title=f"{o.op}: occupancy {a.achieved_occupancy_pct or 0.0:.0f}%, capped by registers",
                    cost_ns=a.time_ns,
                    seen=[*seen, f"up to {regs} registers per thread"],
                    where=where,
                    why="Few warps per SM leave memory and pipeline latency exposed.",
                    fix="For your own kernels: fewer registers (launch bounds, smaller tiles); for library "
                    "kernels: a different shape or dtype often picks a different kernel.",
                    numbers={"achieved_occupancy_pct": a.achieved_occupancy_pct or 0.0, "registers": float(regs)},
                )
            )
        # One finding per op: its kernel time is the cost of each, so a second would count it twice. The
        # first (no tensor cores, then slow memory, then registers) is the one to fix first; the others
        # stay as evidence.
        if len(found) == mark:
            continue
        first, *more = found[mark:]
        for extra in more:
            first.seen.append(f"also: {extra.title}")
        del found[mark + 1 :]
    return found


def _seen(o: OperatorEntry, total: int) -> list[str]:
    a = o.aggregated
    return [
        f"{o.calls} calls, {a.launches} kernel launches, {duration(a.time_ns)} "
        f"({a.time_ns / total:.0%} of kernel time)",
        f"verdict: {a.verdict}; SM {_pct(a.sm_throughput_pct)}, DRAM {_pct(a.dram_throughput_pct)} of peak",
    ]


def _measured(value: float | None) -> float | None:
    """A metric's value, or None where the report did not measure it (missing, or NaN)."""
    return None if value is None or math.isnan(value) else float(value)


def _pct(value: float | None) -> str:
    """A percentage ncu measured, or '-' where the report did not measure it (never 0%)."""
    measured = _measured(value)
    return "-" if measured is None else f"{measured:.0f}%"
