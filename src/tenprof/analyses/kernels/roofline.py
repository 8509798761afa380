"""The roofline verdict of a kernel (or an op) from Nsight Compute's measured percentages of peak.

ncu reports each unit's throughput as a percentage of that unit's peak on this GPU, measured by the
tool, so the ceilings are the card's own. Rules, first match wins (thresholds in `RooflineLimits`):
- launch-bound: the kernel is so short (< launch_ns) that launching it costs about as much as running it;
- compute-bound: the busiest SM pipeline (or the tensor-core pipe) is near its peak (>= bound_pct) and
  busier than memory;
- memory-bound: the busiest memory unit is near its peak and busier than the SM;
- occupancy-bound: neither is near peak and fewer than low_occupancy_pct of the SM's warp slots were
  active (too few warps to hide latency), with what limits blocks per SM;
- latency-bound: neither is near peak though warps were available (dependencies, synchronisation).
A metric the report did not measure is not taken as zero: without the SM and memory throughputs there is
no verdict ("not measured"), and without the achieved occupancy a kernel below both peaks is
"below peak" (occupancy not measured), not occupancy-bound.

These are pure functions of the metrics: reports call them when they are made, so changing a limit
changes the verdicts of profiles already recorded (nothing here is stored in a profile).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

LIMITERS = ("registers", "shared_mem", "warps", "blocks")


@dataclass(frozen=True)
class RooflineLimits:
    launch_ns: float = 5_000.0
    """shorter kernels are launch-bound"""
    bound_pct: float = 60.0
    """a unit this busy (% of its peak) is near its peak"""
    low_occupancy_pct: float = 30.0
    """fewer active warps than this (% of the SM's slots) cannot hide latency"""


DEFAULT_LIMITS = RooflineLimits()


def verdict(
    duration_ns: float | None,
    sm_pct: float | None,
    memory_pct: float | None,
    tensor_pct: float | None,
    occupancy_pct: float | None,
    limits: RooflineLimits = DEFAULT_LIMITS,
) -> str:
    if _num(duration_ns, math.nan) < limits.launch_ns:
        return "launch-bound"
    if math.isnan(_num(sm_pct, math.nan)) and math.isnan(_num(memory_pct, math.nan)):
        return "not measured"
    sm = max(_num(sm_pct), _num(tensor_pct))
    mem = _num(memory_pct)
    if sm >= limits.bound_pct and sm >= mem:
        return "compute-bound"
    if mem >= limits.bound_pct:
        return "memory-bound"
    occupancy = _num(occupancy_pct, math.nan)
    if math.isnan(occupancy):
        return "below peak"
    if occupancy < limits.low_occupancy_pct:
        return "occupancy-bound"
    return "latency-bound"


def occupancy_limiter(limits: dict[str, float]) -> str:
    """The launch limit that caps blocks per SM lowest (ncu's launch__occupancy_limit_*), "" if none."""
    known = {k: v for k, v in limits.items() if k in LIMITERS and not math.isnan(_num(v, math.nan))}
    if not known:
        return ""
    low = min(known.values())
    return next(k for k in LIMITERS if known.get(k) == low)


def _num(value: float | None, default: float = 0.0) -> float:
    if value is None:
        return default
    try:
        number = float(value)
    except (TypeError, ValueError):
        return default
    return default if math.isnan(number) else number
