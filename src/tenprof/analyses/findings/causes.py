"""One cause, one finding: after every check has run, time that two findings would both charge goes to
the more specific one, and a finding left with no cost is dropped.

The overlaps, each settled once here:
- idle-gaps splits the GPU's idle time by what it waited on. The waits on a synchronization belong to
  sync-in-loop, the waits on a copy to pageable-transfer, and the host not launching work to
  launch-bound, or (up to their cost) to data-loading and allocator-churn, which say why the host
  launched nothing, when those fired; the host's gaps in a synchronization's wake (up to its cost) are
  sync-in-loop's too; idle-gaps keeps only the rest, and is dropped when that falls below
  its threshold (`idle.min_share` of the window it was judged on). What it keeps is titled by its largest
  kind left, and its advice drawn again for it (`Finding.refix`): the parts of the host's gaps the named
  causes took (the DataLoader's, the allocator's, ...) are theirs, with their own advice.
- sync-in-loop counts the waits of blocking copies to the GPU; when pageable-transfer fired, those are
  its: the idle after them moves to pageable-transfer's cost, and sync-in-loop keeps only the other
  synchronizations (or goes, when there are none, or when what they cost is below `sync_min_share` of the
  analysed steps).
- The GPU's idle time in the analysed steps is one budget (un-profiled where the overhead is known,
  else as recorded): the findings that charge idle time take from it in order, the specific causes
  first (data-loading, allocator-churn, sync-in-loop, pageable-transfer, torch-compile, graph-break),
  then launch-bound and idle-gaps, which name no more than what is left. A graph break's measurable
  cost is its extra dispatch on the CPU, which costs the program time only where the GPU then waits:
  in a GPU-bound loop it is hidden.
  So the costs of these findings never add up to more idle time than the steps had.
- exposed-communication charges every instant the GPU runs collectives alone; the wasted rounds of
  all-reduce-every-micro-step are its part with a cause of their own, and leave it the rest.
- Any finding whose cost is zero says nothing worth acting on, and is dropped, unless it is urgent (a run
  that ran or will run out of memory costs no time, it fails) or saves something else (GPU time the host's
  work hides, memory).
- A finding whose cost is GPU kernel time (no tensor cores, layout conversions, ...) saves nothing of
  the step's time while the host bounds it: where launch-bound fired, each says so (launch-bound, whose
  cost is most of the step then, ranks above them).
"""

from __future__ import annotations

import numpy as np

from tenprof.analyses.findings.context import Context
from tenprof.analyses.findings.model import Finding
from tenprof.analyses.timeline.step_time import HOST_PARTS
from tenprof.core.intervals import coverage
from tenprof.core.quantities import duration

# numbers that a finding costing no step time saves instead: GPU time the host's work hides, memory; or
# the host time it took as recorded, which the un-profiled steps hide (`_hidden_unprofiled`)
SAVES_INSTEAD = ("gpu_time_saved_ns", "bytes_saved", "recorded_cost_ns")

# The findings whose cost is GPU idle time, most specific first: they are charged in this order.
IDLE_CHARGERS = (
    "cold-start",  # as a cost of the one pass recorded (not the once-only first step, which is never charged)
    "torch-compile-time",  # likewise: only in a pass judged as one (elsewhere a one-off, never charged)
    "data-loading",
    "allocator-churn",
    "sync-in-loop",
    "pageable-transfer",
    "torch-compile",
    "graph-break",
    "launch-bound",
    "idle-gaps",
)
# the findings that name why the host launched nothing (from the step decomposition's parts): idle-gaps'
# "host not launching work" is theirs, up to their cost
# (each with the step decomposition's part it names)
_PART_OF_CAUSE = {
    "cold-start": "cuda_api",
    "torch-compile-time": "compile",
    "data-loading": "data_loading",
    "allocator-churn": "allocator",
}
_HOST_CAUSES = tuple(_PART_OF_CAUSE)

# The findings whose cost is GPU kernel time: in a step the host bounds, saving it shortens no step
# (`_gpu_time_on_the_critical_path`).
GPU_TIME_FINDINGS = (
    "gemm-without-tensor-cores",
    "layout-conversions",
    "strided-elementwise",
    "hidden-copies",
    "variance",
    "memory-bound-slow",
    "register-limited",
    "far-below-speed-of-light",
    "gpu-clocks-throttled",
)

# idle-gaps' kinds (its numbers' keys) -> the finding that owns that kind of wait when it fired
_IDLE_OWNERS = {
    "waiting_on_a_synchronization_ns": "sync-in-loop",
    "waiting_on_a_transfer_ns": "pageable-transfer",
    "host_not_launching_work_ns": "launch-bound",
}


def one_cause_one_finding(found: list[Finding], ctx: Context) -> list[Finding]:
    by_id = {f.id: f for f in found}
    pageable = by_id.get("pageable-transfer")
    syncs = by_id.get("sync-in-loop")
    if pageable is not None and syncs is not None and syncs.numbers.get("copy_syncs", 0) > 0:
        moved = int(syncs.numbers.get("copy_idle_after_ns", 0.0))
        pageable.cost_ns += moved
        pageable.seen.append(
            f"the host then waited for each copy, and the GPU for the next launch: {duration(moved)} more "
            "(counted here, not as a synchronization)"
        )
        pageable.numbers["idle_after_copies_ns"] = float(moved)
        left = int(syncs.numbers.get("syncs_per_step", 0) * max(ctx.step_count, 1) - syncs.numbers["copy_syncs"])
        syncs.cost_ns = max(0, syncs.cost_ns - moved)
        syncs.seen.append(
            f"{int(syncs.numbers['copy_syncs'])} of them are the pageable copies' own waits, counted under "
            "pageable-transfer"
        )
        if left <= 0:
            syncs.cost_ns = 0
    if syncs is not None and syncs.cost_ns < ctx.t.sync_min_share * ctx.analysed_ns:
        # what is left is nothing to fix (a benchmark's timing syncs): dropped below, and owning no idle time,
        # so idle-gaps keeps its gaps drained by a sync
        syncs.cost_ns = 0
        del by_id["sync-in-loop"]
    _wasted_rounds_left_to_grad_sync(by_id, ctx)
    idle = by_id.get("idle-gaps")
    if idle is not None:
        charged = {key: owner for key, owner in _IDLE_OWNERS.items() if owner in by_id and key in idle.numbers}
        taken = {key: int(idle.numbers[key]) for key in charged}
        host = "host_not_launching_work_ns"
        named = [by_id[cause] for cause in _HOST_CAUSES if cause in by_id and not by_id[cause].once]
        owned: frozenset[str] = frozenset()  # the decomposition's parts of the host's gaps the named causes took
        if named and host in idle.numbers and host not in charged:
            taken[host] = int(min(idle.numbers[host], sum(f.cost_ns for f in named)))
            charged[host] = " and ".join(f.id for f in named)
            owned = frozenset(_PART_OF_CAUSE[f.id] for f in named)
        wake = _sync_wake_among_host_gaps(idle, syncs, charged)
        if wake:
            charged[host] = "sync-in-loop"
            taken[host] = wake
            owned = frozenset()
        if charged:
            idle.cost_ns = max(0, idle.cost_ns - sum(taken.values()))
            idle.seen.append(
                "charged to other findings: "
                + ", ".join(f"{key[:-3].replace('_', ' ')} to {owner}" for key, owner in charged.items())
            )
            window = idle.numbers.get("window_ns", 0.0)
            if not window or idle.cost_ns < ctx.t.idle_min_share * window:
                idle.cost_ns = 0
            else:
                kind = _kind_left_most(idle, taken)
                said = f"mostly {kind}" if kind else "for other reasons"
                idle.title = f"GPU idle {100 * idle.cost_ns / window:.0f}% of the steps in gaps, {said}"
                if kind:  # the advice for what is left: the parts the named causes took are theirs
                    idle.refix(owned, kind)
    budget = idle_budget_ns(ctx)
    for finding_id in IDLE_CHARGERS:
        for f in (f for f in found if f.id == finding_id and not f.once and f.cost_ns > 0):
            if f.cost_ns > budget:
                f.seen.append(
                    f"cost capped at the GPU idle time not already charged to a more specific finding: "
                    f"{duration(budget)} of {duration(f.cost_ns)}"
                )
                if budget <= 0 and f.id in _HOST_CAUSES and ctx.overhead.unprofiled_idle_per_step_ns is not None:
                    _hidden_unprofiled(f, ctx)
                f.cost_ns = budget
            budget -= f.cost_ns
    found = _speed_of_light_left_to_counters(found)
    found = _churn_left_to_fragmentation(found)
    _gpu_time_on_the_critical_path(found, ctx)
    bound = by_id.get("launch-bound")
    if bound is not None and bound.cost_ns > 0:
        for f in (f for f in found if f.id in GPU_TIME_FINDINGS and "gpu_time_saved_ns" not in f.numbers):
            f.seen.append(
                f"the GPU is busy {100 * bound.numbers['gpu_busy_share']:.0f}% of the step (launch-bound, above): "
                "this saves GPU time, which shortens the step only once the host launches work faster"
            )
    # a GPU-time finding off the critical path stays, last, for what it would save once the host is faster
    return [f for f in found if f.urgent or f.cost_ns > 0 or any(f.numbers.get(k, 0) > 0 for k in SAVES_INSTEAD)]


def _hidden_unprofiled(f: Finding, ctx: Context) -> None:
    """A host cause (the DataLoader, the allocator) the recording shows with the GPU idle, where the steps
    run un-profiled leave the GPU no idle time at all (measured, or estimated from the profiler's cost): the
    host, without the profiler's work, runs far enough ahead of the GPU to hide it. Kept, last, with what it
    cost as recorded, rather than dropped: the decomposition shows that time, and the reader should learn
    why no step time is charged for it."""
    f.numbers["recorded_cost_ns"] = float(f.cost_ns)
    how = ctx.overhead.method or "estimated"
    f.seen.append(
        f"un-profiled ({how}) the steps leave the GPU no idle time: without the profiler's own work the host runs "
        f"ahead of the GPU by more than this, so it shortens no step there; as recorded it cost {duration(f.cost_ns)}"
    )


def _wasted_rounds_left_to_grad_sync(by_id: dict[str, Finding], ctx: Context) -> None:
    """exposed-communication charges every instant the GPU runs collectives alone; the wasted all-reduce
    rounds of gradient accumulation are a part of it with their own cause and fix, all-reduce-every-micro-step's
    cost: the rest stays exposed-communication's, which is dropped when that falls below its threshold."""
    exposed, wasted = by_id.get("exposed-communication"), by_id.get("all-reduce-every-micro-step")
    if exposed is None or wasted is None:
        return
    exposed.cost_ns = max(0, exposed.cost_ns - wasted.cost_ns)
    exposed.seen.append(
        f"{duration(wasted.cost_ns)} of it are the wasted all-reduce rounds (all-reduce-every-micro-step)"
    )
    if exposed.cost_ns < ctx.t.exposed_communication_min_share * ctx.analysed_ns:
        exposed.cost_ns = 0


# the counters' findings on an op, measured by Nsight Compute: they say why it is slow, where the speed of
# light only says that it is; each charges the op's kernel time
_MEASURED_CAUSES = ("gemm-without-tensor-cores", "memory-bound-slow", "register-limited")


def _gpu_time_on_the_critical_path(found: list[Finding], ctx: Context) -> None:
    """A finding that saves GPU kernel time shortens a step only by what it saves beyond the time the GPU
    already idles while the host works (its slack): in a loop the host bounds, faster kernels leave the
    host's work, and the step, as they were. The slack is the host's parts of the analysed steps, at most
    the GPU's idle time un-profiled (`idle_budget_ns`); the GPU-time findings use it up most costly first,
    as their savings add up on the one GPU. What each would save in GPU time stays in its numbers."""
    # GPU time saved does not shorten the host's parts of the step
    slack = min(sum(ctx.part_ns(part) for part in HOST_PARTS), idle_budget_ns(ctx))
    for f in sorted((f for f in found if f.id in GPU_TIME_FINDINGS and not f.once), key=lambda f: -f.cost_ns):
        if slack <= 0:
            return
        taken = min(slack, f.cost_ns)
        f.seen.append(
            f"the GPU already idles {duration(slack)} of the steps while the host works: faster kernels shorten "
            f"the steps only by what they save beyond that, {duration(f.cost_ns - taken)} of {duration(f.cost_ns)}"
        )
        f.numbers["gpu_time_saved_ns"] = float(f.cost_ns)
        f.cost_ns -= taken
        slack -= taken


def _speed_of_light_left_to_counters(found: list[Finding]) -> list[Finding]:
    """A far-below-speed-of-light finding on an op (same op, same line) a counters finding names is folded
    into that one as evidence: both would charge the op's kernel time."""
    measured = [f for f in found if f.id in _MEASURED_CAUSES]
    kept = []
    for f in found:
        twin = None
        if f.id == "far-below-speed-of-light":
            op = f.title.split(" ", 1)[0]
            twin = next((g for g in measured if g.title.split(" ", 1)[0] == op and g.where[:1] == f.where[:1]), None)
        if twin is None:
            kept.append(f)
        else:
            twin.seen.append(f"the performance model: {f.title}")
    return kept


def _churn_left_to_fragmentation(found: list[Finding]) -> list[Finding]:
    """Allocator churn with no cache emptied by the script, where the allocator also reserved far more than it
    handed out, is the fragmentation's time: requests of new sizes that the cached blocks cannot serve take
    new segments every step. One finding, fragmentation's, with both costs and one fix."""
    churn = next((f for f in found if f.id == "allocator-churn"), None)
    frag = next((f for f in found if f.id == "memory-fragmentation"), None)
    if churn is None or frag is None or churn.numbers.get("releases_outside_ops_per_step", 0.0) > 0:
        return found
    frag.title += ", and the steps wait while it takes more"
    frag.cost_ns += churn.cost_ns
    frag.seen += [f"allocator churn: {churn.title.split(': ', 1)[-1]}", *churn.seen]
    frag.where = list(dict.fromkeys(frag.where + churn.where))[:3]
    frag.numbers["allocator_waited_ns"] = float(churn.cost_ns)
    return [f for f in found if f is not churn]


def _kind_left_most(idle: Finding, moved: dict[str, int]) -> str | None:
    """The kind of gap with the most time left once others were charged with theirs (a trace whose GPU waits
    for queued work stays told so when its syncs go to sync-in-loop); None where nothing is left."""
    left = {
        key: value - moved.get(key, 0)
        for key, value in idle.numbers.items()
        if key.endswith("_ns") and key not in ("idle_ns", "window_ns")
    }
    most = max(left, key=lambda key: left[key], default=None)
    return most[:-3].replace("_", " ") if most is not None and left[most] > 0 else None


def _sync_wake_among_host_gaps(idle: Finding, syncs: Finding | None, charged: dict[str, str]) -> int:
    """The part of idle-gaps' "host not launching work" that is sync-in-loop's: a synchronization's cost
    is the idle in its wake, which includes gaps that open after it, once the few kernels launched right
    after it are done (the host then prepares the next batch with nothing queued). That cost less the
    gaps that already read as waits on it, taken from the host's gaps, unless launch-bound took them."""
    host = "host_not_launching_work_ns"
    if syncs is None or host in charged or host not in idle.numbers:
        return 0
    already = int(idle.numbers.get("waiting_on_a_synchronization_ns", 0.0))
    return int(min(idle.numbers[host], max(0, syncs.cost_ns - already)))


def idle_budget_ns(ctx: Context) -> int:
    """The GPU's idle time over the analysed steps: un-profiled where the overhead is known (the step less
    the GPU's work), else as recorded (each step's time no kernel or copy covers)."""
    starts, ends = ctx.gpu_intervals
    busy = coverage(starts, ends, ctx.step_start, ctx.step_end)
    recorded = int(np.maximum(ctx.step_end - ctx.step_start - busy, 0).sum())
    per_step = ctx.overhead.unprofiled_idle_per_step_ns
    if per_step is not None:  # a typical step's idle: never more than the recorded steps had
        return min(int(per_step * max(ctx.step_count, 1)), int(ctx.analysed_ns))
    return recorded
