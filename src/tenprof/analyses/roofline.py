"""The roofline verdict of a kernel (or an op) from Nsight Compute's measured percentages of peak.

ncu reports each unit's throughput as a percentage of that unit's peak on this GPU, measured by the
tool, so the ceilings are the card's own. Rules, first match wins (thresholds named below):
- launch-bound: the kernel is so short (< LAUNCH_NS) that launching it costs about as much as running it;
- compute-bound: the busiest SM pipeline (or the tensor-core pipe) is near its peak (>= BOUND_PCT) and
  busier than memory;
- memory-bound: the busiest memory unit is near its peak and busier than the SM;
- occupancy-bound: neither is near peak and fewer than LOW_OCCUPANCY_PCT of the SM's warp slots were
  active (too few warps to hide latency), with what limits blocks per SM;
- latency-bound: neither is near peak though warps were available (dependencies, synchronisation).
"""

from __future__ import annotations

import math

LAUNCH_NS = 5_000.0
BOUND_PCT = 60.0
LOW_OCCUPANCY_PCT = 30.0
LIMITERS = ("registers", "shared_mem", "warps", "blocks")


def verdict(duration_ns: float, sm_pct: float, memory_pct: float, tensor_pct: float, occupancy_pct: float) -> str:
    sm = max(_num(sm_pct), _num(tensor_pct))
    mem = _num(memory_pct)
    if _num(duration_ns) < LAUNCH_NS:
        return "launch-bound"
    if sm >= BOUND_PCT and sm >= mem:
        return "compute-bound"
    if mem >= BOUND_PCT:
        return "memory-bound"
    if _num(occupancy_pct) < LOW_OCCUPANCY_PCT:
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
