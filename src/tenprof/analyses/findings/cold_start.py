"""cold-start: the first step is much slower than the others (lazy module loading, cuBLAS/cuDNN
handles and heuristics, allocator growth), so a profile or a timing that includes it misleads.

A recording judged as one pass (no steps marked, no loop to infer: one forward pass wrapped in a
profiler) has no other step to compare with; there the one-time costs show as host time with the GPU idle
(the step decomposition's `cuda_api`, `allocator` and `dispatch` parts) in three kinds of first use
(`first_uses`): kernel launches of a millisecond or more (`slow_launch_calls`: each loads its kernel's module),
other CUDA calls of a millisecond or more but graph launches and allocations (attribute and occupancy queries, device
properties: a library setting up its kernels), and the first call of a dispatcher op (`aten::`, a library's
`ns::`; not a range that wraps others, such as a compiled region) that launches GPU work and took a millisecond or more
of host time, where it is the op's only call or ten times its later calls' median (a library's handles,
heuristics and engines: a ResNet-18's first cuDNN convolution took 141 ms against 32 us for its later ones,
its one addmm 56.6 ms, on an H200 in a public trace). Ops dispatch in microseconds; a recording of one pass
cannot tell a once-called op's start-up from its steady cost, so its fix is a second, warm pass, which can.
Where they hold `cold_start.min_pass_share` of the pass, the finding is a cost of that pass (not a one-off
beside a steady state, which the recording lacks), charged from the GPU's idle time before idle-gaps
(`findings.causes`)."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from tenprof.analyses.findings.context import Context
from tenprof.analyses.findings.model import Finding
from tenprof.analyses.timeline.critical_path import critical_path_windows
from tenprof.analyses.timeline.gpu_work_ops import ops_handing_gpu_work
from tenprof.analyses.timeline.step_time import ALLOCATOR_CALLS, SLOW_LAUNCH_NS, slow_launch_calls
from tenprof.core.intervals import coverage, merged
from tenprof.core.quantities import duration
from tenprof.store.profile import Profile

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]


def check(ctx: Context) -> list[Finding]:
    if ctx.all_step_numbers[0] < 0:
        return _one_pass(ctx)
    if len(ctx.all_step_start) < 3:
        return []
    d = _on_the_critical_path(ctx)
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


def _on_the_critical_path(ctx: Context) -> I64:
    """Each complete step's time as the step decomposition times it: a loop whose host runs ahead of the GPU is
    timed by its GPU work (its host windows would make every step but the first look instant). The first step
    has no step before it in the recording: where the recording began mid-run (a trace from step 15, not 0), its
    first kernel may wait behind work queued before it, which is not its own; that wait (from the launch to
    the start of the first kernel it launched) is taken off, down to its host window at least."""
    lo, hi = ctx.all_step_start, ctx.all_step_end
    start, end = critical_path_windows(ctx.profile, lo, hi, ctx.all_step_numbers)
    took = (end - start).astype(np.int64)
    # (step 0 is the program's first: nothing ran before it, and its first kernel's wait is its own start-up)
    if ctx.all_step_numbers[0] <= 0:
        return took
    launched = ctx.kernel_launch_ns
    mine = np.flatnonzero((launched >= lo[0]) & (launched < hi[0]))
    if len(mine):
        first = mine[np.argmin(launched[mine])]
        waited = max(0, int(ctx.profile.column("kernels", "start_ns")[first] - launched[first]))
        took[0] = max(int(hi[0] - lo[0]), int(took[0]) - waited)
    return took


# the decomposition's parts in which the host works with the GPU idle and a first use's start-up lands
FIRST_USE_PARTS = ("cuda_api", "allocator", "dispatch")
FIRST_CALL_RATIO = 10.0  # a first call this many times its op's later calls' median is its start-up
DISPATCHER_OP = re.compile(r"^\w+::\w")


@dataclass(frozen=True)
class FirstUses:
    """A pass's first uses: the slow CUDA calls' and first op calls' rows, and their union as intervals."""

    calls: I64  # api_calls rows of a millisecond or more (kernel launches and other calls)
    ops: I64  # ops rows: first calls of a millisecond or more (their only call, or 10x their later ones)
    later_ns: F64  # per row of `ops`: its later calls' median, NaN where it has none
    starts: I64
    ends: I64


def first_uses(profile: Profile) -> FirstUses:
    """The recording's first uses (see the module): slow CUDA calls, and slow first calls of ops that launch
    GPU work."""
    api = profile.table("api_calls")
    a_start, a_end = api.column("start_ns").to_numpy(), api.column("end_ns").to_numpy()
    # a graph launch hands the GPU a whole graph, and its host time is its own, every pass (slow_launch_calls);
    # an allocation's time grows with its size (allocator-churn's, or a pass's own growth, not a library's start)
    own_time = profile.strings("api_calls", "name").where(lambda n: "Graph" in n or n in ALLOCATOR_CALLS)
    calls = np.flatnonzero(~own_time & (api.column("duration_ns").to_numpy() >= SLOW_LAUNCH_NS))
    ops = profile.table("ops")
    o_start, o_end = ops.column("start_ns").to_numpy(), ops.column("end_ns").to_numpy()
    launching = ops_handing_gpu_work(profile)
    names = ops.column("name").to_numpy(zero_copy_only=False)
    chosen: list[int] = []
    later: list[float] = []
    took = o_end - o_start
    by_name: dict[str, list[int]] = {}
    for i in np.argsort(o_start, kind="stable").tolist():
        by_name.setdefault(str(names[i]), []).append(i)
    for name, rows in by_name.items():
        first = rows[0]
        # dispatcher ops only (aten::, torchvision::, a library's own): a range that wraps others (a compiled
        # region, the user's annotation) holds whatever ran inside it
        if not DISPATCHER_OP.match(name):
            continue
        if not launching[first] or took[first] < SLOW_LAUNCH_NS:
            continue
        rest = float(np.median(took[rows[1:]])) if len(rows) > 1 else float("nan")
        if np.isnan(rest) or took[first] >= FIRST_CALL_RATIO * rest:
            chosen.append(first)
            later.append(rest)
    op_rows = np.asarray(chosen, dtype=np.int64)
    starts, ends = merged(
        np.concatenate([a_start[calls], o_start[op_rows]]).astype(np.int64),
        np.concatenate([a_end[calls], o_end[op_rows]]).astype(np.int64),
    )
    return FirstUses(calls.astype(np.int64), op_rows, np.asarray(later, dtype=np.float64), starts, ends)


def _one_pass(ctx: Context) -> list[Finding]:
    """The first uses' start-up in a recording judged as one pass (see the module's docstring)."""
    if not ctx.profile.has_gpu:
        return []
    window = int(ctx.step_end[0] - ctx.step_start[0])
    uses = first_uses(ctx.profile)
    # the GPU's idle time in them, inside the pass (the decomposition's parts hold the host's threads' only)
    idle = [ctx.parts[part] for part in FIRST_USE_PARTS]
    idle_starts, idle_ends = np.concatenate([s for s, _ in idle]), np.concatenate([e for _, e in idle])
    cost = int(coverage(idle_starts, idle_ends, uses.starts, uses.ends).sum())
    if window <= 0 or cost < ctx.t.cold_start_min_pass_share * window:
        return []
    api_in = coverage(idle_starts, idle_ends, ctx.profile.column("api_calls", "start_ns")[uses.calls],
                      ctx.profile.column("api_calls", "end_ns")[uses.calls])  # fmt: skip
    calls = uses.calls[api_in > 0]
    # the first calls in the pass: set-up's before it (a model's .to() starting CUDA, 29.94 s ending before a
    # 12.84 s pass on a public trace) is not its cost, nor named as one
    o_start, o_end = ctx.profile.column("ops", "start_ns"), ctx.profile.column("ops", "end_ns")
    ops_in = (o_end[uses.ops] > ctx.step_start[0]) & (o_start[uses.ops] < ctx.step_end[0])
    first_ops, later_ns = uses.ops[ops_in], uses.later_ns[ops_in]
    durations = ctx.profile.column("api_calls", "duration_ns")[calls]
    calls, durations = calls[np.argsort(-durations, kind="stable")], np.sort(durations)[::-1]
    names, call_ops = ctx.profile.strings("api_calls", "name"), ctx.profile.column("api_calls", "op_id")[calls]
    slowest = [
        # an op's name up to its template arguments (a kernel launched outside any aten op is named by it)
        f"{names.at(int(i))} {duration(int(d))}" + (f" in {ctx.op_name(int(op)).partition('<')[0]}" if op >= 0 else "")
        for i, d, op in zip(calls[:3].tolist(), durations[:3].tolist(), call_ops[:3].tolist(), strict=True)
    ]
    share = cost / window
    launches = int(slow_launch_calls(ctx.profile)[calls].sum())
    seen = [
        f"{duration(cost)} of host time with the GPU idle went to first uses, {100 * share:.0f}% of the "
        f"{duration(window)} judged as one pass (no steps marked, no loop found): {launches} kernel launch(es) and "
        f"{len(calls) - launches} other CUDA call(s) of {duration(SLOW_LAUNCH_NS)} or more, and the first calls of "
        f"{len(first_ops)} op(s) of {duration(SLOW_LAUNCH_NS)} or more; a launch or a call takes microseconds once "
        "its kernel is loaded and its library started"
    ]
    if slowest:
        seen.append("slowest calls: " + ", ".join(slowest))
    # (an op begun before the pass, the first kernel's launch inside it, is named with its time in the pass)
    op_took = np.minimum(o_end[first_ops], ctx.step_end[0]) - np.maximum(o_start[first_ops], ctx.step_start[0])
    order = np.argsort(-op_took, kind="stable")[:3]
    if len(order):
        seen.append(
            "slowest first calls: "
            + ", ".join(
                f"{ctx.op_name(int(first_ops[k])).partition('<')[0]} {duration(int(op_took[k]))} "
                + ("(its only call)" if np.isnan(later_ns[k]) else f"(later {duration(int(later_ns[k]))})")
                for k in order.tolist()
            )
        )
    blamed = np.concatenate([call_ops[call_ops >= 0], first_ops]).astype(np.int64)
    weights = np.concatenate([durations[call_ops >= 0], op_took]).astype(np.int64)
    return [
        Finding(
            id="cold-start",
            title=f"Cold start: {100 * share:.0f}% of the recorded pass is first-use start-up "
            f"({duration(cost)} loading kernels and starting libraries)",
            cost_ns=cost,
            seen=seen,
            where=ctx.where(blamed, weights),
            why="A pass recorded cold pays what only the first one does: the first launch of each kernel loads its "
            "module (CUDA's lazy loading), and libraries such as cuDNN and cuBLAS start up (handles, heuristics, "
            "engines) on their first call. Every later pass skips this, so the recording describes start-up more "
            "than the work.",
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
