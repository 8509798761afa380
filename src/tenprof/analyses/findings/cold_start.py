"""cold-start: the first step is much slower than the others (lazy module loading, cuBLAS/cuDNN
handles and heuristics, allocator growth), so a profile or a timing that includes it misleads."""

from __future__ import annotations

from collections import Counter

import numpy as np

from tenprof.analyses.findings.context import Context
from tenprof.analyses.findings.model import Finding
from tenprof.core.quantities import duration


def check(ctx: Context) -> list[Finding]:
    if len(ctx.all_step_start) < 3 or ctx.all_step_numbers[0] < 0:
        return []
    d = ctx.all_step_end - ctx.all_step_start
    first, median_rest = int(d[0]), float(np.median(d[1:]))
    if median_rest <= 0 or first < ctx.t.cold_start_min_ratio * median_rest:
        return []
    lo, hi = int(ctx.all_step_start[0]), int(ctx.all_step_end[0])
    api = ctx.profile.table("api_calls")
    a_start = api.column("start_ns").to_numpy()
    in_first = (a_start >= lo) & (a_start < hi)
    calls: Counter[str] = Counter()
    api_names = ctx.profile.strings("api_calls", "name")
    for name, dur in zip(
        [api_names.values[c] for c in api_names.codes[in_first].tolist()],
        api.column("duration_ns").to_numpy()[in_first].tolist(),
        strict=True,
    ):
        calls[name] += dur
    starts, _ = ctx.gpu_intervals
    first_gpu = starts[(starts >= lo) & (starts < hi)]
    to_first_kernel = int(first_gpu.min() - lo) if len(first_gpu) else hi - lo
    ops = ctx.profile.table("ops")
    o_start = ops.column("start_ns").to_numpy()
    o_in = np.flatnonzero((o_start >= lo) & (o_start < hi))
    self_ns = ops.column("self_duration_ns").to_numpy()
    slow = o_in[np.argsort(-self_ns[o_in])][:3]
    scope_gap = _slowest_scope_start(ctx, lo, hi, o_start, ops.column("thread_id").to_numpy())
    seen = [
        f"step {int(ctx.all_step_numbers[0])} took {duration(first)}, {first / median_rest:.1f}x the median "
        f"{duration(median_rest)} of the other {len(d) - 1}",
    ]
    if ctx.profile.has_gpu:
        seen.append(f"{duration(to_first_kernel)} passed before its first GPU work")
    if scope_gap:
        seen.append(scope_gap)
    if calls:
        seen.append("slowest CUDA calls in it: " + ", ".join(f"{n} {duration(v)}" for n, v in calls.most_common(3)))
    if len(slow):
        seen.append(
            "slowest ops in it: " + ", ".join(f"{ctx.op_name(int(i))} {duration(int(self_ns[int(i)]))}" for i in slow)
        )
    return [
        Finding(
            id="cold-start",
            title=f"Cold start: the first step took {first / median_rest:.1f}x the median step",
            cost_ns=int(first - median_rest),
            seen=seen,
            where=ctx.where(slow.astype(np.int64)),
            why=_why(ctx.profile.has_gpu),
            fix="Warm up before measuring: record with `tenprof run --schedule wait=1,warmup=1,active=N`, or read "
            "an existing profile with `tenprof report --steps 1:`.",
            numbers={"first_step_ns": float(first), "median_step_ns": median_rest, "ratio": first / median_rest},
            once=True,
        )
    ]


def _why(gpu: bool) -> str:
    """The one-time costs a first step pays, of the device the run used."""
    costs = (
        "CUDA module loading, library handles and autotuning, allocator growth"
        if gpu
        else "imports and lazy initialisation, first-touch memory, thread pools starting, caches filling"
    )
    return (
        f"The first step pays one-time costs ({costs}). Averages and tallies that include it describe start-up, "
        "not the steady state."
    )


def _slowest_scope_start(ctx: Context, lo: int, hi: int, op_start: np.ndarray, op_thread: np.ndarray) -> str:
    """The scope of the first step that waited longest between opening and its first op."""
    scopes = ctx.profile.table("scopes")
    worst = (0, "")
    for name, tid, start, end in zip(
        scopes.column("name").to_pylist(),
        scopes.column("thread_id").to_pylist(),
        scopes.column("start_ns").to_pylist(),
        scopes.column("end_ns").to_pylist(),
        strict=True,
    ):
        if not lo <= start < hi:
            continue
        mine = op_start[(op_thread == tid) & (op_start >= start) & (op_start < end)]
        if len(mine) and int(mine.min()) - start > worst[0]:
            worst = (int(mine.min()) - start, name)
    if worst[0] < 1_000_000:  # under a millisecond is not worth a line
        return ""
    return f"scope {worst[1]!r} waited {duration(worst[0])} between opening and its first op"
