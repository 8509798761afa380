"""slow-step: a step in the middle of the run that took several times the typical step (a library
loaded on first use, a one-off evaluation, a checkpoint written, a garbage collection): one-off costs
that averages and per-step numbers would spread over every step. The analysed steps leave these out
(`Context`); this check says what each one held that a typical step does not: the ops, CUDA calls and
GPU work beyond their per-step average, with the lines that called them."""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from tenprof.analyses.findings.context import I64, Context
from tenprof.analyses.findings.model import Finding
from tenprof.core.quantities import duration


def check(ctx: Context) -> list[Finding]:
    numbers, starts, ends = ctx.slow_steps
    if len(numbers) == 0:
        return []
    # each step's own time: a step that waited for the earlier steps' queued GPU work is not charged it
    typical, took = ctx.slow_steps_own_ns
    excess = took - typical
    worst = int(np.argmax(excess))
    lo, hi = int(starts[worst]), int(ends[worst])
    ops_beyond, op_ids = _ops_beyond_typical(ctx, lo, hi)
    seen = [
        f"step {int(n)} took {duration(int(t))}, {t / typical:.0f}x the median {duration(typical)} of the "
        f"{ctx.step_count} analysed steps"
        for n, t in zip(numbers.tolist(), took.tolist(), strict=True)
    ][:3]
    if ops_beyond:
        seen.append(f"in step {int(numbers[worst])}, beyond a typical step's: " + ", ".join(ops_beyond))
    calls = _calls_beyond_typical(ctx, lo, hi)
    if calls:
        seen.append("CUDA calls beyond a typical step's: " + ", ".join(calls))
    gpu = _gpu_beyond_typical(ctx, lo, hi)
    if gpu:
        seen.append(gpu)
    title = (
        f"Step {int(numbers[0])} took {took[0] / typical:.0f}x the median step: a one-off stall of "
        f"{duration(int(excess[0]))}"
        if len(numbers) == 1
        else f"{len(numbers)} steps took {min(took) / typical:.0f}x or more the median step: "
        f"{duration(int(excess.sum()))} more in all"
    )
    return [
        Finding(
            id="slow-step",
            title=title,
            cost_ns=int(excess.sum()),
            seen=seen,
            where=ctx.where(op_ids),
            why="A step far slower than the others pays a cost the others do not (first use of a library or a "
            "kernel, an evaluation, a checkpoint, memory growth): it is not a cost of every step, so it is "
            "reported here and kept out of the per-step findings.",
            fix="If it is start-up work paid late (a library or kernel used for the first time), warm it up before "
            "the loop; if it recurs (evaluation, checkpointing), run it less often or overlap it; when "
            "measuring, leave such steps out (`tenprof report --steps`).",
            numbers={
                "slow_steps": float(len(numbers)),
                "median_step_ns": typical,
                "slowest_step_ns": float(took.max()),
                "excess_ns": float(excess.sum()),
            },
            once=len(numbers) == 1,
        )
    ]


def _ops_beyond_typical(ctx: Context, lo: int, hi: int) -> tuple[list[str], I64]:
    """The ops whose CPU self time in [lo, hi) exceeds their average per analysed step most (keyed by
    op and Python line), as text, and for each the op in the window that took longest."""
    ops = ctx.profile.table("ops")
    start = ops.column("start_ns").to_numpy()
    own = ops.column("self_duration_ns").to_numpy()
    names = ctx.op_names()
    frames = ops.column("frame_id").to_numpy()
    in_steps = ctx.in_steps(start)
    usual: dict[tuple[str, int], float] = defaultdict(float)
    for i in np.flatnonzero(in_steps).tolist():
        usual[(names[i], int(frames[i]))] += float(own[i]) / max(ctx.step_count, 1)
    here: dict[tuple[str, int], float] = defaultdict(float)
    longest: dict[tuple[str, int], int] = {}
    for i in np.flatnonzero((start >= lo) & (start < hi)).tolist():
        key = (names[i], int(frames[i]))
        here[key] += float(own[i])
        if key not in longest or own[i] > own[longest[key]]:
            longest[key] = i
    beyond = sorted(((v - usual[k], k) for k, v in here.items() if v > usual[k]), reverse=True)[:3]
    text = [f"{k[0]} {duration(int(d))}" for d, k in beyond]
    return text, np.array([longest[k] for _, k in beyond], dtype=np.int64)


def _calls_beyond_typical(ctx: Context, lo: int, hi: int) -> list[str]:
    api = ctx.profile.table("api_calls")
    start = api.column("start_ns").to_numpy()
    took = api.column("duration_ns").to_numpy()
    names = ctx.profile.strings("api_calls", "name").rows()
    usual: dict[str, float] = defaultdict(float)
    for i in np.flatnonzero(ctx.in_steps(start)).tolist():
        usual[names[i]] += float(took[i]) / max(ctx.step_count, 1)
    here: dict[str, float] = defaultdict(float)
    for i in np.flatnonzero((start >= lo) & (start < hi)).tolist():
        here[names[i]] += float(took[i])
    beyond = sorted(((v - usual[n], n) for n, v in here.items() if v > usual[n]), reverse=True)[:3]
    return [f"{n} {duration(int(d))}" for d, n in beyond if d >= 1000]


def _gpu_beyond_typical(ctx: Context, lo: int, hi: int) -> str:
    """The kernel time launched in [lo, hi) against a typical step's, when it is more."""
    k = ctx.profile.table("kernels")
    launched = ctx.kernel_launch_ns
    here = int(k.column("duration_ns").to_numpy()[(launched >= lo) & (launched < hi)].sum())
    usual = ctx.steps_kernel_ns / max(ctx.step_count, 1)
    if here <= 1.5 * usual:
        return ""
    return f"it launched {duration(here)} of GPU work against {duration(usual)} in a typical step"
