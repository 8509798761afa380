"""gpu-clocks-throttled: the GPU ran its kernels at a lowered SM clock during the analysed steps.

From the timeline pass's NVML samples (the gpu_samples table, every 50 ms): a sample counts when kernels
launched in the analysed steps were running on its GPU at its time (an idle GPU drops its clock, which
costs nothing), and it is throttled when the SM clock was below `MAX_CLOCK_RATIO` of the card's maximum
with a throttling reason active, or no reasons recorded. Idle, applications-clocks and display-clock
reasons are settings, not throttling: a clock they hold down is not reported. The finding fires when at
least `MIN_SHARE` of a GPU's busy samples were throttled; its evidence names the reasons, the share of
time, the lowest clock, the power against the limit and the temperature, and its fix follows the main
reason. Profiles without samples (older ones, runs without nvidia-ml-py or without a GPU) give nothing.

Its cost is the kernel time on the throttled GPU times the throttled share times the clock's mean
shortfall: what running those kernels at the full clock would save if they were bound by the SM clock
(memory-bound kernels lose less), so an upper bound.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from tenprof.analyses.findings.context import Context
from tenprof.analyses.findings.model import Finding
from tenprof.core.intervals import merged

MAX_CLOCK_RATIO = 0.9  # an SM clock below this share of its maximum is lowered
MIN_SHARE = 0.10  # ... in at least this share of the busy samples of a GPU
MIN_BUSY_SAMPLES = 3  # fewer busy samples than this say nothing (under 150 ms of kernels)

# NVML's clocks-event reason bits (nvmlClocksEventReason*): the ones that hold the clock down
THROTTLING = {
    0x4: "power cap",
    0x8: "hardware slowdown",
    0x10: "sync boost",
    0x20: "software thermal slowdown",
    0x40: "hardware thermal slowdown",
    0x80: "hardware power brake",
}
# ... and the ones that are settings or states, not throttling (idle, applications clocks, display clock)
# Idle, application clocks, display clock; and the power cap: dense kernels on a Hopper card run at the
# board's power limit with the clock below its maximum as a matter of course (a GEMM at 1.6-1.75 GHz of
# 1.98), and NVML's default limit is not recorded to tell a lowered one: not a fault to fix.
NOT_THROTTLING = 0x1 | 0x2 | 0x4 | 0x100

_FIXES = {
    "power cap": "The board reached its power limit, so the clock drops to stay under it: the kernels are "
    "power-bound. Check the limit with `nvidia-smi -q -d POWER` (a lowered `-pl` limit, or a shared power "
    "budget); where it may be raised, raise it. Otherwise do the same work for less energy: lower precision "
    "(bf16/fp8 matmuls), fewer redundant passes over memory (fusion, torch.compile).",
    "hardware slowdown": "The GPU asserted its hardware slowdown (too hot, or the power supply pulled the brake): "
    "check its cooling and power delivery with `nvidia-smi -q -d PERFORMANCE,TEMPERATURE,POWER`; this is the "
    "machine's problem, for its administrator.",
    "software thermal slowdown": "The driver lowered the clock to keep the GPU's temperature in range: improve the "
    "cooling (airflow, fans, the room or rack), or spread the load so the card can cool between bursts.",
    "hardware thermal slowdown": "The GPU is overheating and its hardware cut the clock: check its cooling now "
    "(fans, airflow, heatsink); the machine's administrator should look at it.",
    "hardware power brake": "The system's power supply asserted the external power brake: the machine cannot feed "
    "the GPU's load; its administrator should check the power supply.",
    "sync boost": "The clock is held to the slowest GPU of its sync-boost group: the group runs as fast as its "
    "slowest member; look at that GPU's clocks and reasons.",
    "unknown": "The clock stayed below its maximum while kernels ran, and NVML gave no reason: check "
    "`nvidia-smi -q -d CLOCK,PERFORMANCE` for locked or application clocks and for throttling.",
}


@dataclass(frozen=True)
class _Device:
    """What the samples say of one GPU over the analysed steps."""

    device: int
    busy: int  # samples taken while its kernels of the analysed steps ran
    throttled: npt.NDArray[np.intp]  # indices of the throttled ones into the gpu_samples table
    reasons: dict[str, int]  # throttling reason -> throttled samples it was active in
    kernel_ns: int  # its kernel time launched in the analysed steps
    shortfall: float  # the throttled samples' mean (1 - clock / maximum)
    ops: npt.NDArray[np.int64]  # the op of the kernel running at each throttled sample


def check(ctx: Context) -> list[Finding]:
    samples = ctx.profile.table("gpu_samples")
    kernels = ctx.profile.table("kernels")
    if samples.num_rows == 0 or kernels.num_rows == 0:
        return []
    found = [d for d in _devices(ctx) if d.busy >= MIN_BUSY_SAMPLES and len(d.throttled) >= MIN_SHARE * d.busy]
    if not found:
        return []
    return [_finding(ctx, found)]


def _floats(ctx: Context, column: str) -> npt.NDArray[np.float64]:
    """A column of gpu_samples as floats, NaN where it was not recorded (null)."""
    return np.asarray(ctx.profile.table("gpu_samples").column(column).to_numpy(zero_copy_only=False), dtype=np.float64)


def _devices(ctx: Context) -> list[_Device]:
    samples = ctx.profile.table("gpu_samples")
    ts = samples.column("ts_ns").to_numpy()
    device = samples.column("device").to_numpy()
    sm, top = _floats(ctx, "sm_clock_mhz"), _floats(ctx, "max_sm_clock_mhz")
    reasons = np.asarray(samples.column("clock_reasons").fill_null(-1).to_numpy(), dtype=np.int64)
    k = ctx.profile.table("kernels")
    k_device, k_start, k_end = (
        k.column("device").to_numpy(),
        k.column("start_ns").to_numpy(),
        k.column("end_ns").to_numpy(),
    )
    k_op, k_duration = k.column("op_id").to_numpy(), k.column("duration_ns").to_numpy()
    in_steps = ctx.kernels_in_steps
    lowered = (sm < MAX_CLOCK_RATIO * top) & (top > 0)  # NaN compares false: not recorded is not lowered
    throttling = (reasons < 0) | ((reasons & ~NOT_THROTTLING) != 0)
    out = []
    for d in np.unique(device).tolist():
        mine = np.flatnonzero((k_device == d) & in_steps)
        if not len(mine):
            continue
        mine = mine[np.argsort(k_start[mine], kind="stable")]
        lo, hi = merged(k_start[mine], k_end[mine])
        at = np.flatnonzero(device == d)
        block = np.searchsorted(lo, ts[at], side="right") - 1
        busy = at[(block >= 0) & (ts[at] < hi[np.clip(block, 0, None)])]
        throttled = busy[lowered[busy] & throttling[busy]]
        counts = {name: int(((reasons[throttled] & bit) != 0).sum()) for bit, name in THROTTLING.items()}
        named = {name: n for name, n in counts.items() if n}
        unknown = int((reasons[throttled] < 0).sum())
        if unknown:
            named["unknown"] = unknown
        # the kernel running at each throttled sample: the last one on the GPU to start before it
        running = mine[np.clip(np.searchsorted(k_start[mine], ts[throttled], side="right") - 1, 0, None)]
        out.append(
            _Device(
                device=int(d),
                busy=len(busy),
                throttled=throttled,
                reasons=named,
                kernel_ns=int(k_duration[mine].sum()),
                shortfall=float(np.mean(1.0 - sm[throttled] / top[throttled])) if len(throttled) else 0.0,
                ops=k_op[running].astype(np.int64),
            )
        )
    return out


def _finding(ctx: Context, devices: list[_Device]) -> Finding:
    sm, top = _floats(ctx, "sm_clock_mhz"), _floats(ctx, "max_sm_clock_mhz")
    power, limit, temperature = _floats(ctx, "power_w"), _floats(ctx, "power_limit_w"), _floats(ctx, "temperature_c")
    seen: list[str] = []
    cost = 0.0
    reasons: dict[str, int] = {}
    numbers: dict[str, float] = {}
    worst = max(devices, key=lambda d: len(d.throttled) / d.busy)
    for d in devices:
        share = len(d.throttled) / d.busy
        cost += d.kernel_ns * share * d.shortfall
        t = d.throttled
        lowest = int(t[np.argmin(sm[t])])
        seen.append(
            f"GPU {d.device}: SM clock below {MAX_CLOCK_RATIO:.0%} of its {top[lowest]:.0f} MHz maximum in "
            f"{len(t)} of {d.busy} samples taken while its kernels ran ({share:.0%} of the busy time, sampled "
            f"every 50 ms), lowest {sm[lowest]:.0f} MHz ({sm[lowest] / top[lowest]:.0%})"
        )
        said = ", ".join(f"{name} in {n / len(t):.0%}" for name, n in sorted(d.reasons.items(), key=lambda kv: -kv[1]))
        if said:
            seen.append(f"GPU {d.device} throttle reasons: {said} of those samples")
        if np.isfinite(power[t]).any():
            limit_said = f" of a {np.nanmax(limit[t]):.0f} W limit" if np.isfinite(limit[t]).any() else ""
            seen.append(
                f"GPU {d.device} power meanwhile: median {np.nanmedian(power[t]):.0f} W, peak "
                f"{np.nanmax(power[t]):.0f} W{limit_said}"
            )
        if np.isfinite(temperature[t]).any():
            seen.append(f"GPU {d.device} temperature meanwhile: up to {np.nanmax(temperature[t]):.0f} C")
        for name, n in d.reasons.items():
            reasons[name] = reasons.get(name, 0) + n
        if d is worst:
            numbers = {
                "device": float(d.device),
                "throttled_share": share,
                "busy_samples": float(d.busy),
                "throttled_samples": float(len(t)),
                "lowest_sm_clock_mhz": float(sm[lowest]),
                "max_sm_clock_mhz": float(top[lowest]),
                "power_w": float(np.nanmedian(power[t])) if np.isfinite(power[t]).any() else float("nan"),
                "power_limit_w": float(np.nanmax(limit[t])) if np.isfinite(limit[t]).any() else float("nan"),
                "temperature_c": float(np.nanmax(temperature[t]))
                if np.isfinite(temperature[t]).any()
                else float("nan"),
            }
    main = max(reasons, key=lambda name: reasons[name]) if reasons else "unknown"
    numbers["cost_ns"] = float(cost)
    numbers = {k: v for k, v in numbers.items() if np.isfinite(v)}
    ops = np.concatenate([d.ops for d in devices])
    return Finding(
        id="gpu-clocks-throttled",
        title=f"GPU clocks throttled during the recorded steps: {numbers['throttled_share']:.0%} of the busy time "
        f"on GPU {worst.device}, mostly {main}",
        cost_ns=int(cost),
        seen=seen,
        where=ctx.where(ops[ops >= 0]),
        why="A kernel bound by the SM's throughput runs slower in proportion to its clock: the same program takes "
        "longer than on a GPU at full clock, and timings vary with the card's temperature and power draw. The "
        "cost is at most the throttled kernel time times the clock's shortfall (memory-bound kernels lose less).",
        fix=_FIXES[main],
        numbers=numbers,
    )
