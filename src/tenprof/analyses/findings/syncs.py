"""sync-in-loop: host-device synchronizations inside steps (`.item()`, `.cpu()`, `print(tensor)`,
`nonzero`, explicit synchronize calls), with their Python lines and the GPU idle that follows each."""

from __future__ import annotations

from collections import Counter

import numpy as np

from tenprof.analyses.findings.context import I64, Context, per_step
from tenprof.analyses.findings.model import Finding
from tenprof.analyses.op_kinds import SYNC_CALLS
from tenprof.analyses.timeline.host import host_lines, main_thread, sampled
from tenprof.core.intervals import coverage, uncovered
from tenprof.core.quantities import count, duration

# Calls that block the host until the GPU has drained (cudaMemcpy without Async is synchronous too, and
# so is any copy into pageable host memory: see _copies_to_pageable_host).
# The aten ops users reach these through, to name the cause in words.
CAUSES = {
    "aten::_local_scalar_dense": ".item() / float(tensor) / if tensor:",
    "aten::nonzero": "nonzero / boolean-mask indexing",
    "aten::_to_copy": ".cpu() / .to('cpu') / .numpy()",
    "aten::copy_": "a copy to the host (.cpu(), .tolist(), print(tensor))",
    "aten::masked_select": "masked_select",
    "aten::unique": "unique",
}


def check(ctx: Context) -> list[Finding]:
    api = ctx.profile.table("api_calls")
    is_sync = ctx.profile.strings("api_calls", "name").where(lambda n: n in SYNC_CALLS)
    is_sync |= np.isin(api.column("correlation_id").to_numpy(), _copies_to_pageable_host(ctx))
    start = api.column("start_ns").to_numpy()
    is_sync &= ctx.in_steps(start)
    if ctx.step_numbers[0] < 0:
        # No steps marked, so the whole recording is judged as one step: a synchronization after which
        # nothing more is launched ends the recording (the script's final torch.cuda.synchronize(), the
        # profiler's flush) and is not in a loop. With steps marked, those fall after the last step.
        launched = ctx.kernel_launch_ns
        last_launch = int(launched.max()) if len(launched) else -1
        is_sync &= api.column("end_ns").to_numpy() < last_launch
    if not is_sync.any():
        return []
    idx = np.flatnonzero(is_sync)
    idx = idx[np.argsort(start[idx], kind="stable")]
    op_of = api.column("op_id").to_numpy()[idx]
    thread_of = api.column("thread_id").to_numpy()[idx]
    # One op's copy and the synchronize after it (`.tolist()`, `.cpu()`) are one wait, the host's time
    # in both blocked.
    first = np.ones(len(idx), dtype=bool)
    first[1:] = (op_of[1:] != op_of[:-1]) | (op_of[1:] < 0)
    group = np.cumsum(first) - 1
    ops = op_of[first]
    sync_start = start[idx][first]
    ends = np.maximum.reduceat(api.column("end_ns").to_numpy()[idx], np.flatnonzero(first))
    blocked = np.bincount(group, weights=api.column("duration_ns").to_numpy()[idx]).astype(np.int64)
    per_step_count = per_step(len(ops), ctx)
    if per_step_count < ctx.t.sync_min_per_step:
        return []
    idle_after, cost_each, wake_end = _wake(ctx, sync_start, ends, blocked)
    causes: Counter[str] = Counter()
    copy_direction = _copy_directions(ctx)
    by_copy = np.zeros(len(ops), dtype=bool)  # the wait is a blocking copy to the GPU's
    cause_of = ctx.named_ancestors(frozenset(CAUSES))
    op_names = ctx.profile.strings("ops", "name")
    for j, op in enumerate(ops.tolist()):
        name = op_names.at(int(cause_of[op])) if op >= 0 and cause_of[op] >= 0 else ""
        if op >= 0 and copy_direction.get(int(op)) == "HtoD":
            by_copy[j] = True
            causes["a blocking copy to the GPU (.to('cuda') from pageable memory or without non_blocking)"] += 1
        else:
            causes[CAUSES.get(name, "an explicit synchronize" if op < 0 else f"{op_names.at(op)}")] += 1
    cost = int(cost_each.sum())
    return [
        Finding(
            id="sync-in-loop",
            title=f"{count(per_step_count)} host-device synchronizations per step, "
            f"costing {duration(per_step(cost, ctx))} of GPU idle per step",
            cost_ns=cost,
            seen=[
                f"{len(idx)} synchronizing calls in {ctx.step_count} step(s); the host was blocked "
                f"{duration(int(blocked.sum()))} in them",
                "through " + ", ".join(f"{c} x{n}" for c, n in causes.most_common(3)),
                f"the GPU was idle {duration(int(idle_after.sum()))} between each synchronization and the next; "
                f"removing them lets the host run ahead again by as much as it waited, so they cost the smaller "
                f"of the two, each time: {duration(cost)}",
                *_host_in_wakes(ctx, ends, wake_end),
            ],
            where=_where(ctx, ops, sync_start, ends, thread_of[first], blocked),
            why="A synchronization empties the GPU's queue: the host waits for the GPU, then the GPU waits for the "
            "host to launch again, and the CPU can no longer run ahead of the GPU.",
            fix="Keep the value on the GPU (accumulate losses in a tensor, compare on the device) and read it once "
            "after the loop or every N steps; replace boolean-mask indexing with torch.where; avoid print(tensor) "
            "and .cpu() inside the step.",
            numbers={
                "syncs_per_step": per_step_count,
                "idle_after_ns": float(idle_after.sum()),
                "cost_ns": float(cost),
                "blocked_ns": float(blocked.sum()),
                "copy_syncs": float(by_copy.sum()),
                "copy_idle_after_ns": float(cost_each[by_copy].sum()),
            },
        )
    ]


def _wake(ctx: Context, starts: I64, ends: I64, blocked: I64) -> tuple[I64, I64, I64]:
    """For each synchronization (in time order), the GPU idle in the analysed steps from its end to the
    next one's start (the last: to the end of the steps), what of it the synchronization costs, and
    where that wake ends.

    A synchronization drains the GPU's queue: until the host has queued enough work again, every idle
    moment of the GPU is its doing, the host's own work after it included (the loss logged, the next
    batch prepared), and the small kernels launched right after it do not end that. Without it, the host
    would have been ahead by at most the time it waited in it, so that much idle, no more, is saved."""
    following = np.append(starts[1:], ctx.analysed_end)
    hi = np.maximum(np.minimum(following, ctx.analysed_end), ends)
    idle_start, idle_end = uncovered((ctx.step_start, ctx.step_end), ctx.gpu_intervals)
    idle = coverage(idle_start, idle_end, ends, hi)
    return idle, np.minimum(idle, blocked), hi


def _host_in_wakes(ctx: Context, ends: I64, wake_end: I64) -> list[str]:
    """From the host sampler: the Python outside torch ops the main thread ran while the GPU sat idle
    after the synchronizations (the work the GPU waited for once its queue was empty), as an evidence
    line; [] without samples or when there was none."""
    if not sampled(ctx.profile):
        return []
    lo, hi = uncovered((ends, wake_end), ctx.gpu_intervals)
    found = [
        h
        for h in host_lines(ctx.profile, lo, hi, main_thread(ctx.profile))
        if not h.in_torch_op and h.line != "(no line of yours)"
    ]
    if not found:
        return []
    said = ", ".join(f"{h.function}() at {h.line} {duration(per_step(h.ns, ctx))} per step" for h in found[:2])
    return [f"while the GPU sat idle after them, the host ran Python outside torch ops: {said} (sampled)"]


def _where(ctx: Context, ops: I64, starts: I64, ends: I64, threads: I64, blocked: I64) -> list[str]:
    """The lines of the synchronizations, heaviest first. One called outside any torch op (an explicit
    torch.cuda.synchronize()) has no line in the trace: it is the line the host sampler saw its thread
    at while it was blocked, or, unsampled, placed after the last op its thread started before it."""
    o = ctx.profile.table("ops")
    o_start, o_thread = o.column("start_ns").to_numpy(), o.column("thread_id").to_numpy()
    outside = ops < 0
    previous = np.full(len(ops), -1, dtype=np.int64)  # for those outside ops: the thread's last op before
    for thread in np.unique(threads[outside]).tolist():
        mine = np.flatnonzero(o_thread == thread)
        mine = mine[np.argsort(o_start[mine], kind="stable")]
        which = np.flatnonzero(outside & (threads == thread))
        k = np.searchsorted(o_start[mine], starts[which], side="left") - 1
        previous[which] = np.where(k >= 0, mine[np.clip(k, 0, None)] if len(mine) else -1, -1)
    tally: Counter[str] = Counter()
    for op, before, weight in zip(ops.tolist(), previous.tolist(), blocked.tolist(), strict=True):
        if op >= 0:
            tally[ctx.line_of_op(op)] += weight
        else:
            tally[f"outside torch ops, after {ctx.line_of_op(before)}"] += weight
    if sampled(ctx.profile) and outside.any():
        # The lines the host sampler saw the blocked thread at replace the guesses, the blocked time shared
        # out in proportion to their samples (a synchronization shorter than the sampling period may have
        # none, but the sampled ones say where such calls are).
        seen = [
            h
            for h in host_lines(ctx.profile, starts[outside], ends[outside] + 1, main_thread(ctx.profile))
            if h.line != "(no line of yours)"
        ]
        found = sum(h.ns for h in seen)
        if found:
            for guess in [k for k in tally if k.startswith("outside torch ops, after ")]:
                del tally[guess]
            total = int(blocked[outside].sum())
            for h in seen:
                tally[h.line] += int(total * h.ns / found)
    return [line for line, ns in tally.most_common(3) if ns > 0]


def _copies_to_pageable_host(ctx: Context) -> I64:
    """Correlation ids of the copies from the GPU into pageable host memory: the call that issues one
    returns only once the GPU has run everything queued before it, like a synchronize."""
    t = ctx.profile.table("transfers")
    to_pageable = np.array(
        [
            d == "DtoH" and m == "Pageable"
            for d, m in zip(t.column("direction").to_pylist(), t.column("dst_memory").to_pylist(), strict=True)
        ],
        dtype=bool,
    )
    ids: I64 = t.column("correlation_id").to_numpy()[to_pageable]
    return ids[ids >= 0]


def _copy_directions(ctx: Context) -> dict[int, str]:
    """op id -> direction (HtoD, DtoH, ...) of the copies it issued."""
    t = ctx.profile.table("transfers")
    return {
        int(op): str(d)
        for op, d in zip(t.column("op_id").to_pylist(), t.column("direction").to_pylist(), strict=True)
        if op >= 0 and d
    }
