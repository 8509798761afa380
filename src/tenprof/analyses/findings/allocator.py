"""allocator-churn: the GPU idles while the host is in cudaMalloc, cudaFree or another allocating call:
the step decomposition's allocator part (analyses.timeline.step_time), judged over the analysed steps. It fires
on that part (the GPU seen idle meanwhile). Its cost is the host's time the allocator takes, as far as
the GPU has idle time to give (`host_cost`): in a loop the host bounds, every such call delays the
launches after it, also while the GPU still runs earlier work. That time is the calls made outside any
torch op, plus, for each top-level op that calls the allocator, its time beyond the median of the same
op's calls in the analysed steps that did not (`_allocating_ops_ns`): an op that takes fresh memory also
runs the caching allocator's slow path around the driver call (looking for a block, splitting it,
recording it), which the driver call's own time leaves out. Where every call of an op allocated, only
its allocator calls count. Other ops slowed down by the churn (measured: the whole host runs slower
after the cache is emptied) are not counted: nothing in one run says how fast they would be without it.

In a steady loop PyTorch's caching allocator reuses the blocks it freed, so device memory is taken from
the driver only in the first steps. Steady calls mean the cache was emptied (`torch.cuda.empty_cache()`,
which gives every free block back, so the next step takes them again), or the cache cannot hold the
step (memory near the card's limit: the allocator frees what it cached and retries), or pinned host
buffers are made anew every step (cudaHostAlloc), or the cache is off (PYTORCH_NO_CUDA_MEMORY_CACHING=1:
every freed tensor's memory goes back at once, a few blocks in each of many ops or gaps between ops;
`_release_pattern`). ROCm traces name HIP's calls (hipMalloc, hipFree), counted alike. cudaFree called
outside any torch op in a burst or two a step (or in more bursts of many blocks) is the first;
the lines come from the host sampler (empty_cache is no op): first the line sampled while memory was given
back outside any op (the call that empties the cache), then the lines sampled in all the allocator's
calls, then those of the ops the calls ran in. Judged only
where more than half the steps, and two at least, wait in the allocator (a few steps' allocations are
first uses, not churn: the first steady step's one cudaMalloc), and over two steps or more: a run
judged as one step (nothing marked, no iterations told) allocates its memory for the first time in it,
which is no churn."""

from __future__ import annotations

from collections import Counter

import numpy as np

from tenprof.analyses.findings.context import Context, host_cost, per_step
from tenprof.analyses.findings.model import Finding
from tenprof.analyses.timeline.allocator_slow_path import slow_path
from tenprof.analyses.timeline.host import host_lines, main_thread, sampled
from tenprof.analyses.timeline.step_time import ALLOCATOR_CALLS, length
from tenprof.core.intervals import coverage
from tenprof.core.quantities import duration

_PINNED = ("cudaHostAlloc", "cudaMallocHost", "hipHostMalloc")  # host buffers pinned for copies
_GIVING_BACK = frozenset(
    {"cudaFree", "cuMemFree_v2", "cuMemRelease", "cuMemUnmap", "cudaFreeHost", "hipFree", "hipHostFree"}
)


MIN_STEPS = 2  # judged on steady steps only: in a run judged as one step, every allocation may be a first


def check(ctx: Context) -> list[Finding]:
    if ctx.step_count < MIN_STEPS:
        return []
    blocks = ctx.parts["allocator"]
    idle = length(blocks)
    if not ctx.analysed_ns or idle < ctx.t.allocator_min_share * ctx.analysed_ns:
        return []
    each_step = coverage(*blocks, ctx.step_start, ctx.step_end)
    waiting = int((each_step >= ctx.t.allocator_min_share * (ctx.step_end - ctx.step_start)).sum())
    if waiting < MIN_STEPS or waiting <= 0.5 * ctx.step_count:
        return []  # a few steps' allocations (the first use of a size, a one-off), not churn
    host = ctx.host_ns("allocator")
    api = ctx.profile.table("api_calls")
    names = ctx.profile.strings("api_calls", "name")
    chosen = names.where(lambda n: n in ALLOCATOR_CALLS) & ctx.in_steps(api.column("start_ns").to_numpy())
    took = api.column("duration_ns").to_numpy()
    op = api.column("op_id").to_numpy()
    counts: Counter[str] = Counter()
    spent: Counter[str] = Counter()
    rows = np.flatnonzero(chosen)
    for name, ns in zip([names.values[c] for c in names.codes[rows].tolist()], took[rows].tolist(), strict=True):
        counts[name] += 1
        spent[name] += int(ns)
    around_ops, allocating_ops = _allocating_ops_ns(ctx, op[chosen & (op >= 0)], took[chosen & (op >= 0)])
    taken = int(took[chosen & (op < 0)].sum()) + around_ops  # the host's time the allocator takes
    giving_back = chosen & names.where(lambda n: n in _GIVING_BACK)
    released = giving_back & (op < 0)
    freed_outside = int(released.sum())
    pattern = _release_pattern(ctx, api.column("start_ns").to_numpy()[released], op[giving_back & (op >= 0)])
    sampled_lines = []
    releasing_lines = []  # where the memory given back outside any op was given back: the churn's cause
    if sampled(ctx.profile):
        thread = main_thread(ctx.profile)
        sampled_lines = [h for h in host_lines(ctx.profile, *blocks, thread) if h.line != "(no line of yours)"]
        starts = api.column("start_ns").to_numpy()[released]
        found = host_lines(ctx.profile, starts, starts + took[released], thread)
        releasing_lines = [h for h in found if h.line != "(no line of yours)"]
    waited = host_cost(ctx, idle, max(host, taken))
    share = idle / ctx.analysed_ns
    seen = [
        f"the host spends {duration(per_step(host, ctx))} per step in the allocator (its CUDA calls, and its own "
        "work around those made in ops), "
        f"{duration(per_step(idle, ctx))} of it with the GPU idle ({100 * share:.0f}% of the {ctx.step_count} "
        "analysed step(s))",
        "per step: "
        + ", ".join(
            f"{name} {per_step(counts[name], ctx):.3g} calls, {duration(per_step(spent[name], ctx))}"
            for name, _ in spent.most_common(4)
        ),
    ]
    if taken > host:
        seen.append(
            f"the {per_step(allocating_ops, ctx):.3g} top-level ops per step that call the allocator take "
            f"{duration(per_step(around_ops, ctx))} per step beyond the same ops' calls that reuse cached memory "
            f"(the allocator's slow path around the driver calls): {duration(per_step(taken, ctx))} per step "
            "in all, counted as the cost"
        )
    if pattern == EMPTIED:
        seen.append(
            f"{per_step(freed_outside, ctx):.3g} memory releases per step outside any torch op: the cache is emptied "
            "(torch.cuda.empty_cache()) and refilled every step"
        )
    elif pattern == UNCACHED:
        inside = giving_back & (op >= 0)
        seen.append(
            f"{per_step(int(inside.sum()), ctx):.3g} memory releases per step inside "
            f"{per_step(len(np.unique(op[inside])), ctx):.3g} ops, a few each, and {per_step(freed_outside, ctx):.3g} "
            "between ops: each freed tensor's memory goes back to the driver, as if the allocator cached nothing"
        )
    if sampled_lines:
        seen.append(
            "meanwhile the host was at "
            + ", ".join(
                f"{h.function}() at {h.line} {duration(per_step(h.ns, ctx))} per step" for h in sampled_lines[:3]
            )
            + " (sampled)"
        )
    where = [h.line for h in releasing_lines[:1] + sampled_lines[:2]] + ctx.where(
        op[chosen & (op >= 0)], took[chosen & (op >= 0)]
    )
    return [
        Finding(
            id="allocator-churn",
            title=f"Allocator churn: the GPU idles {100 * share:.0f}% of the steps while the host allocates or frees "
            "device memory",
            cost_ns=waited,
            seen=seen,
            where=list(dict.fromkeys(where))[:3],
            why="cudaMalloc and cudaFree are slow and synchronize with the device; PyTorch's caching allocator avoids "
            "them after the first steps, so steady calls mean its cache is being emptied, is too small, or is off.",
            fix=_fix(pattern, counts),
            numbers={
                "waited_ns": float(waited),
                "host_ns": float(host),
                "allocator_time_ns": float(max(host, taken)),
                "gpu_idle_ns": float(idle),
                "share": share,
                "calls_per_step": per_step(sum(counts.values()), ctx),
                "releases_outside_ops_per_step": per_step(freed_outside, ctx),
            },
        )
    ]


def _allocating_ops_ns(ctx: Context, call_ops: np.ndarray, call_ns: np.ndarray) -> tuple[int, int]:
    """The host's time in the top-level ops (in the analysed steps) that call the allocator, beyond what
    the same op takes when it does not (analyses.timeline.allocator_slow_path, compared with the analysed
    steps' top-level ops). Returns that time and the number of such ops."""
    top_level = np.flatnonzero(
        (ctx.profile.column("ops", "depth") == 0) & ctx.in_steps(ctx.profile.column("ops", "start_ns"))
    )
    found = slow_path(ctx.profile, call_ops, call_ns, top_level)
    return found.total_ns, len(found.ops)


EMPTIED, UNCACHED, CANNOT_KEEP = "emptied", "uncached", "cannot keep"
# empty_cache() gives the cache back in one burst between ops: at most this many bursts per step
MAX_BURSTS_PER_STEP = 2
# without a cache, each tensor's memory goes back as it is freed: inside an op or between ops (Python dropping
# it), a few blocks at a time, many times a step (an MI300X ResNet-18 run without caching, a public trace: 103
# ops a step releasing 2 blocks each, and 52.5 releases a step between ops; the corpus's empty_cache loops: 25
# and 48 releases a step in one burst between ops, at most one inside an op); a cache emptied by an
# out-of-memory retry frees its blocks in the few ops that ran out
MIN_RELEASING_PLACES_PER_STEP = 10
MAX_RELEASES_PER_PLACE = 4


def _release_pattern(ctx: Context, outside_starts: np.ndarray, releasing_ops: np.ndarray) -> str:
    """How the analysed steps give device memory back: in a burst or two a step between ops (`EMPTIED`:
    empty_cache()), a few blocks at a time in many places, ops or the gaps between them (`UNCACHED`: the caching
    allocator keeps nothing), in more bursts of many blocks between ops (`EMPTIED` more than once a step), or
    neither (the cache cannot keep the step's memory)."""
    steps = max(ctx.step_count, 1)
    bursts = 0
    if len(outside_starts):
        top = ctx.profile.column("ops", "depth") == 0
        op_starts = np.sort(ctx.profile.column("ops", "start_ns")[top])
        times = np.sort(outside_starts)
        # a new burst wherever an op started since the release before
        bursts = 1 + int((np.diff(np.searchsorted(op_starts, times)) > 0).sum())
        if len(outside_starts) >= len(releasing_ops) and bursts <= MAX_BURSTS_PER_STEP * steps:
            return EMPTIED
    places = len(np.unique(releasing_ops)) + bursts
    releases = len(releasing_ops) + len(outside_starts)
    if places >= MIN_RELEASING_PLACES_PER_STEP * steps and releases <= MAX_RELEASES_PER_PLACE * places:
        return UNCACHED
    if len(outside_starts):
        return EMPTIED  # bursts of many blocks between ops: emptied more than once a step
    return CANNOT_KEEP


def _fix(pattern: str, counts: Counter[str]) -> str:
    if pattern == UNCACHED:
        return (
            "Let the caching allocator keep freed memory: unset PYTORCH_NO_CUDA_MEMORY_CACHING (a debugging switch "
            "that turns the cache off), or, under a pluggable allocator (torch.cuda.memory.CUDAPluggableAllocator), "
            "make it reuse freed blocks; also check that torch.cuda.empty_cache() is not called between ops."
        )
    if pattern == EMPTIED:
        return (
            "Remove torch.cuda.empty_cache() from the loop: the allocator keeps freed blocks to reuse them, and "
            "emptying its cache makes every step take them from the driver again. If memory is tight, lower the "
            "peak (smaller batch, activation checkpointing) or set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True."
        )
    pinned = sum(counts[name] for name in _PINNED)
    if pinned and pinned >= sum(counts.values()) - pinned - sum(counts[name] for name in _GIVING_BACK):
        return (
            "Pinned host buffers are allocated every step: allocate them once and reuse them (or let the DataLoader "
            "pin with pin_memory=True, which reuses its buffers)."
        )
    return (
        "The cache cannot keep the step's memory: near the card's limit the allocator frees its cache and retries, "
        "or allocation sizes change every step. Lower the peak memory (smaller batch, activation checkpointing, "
        "freeing tensors you keep), keep shapes fixed, or set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True."
    )
