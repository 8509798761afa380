"""cold-start: the first step is much slower than the others (lazy module loading, cuBLAS/cuDNN
handles and heuristics, allocator growth), so a profile or a timing that includes it misleads.

A recording judged as one pass (no steps marked, no loop to infer: one forward pass wrapped in a
profiler) has no other step to compare with; there the one-time costs that show are the kernel launches
of a millisecond or more while the GPU idles (the step decomposition's `slow_launch_calls`, in its `cuda_api`
part): each loads its kernel's module on first use. Where they hold `cold_start.min_pass_share` of the
pass, the finding is a cost of that pass (not a one-off beside a steady state, which the recording lacks),
charged from the GPU's idle time before idle-gaps (`findings.causes`)."""

from __future__ import annotations

from collections import Counter

import numpy as np

from tenprof.analyses.findings.context import Context
from tenprof.analyses.findings.model import Finding
from tenprof.analyses.timeline.step_time import SLOW_LAUNCH_NS, slow_launch_calls
from tenprof.core.intervals import coverage
from tenprof.core.quantities import duration


def check(ctx: Context) -> list[Finding]:
    if ctx.all_step_numbers[0] < 0:
        return _one_pass(ctx)
    if len(ctx.all_step_start) < 3:
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


def _one_pass(ctx: Context) -> list[Finding]:
    """The first uses' module loads in a recording judged as one pass (see the module's docstring)."""
    if not ctx.profile.has_gpu:
        return []
    window = int(ctx.step_end[0] - ctx.step_start[0])
    slow = np.flatnonzero(slow_launch_calls(ctx.profile))
    # the GPU's idle time in each, inside the pass (the decomposition's part holds the host's threads' only)
    idle_in = coverage(*ctx.parts["cuda_api"], ctx.profile.column("api_calls", "start_ns")[slow],
                       ctx.profile.column("api_calls", "end_ns")[slow])  # fmt: skip
    cost = int(idle_in.sum())
    if window <= 0 or cost < ctx.t.cold_start_min_pass_share * window:
        return []
    slow = slow[idle_in > 0]
    durations = ctx.profile.column("api_calls", "duration_ns")[slow]
    slow, durations = slow[np.argsort(-durations, kind="stable")], np.sort(durations)[::-1]
    names, ops = ctx.profile.strings("api_calls", "name"), ctx.profile.column("api_calls", "op_id")[slow]
    slowest = [
        # an op's name up to its template arguments (a kernel launched outside any aten op is named by it)
        f"{names.at(int(i))} {duration(int(d))}" + (f" in {ctx.op_name(int(op)).partition('<')[0]}" if op >= 0 else "")
        for i, d, op in zip(slow[:3].tolist(), durations[:3].tolist(), ops[:3].tolist(), strict=True)
    ]
    share = cost / window
    return [
        Finding(
            id="cold-start",
            title=f"Cold start: {100 * share:.0f}% of the recorded pass is first-use start-up "
            f"({duration(cost)} in kernel launches that load their modules)",
            cost_ns=cost,
            seen=[
                f"{len(slow)} kernel launch(es) of {duration(SLOW_LAUNCH_NS)} or more held the GPU "
                f"idle {duration(cost)}, {100 * share:.0f}% of the {duration(window)} judged as one pass (no steps "
                "marked, no loop found); a launch takes microseconds once its kernel is loaded",
                "slowest: " + ", ".join(slowest),
            ],
            where=ctx.where(ops[ops >= 0].astype(np.int64), durations[ops >= 0].astype(np.int64)),
            why="A pass recorded cold pays what only the first one does: the first launch of each kernel loads its "
            "module (CUDA's lazy loading), and libraries such as cuDNN and cuBLAS start up. Every later pass "
            "skips this, so the recording describes start-up more than the work.",
            fix="Run the pass once before the one you record or time (a torch.profiler schedule with warmup=1, or "
            "`tenprof run` with tenprof.step() per pass). If the first call's latency matters (a server's first "
            "request), load the modules at start-up with CUDA_MODULE_LOADING=EAGER or send a warm-up request.",
            numbers={"first_use_ns": float(cost), "window_ns": float(window), "share": share},
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
