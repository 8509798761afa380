"""idle-gaps: per GPU, the gaps when no kernel runs on any stream inside the steps, and what was going on
meanwhile: a copy, the host blocked in a synchronization, work already launched that waits (on an event,
another stream: the step decomposition's queued part), or the host simply not launching work. A gap the host
spent in a synchronization only at its start is the synchronization's until the host came out of it; the rest
is told by what followed (queued work, or the host's own)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from tenprof.analyses.findings.context import Context
from tenprof.analyses.findings.launch_bound import CAPTURING
from tenprof.analyses.findings.meanwhile import Meanwhile, host_meanwhile
from tenprof.analyses.findings.model import Finding
from tenprof.analyses.op_kinds import SYNC_CALLS
from tenprof.analyses.timeline.gpu_work_ops import ops_handing_gpu_work
from tenprof.analyses.timeline.op_threads import host_ops_recorded
from tenprof.analyses.timeline.step_time import HOST_PARTS, length
from tenprof.core.intervals import I64Array, coverage, merged, uncovered
from tenprof.core.quantities import duration

SYNC_MARK = "Synchronize"
QUEUED = "work launched, waiting to start"
SYNCED = "waiting on a synchronization"
HOST = "host not launching work"
TRANSFER = "waiting on a transfer"
STEP_START = -2  # the op "before" a single step's leading gap: none, the step's start (-1 is a kernel without op)


# the device with the most idle time: it, by kind, its gaps' pieces and its whole gaps (see `check`)
_Worst = tuple[int, int, dict[str, int], list[tuple[int, str, int, int, int, int]], list[tuple[int, str, int, int]]]


def check(ctx: Context) -> list[Finding]:
    """Gaps when no kernel runs on a device (all streams together), clipped to the analysed steps."""
    k, t = ctx.profile.table("kernels"), ctx.profile.table("transfers")
    if k.num_rows == 0:
        return []
    k_device = k.column("device").to_numpy()
    k_start, k_end, k_op = k.column("start_ns").to_numpy(), k.column("end_ns").to_numpy(), k.column("op_id").to_numpy()
    t_start, t_end = t.column("start_ns").to_numpy(), t.column("end_ns").to_numpy()
    api = ctx.profile.table("api_calls")
    # (ROCm's blocking copy, hipMemcpyWithStream, and a blocking cudaMemcpy are synchronizations too)
    is_sync = ctx.profile.strings("api_calls", "name").where(lambda n: SYNC_MARK in n or n in SYNC_CALLS)
    by_end = np.argsort(api.column("end_ns").to_numpy()[is_sync], kind="stable")
    sync_start = api.column("start_ns").to_numpy()[is_sync][by_end]
    sync_end = api.column("end_ns").to_numpy()[is_sync][by_end]
    min_gap = int(ctx.t.idle_min_gap_us * 1000)
    lo, hi = ctx.gpu_window
    # One analysed step (a single pass, or one marked step): the time from its start to its first kernel is
    # its own idle GPU time too (a request's preprocessing before the model runs), and no queued work of an
    # earlier step can be misplaced into it. With several steps the gaps between them hold that time.
    lead = len(ctx.step_start) == 1 and int(ctx.step_start[0]) < lo
    if lead:
        lo = int(ctx.step_start[0])
    worst: _Worst | None = None
    for device in np.unique(k_device).tolist():
        sel = np.flatnonzero(k_device == device)
        sel = sel[np.argsort(k_start[sel], kind="stable")]
        blocks_start, blocks_end = merged(k_start[sel], k_end[sel])
        # the op of the kernel that closes each block, and of the one that opens the next
        closes = sel[np.searchsorted(k_start[sel], blocks_end, side="left") - 1]
        opens = sel[np.searchsorted(k_start[sel], blocks_start, side="left")]
        gap_lo, gap_hi = blocks_end[:-1], blocks_start[1:]
        before_op, after_op = k_op[closes[:-1]], k_op[opens[1:]]
        if lead:  # the step's start to the device's first work: after no kernel
            gap_lo, gap_hi = np.r_[lo, gap_lo], np.r_[blocks_start[0], gap_hi]
            before_op, after_op = np.r_[STEP_START, before_op], k_op[opens]
        in_window = np.clip(np.minimum(gap_hi, hi) - np.maximum(gap_lo, lo), 0, None)  # inside the GPU window
        # ... and inside the analysed steps: a step left out (compiling, run with the capture off) lies
        # within the window too, and its gaps are not the steady state's
        in_steps = np.minimum(in_window, coverage(ctx.step_start, ctx.step_end, gap_lo, gap_hi))
        real = np.flatnonzero(in_steps >= min_gap)
        transfer_time = coverage(t_start, t_end, gap_lo[real], gap_hi[real])
        woke = _drained_by_a_sync(sync_start, sync_end, gap_lo[real], gap_hi[real])
        queued = coverage(*ctx.parts["queued"], gap_lo[real], gap_hi[real])
        # of each gap's rest after the host came out of a synchronization, the time work already queued waited
        queued_after = coverage(*ctx.parts["queued"], np.maximum(woke, gap_lo[real]), gap_hi[real])
        by_kind: dict[str, int] = defaultdict(int)
        gaps: list[tuple[int, str, int, int, int, int]] = []  # pieces: time in the steps, kind, ops, span
        whole: list[tuple[int, str, int, int]] = []  # each gap: time in the steps, as told, the ops around it
        for j, g in enumerate(real.tolist()):
            lo_g, hi_g, woke_g = int(gap_lo[g]), int(gap_hi[g]), int(woke[j])
            # a copy is the cause only when it fills most of the gap (a 1 us memset is not)
            if 2 * transfer_time[j] >= hi_g - lo_g:
                pieces = [(lo_g, hi_g, TRANSFER)]
            elif woke_g >= 0 and hi_g - woke_g < min_gap:
                pieces = [(lo_g, hi_g, SYNCED)]
            elif woke_g >= 0:
                # the host came out of the synchronization early in the gap, and what it did next kept the GPU
                # idle: that rest is told by what followed (a 5 us sync before 5 ms of Python is no sync's wait)
                rest = (woke_g, hi_g, QUEUED if 2 * queued_after[j] >= hi_g - woke_g else HOST)
                pieces = [(lo_g, woke_g, SYNCED), rest] if woke_g > lo_g else [(lo_g, hi_g, rest[2])]
            elif 2 * queued[j] >= hi_g - lo_g:
                if lead and g == 0:
                    # the first kernel launched and waited with nothing recorded running: the GPU was busy with
                    # work queued before the recording (34.8 ms of a 114 ms public pass), not idle
                    continue
                pieces = [(lo_g, hi_g, QUEUED)]
            else:
                pieces = [(lo_g, hi_g, HOST)]
            gap_ns, given, told = int(in_steps[g]), 0, []
            for n, (a, b, kind) in enumerate(pieces):
                # each piece's share of the gap's time inside the steps (in proportion to its length), the last
                # what the others leave: the pieces add up to the gap
                ns = gap_ns - given if n == len(pieces) - 1 else gap_ns * (b - a) // (hi_g - lo_g)
                given += ns
                by_kind[kind] += ns
                gaps.append((ns, kind, int(before_op[g]), int(after_op[g]), a, b))
                told.append(f"{duration(ns)} {kind}" if len(pieces) > 1 else kind)
            whole.append((gap_ns, ", then ".join(told), int(before_op[g]), int(after_op[g])))
        total = sum(by_kind.values())
        if worst is None or total > worst[0]:
            worst = (total, int(device), dict(by_kind), gaps, whole)
    window = hi - lo
    if worst is None or worst[0] == 0:
        return []
    recorded_total, dev, recorded_kinds, gaps, whole = worst
    total, by_kind, window, basis = _unprofiled(ctx, recorded_total, recorded_kinds, window)
    if total <= 0 or total < ctx.t.idle_min_share * window:
        return []
    whole.sort(key=lambda gap: -gap[0])
    seen = [
        f"GPU {dev}: {len(whole)} gaps with no kernel running, of at least {ctx.t.idle_min_gap_us:.0f} us, "
        f"{duration(recorded_total)} as recorded over {ctx.step_count} step(s); {basis}"
    ]
    host = _host_meanwhile(ctx, gaps)
    seen += host.seen
    parts_said, advice = _host_advice(ctx, gaps)
    seen += parts_said
    seen += [f"{duration(v)} {kind}" for kind, v in sorted(by_kind.items(), key=lambda kv: -kv[1]) if v > 0]
    seen += [
        f"gap of {duration(d)} ({told}) "
        + ("from the step's start" if before == STEP_START else f"after {ctx.line_of_op(before)}")
        + f", before {ctx.line_of_op(after)}"
        for d, told, before, after in whole[:3]
    ]
    main_kind = max(by_kind, key=lambda kind: by_kind[kind])
    drawn = _Advice(host.fix, advice)
    found = Finding(
        id="idle-gaps",
        title=f"GPU idle {100 * total / window:.0f}% of the steps in gaps, mostly {main_kind}",
        cost_ns=int(total),
        seen=seen,
        where=list(dict.fromkeys([*host.where, *(ctx.line_of_op(after) for _, _, _, after in whole)]))[:3],
        why="While no kernel is queued, the GPU does nothing; the time shows up in every step.",
        fix=drawn.fix(frozenset(), main_kind),
        numbers={
            "idle_ns": float(total),
            "window_ns": float(window),
            **{k.replace(" ", "_") + "_ns": float(v) for k, v in by_kind.items()},
        },
    )
    # where data-loading or allocator-churn take the host's gaps (findings.causes), the advice is for the rest:
    # the DataLoader's half of a TensorRT loop's gaps went to data-loading, and idle-gaps still said "use workers"
    found.set_advice(drawn)
    return [found]


def _drained_by_a_sync(sync_start: I64Array, sync_end: I64Array, gap_lo: I64Array, gap_hi: I64Array) -> I64Array:
    """For each gap: when the host came out of the synchronization it was blocked in when the gap began, where
    it came out within the gap (the GPU drained its queue while the host waited); -1 where none did. A
    synchronization begun inside the gap (a pageable copy after the host's own work) did not make it: the
    host's work before it did. `sync_start`/`sync_end` sorted by end."""
    first = np.searchsorted(sync_end, gap_lo, side="left")
    last = np.searchsorted(sync_end, gap_hi, side="right")
    woke = np.full(len(gap_lo), -1, dtype=np.int64)
    for j, (a, b, lo) in enumerate(zip(first.tolist(), last.tolist(), gap_lo.tolist(), strict=True)):
        draining = np.flatnonzero(sync_start[a:b] <= lo)
        if len(draining):
            woke[j] = int(sync_end[a + int(draining[-1])])  # the last to return: the host waited until then
    return woke


def _host_meanwhile(ctx: Context, gaps: list[tuple[int, str, int, int, int, int]]) -> Meanwhile:
    """What the host was doing during the gaps in which it launched nothing (see `findings.meanwhile`)."""
    host_gaps = [(lo, hi) for _, kind, _, _, lo, hi in gaps if kind == HOST]
    lo = np.array([g[0] for g in host_gaps], dtype=np.int64)
    hi = np.array([g[1] for g in host_gaps], dtype=np.int64)
    return host_meanwhile(ctx, lo, hi)


# the step decomposition's host parts (analyses.timeline.step_time.HOST_PARTS), as idle-gaps names them
_HOST_PARTS = {
    "allocator": "allocating or freeing device memory",
    "cuda_api": "in other CUDA calls",
    "data_loading": "in the DataLoader",
    "compile": "compiling or checking guards",
    "dispatch": "in torch ops",
    "python": "in Python outside torch ops",
}


# what to do about the host's time in each part, when the gaps' host time is mostly there
_PART_FIXES = {
    "allocator": "Keep the allocator's cache: no torch.cuda.empty_cache() in the loop, tensors of the same sizes "
    "from step to step (or allocated once and reused), and PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True "
    "where memory is tight.",
    "cuda_api": "Move the CUDA calls the host makes between kernels (device queries, attribute lookups, module "
    "loads) out of the loop; a kernel launch of milliseconds is its module loading on first use, paid once: "
    "warm up before the steps you time or record.",
    "data_loading": "Prepare the next batch in a DataLoader with workers and pin_memory, so it is ready when "
    "the step starts.",
    "compile": "Stop the recompilations and guard failures (TORCH_LOGS=recompiles says why); mark the sizes "
    "that change as dynamic.",
    "dispatch": "Launch fewer, larger ops: fuse the small ones (torch.compile), batch the work, or replay the "
    "step as a CUDA graph.",
    "python": "Move the Python work between GPU ops off the critical path, or overlap it with GPU work by "
    "launching the GPU work first.",
}
# a part with at least this share of the gaps' host time is named in the fix
_PART_FIX_SHARE = 0.3
# a trace recorded with the GPU's activity alone: the host's time outside CUDA calls is `python` by elimination
_UNRECORDED_HOST = "outside CUDA calls, in work the trace did not record (it holds no CPU ops)"
_UNRECORDED_HOST_FIX = (
    "The trace holds no CPU ops, so what the host did while the GPU waited is unknown: record it again with "
    "activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA] (with_stack=True names the lines)."
)


@dataclass(frozen=True)
class _PartsAdvice:
    """The step decomposition's parts of the host's gaps, and what to do about each, so that the advice can
    be drawn again for what other findings leave (`parts_fix`)."""

    spent: tuple[tuple[str, int], ...]  # each host part's time in the gaps
    fixes: tuple[tuple[str, str], ...]  # each part's advice here (dispatch's by what kind of op holds it)

    def parts_fix(self, owned: frozenset[str] = frozenset()) -> str:
        """The advice for the parts holding most of the host's time ('' when none does), leaving out the
        `owned` parts, whose own findings give theirs; the share that names a part is of what those leave."""
        spent, fixes = dict(self.spent), dict(self.fixes)
        rest = sum(ns for part, ns in spent.items() if part not in owned)
        main = sorted(
            (p for p, ns in spent.items() if 0 < ns >= _PART_FIX_SHARE * rest and p not in owned),
            key=lambda p: -spent[p],
        )[:2]
        return " ".join(fixes[p] for p in main)


@dataclass(frozen=True)
class _Advice:
    """What idle-gaps' fix is drawn from (`Finding.refix`): the sampled lines' advice, and the parts'."""

    sampled_fix: str
    parts: _PartsAdvice | None

    def fix(self, owned: frozenset[str], kind: str) -> str:
        # the sampled lines' advice is for all of the host's gaps: where a finding took a part, the parts' is drawn
        sampled = "" if owned else self.sampled_fix
        return _fix(kind, sampled, self.parts.parts_fix(owned) if self.parts else "")


def _host_parts(ctx: Context, gaps: list[tuple[int, str, int, int, int, int]]) -> tuple[list[str], str]:
    """Where the host was during the gaps it launched nothing in (the step decomposition's parts), and what
    to do about the parts that hold most of that time ('' when none does)."""
    said, advice = _host_advice(ctx, gaps)
    return said, advice.parts_fix() if advice else ""


def _host_advice(
    ctx: Context, gaps: list[tuple[int, str, int, int, int, int]]
) -> tuple[list[str], _PartsAdvice | None]:
    """What `_host_parts` says, and the parts' advice (None where the host's gaps hold no time)."""
    host_gaps = [(lo, hi) for _, kind, _, _, lo, hi in gaps if kind == HOST]
    if not host_gaps:
        return [], None
    lo = np.array([g[0] for g in host_gaps], dtype=np.int64)
    hi = np.array([g[1] for g in host_gaps], dtype=np.int64)
    spent = {part: int(coverage(*ctx.parts[part], lo, hi).sum()) for part in HOST_PARTS}
    total = sum(spent.values())
    if not total:
        return [], None
    on_cpu = _cpu_ops(ctx, lo, hi) if spent["dispatch"] else None
    if on_cpu is not None and on_cpu.ns < _CPU_OPS_SHARE * spent["dispatch"]:
        on_cpu = None  # mostly ops that launch: the dispatch advice stands
    # a trace without the host's ops: its time outside CUDA calls is `python` by elimination, its work unknown
    unrecorded = spent["python"] > 0 and not host_ops_recorded(ctx.profile)
    named = on_cpu is not None and spent["dispatch"] >= _PART_FIX_SHARE * total  # its advice is drawn from them
    said = [
        f"{_UNRECORDED_HOST if p == 'python' and unrecorded else _HOST_PARTS[p]} {100 * spent[p] / total:.0f}%"
        + (f" ({100 * on_cpu.ns / total:.0f}% in ops that ran on the CPU and launched no GPU work: {on_cpu.names})"
           if p == "dispatch" and on_cpu is not None and named else "")
        for p in HOST_PARTS
        if spent[p] >= 0.05 * total
    ]  # fmt: skip
    fixes = tuple((p, _part_fix(p, ctx, on_cpu, unrecorded)) for p in HOST_PARTS if spent[p])
    advice = _PartsAdvice(tuple(spent.items()), fixes)
    return ["while the host launched nothing, it was " + ", ".join(said)], advice


def _part_fix(part: str, ctx: Context, on_cpu: _CpuOps | None, unrecorded: bool) -> str:
    """What to do about the host's time in one part; for dispatch, what kind of op holds it."""
    if part == "dispatch" and ctx.graph_captures:
        return CAPTURING
    if part == "dispatch" and on_cpu is not None:
        return _CPU_OPS_FIX.format(names=on_cpu.bare)
    if part == "python" and unrecorded:
        return _UNRECORDED_HOST_FIX
    return _PART_FIXES[part]


# Of the host's time in torch ops during the gaps, the share in ops that launched no GPU work (ops computing
# on CPU tensors) above which the advice is theirs: a loop making its input with torch.randn on the CPU each
# step (10 ms, longer than its 6.9 ms kernel; a public T4 notebook trace) was told to fuse its ops.
_CPU_OPS_SHARE = 0.5
_CPU_OPS_FIX = (
    "The host computes with torch on the CPU between the GPU's work ({names}): create those tensors on the GPU "
    "(device='cuda'), or prepare them ahead of the step that uses them (in a DataLoader worker, or while the GPU "
    "runs the step before)."
)


@dataclass(frozen=True)
class _CpuOps:
    ns: int  # their time in the gaps, as the step decomposition's dispatch part has it
    names: str  # the heaviest, by that time, with it
    bare: str  # the same names alone (a fix's text takes no quantities)


def _cpu_ops(ctx: Context, lo: I64Array, hi: I64Array) -> _CpuOps | None:
    """The host's time in the gaps [lo, hi) spent in top-level torch ops that launched no kernel and no copy
    (ops on CPU tensors), within the step decomposition's dispatch part; None without any."""
    ops = ctx.profile.table("ops")
    if ops.num_rows == 0:
        return None
    cpu = (ctx.profile.column("ops", "depth") == 0) & ~ops_handing_gpu_work(ctx.profile)
    if not cpu.any():
        return None
    chosen = np.flatnonzero(cpu)
    starts, ends = ctx.profile.column("ops", "start_ns")[chosen], ctx.profile.column("ops", "end_ns")[chosen]
    in_gaps = uncovered((lo, hi), uncovered((lo, hi), merged(starts, ends)))
    dispatch = ctx.parts["dispatch"]
    both = uncovered(in_gaps, uncovered(in_gaps, dispatch))
    ns = length(both)
    if ns <= 0:
        return None
    by_name: dict[str, int] = defaultdict(int)
    for op, ns_in in zip(chosen.tolist(), coverage(*both, starts, ends).tolist(), strict=True):
        if ns_in > 0:
            by_name[ctx.op_name(op)] += int(ns_in)
    heaviest = sorted(by_name.items(), key=lambda kv: -kv[1])[:2]
    return _CpuOps(ns, ", ".join(f"{n} {duration(v)}" for n, v in heaviest), ", ".join(n for n, _ in heaviest))


def _fix(main_kind: str, sampled_fix: str, parts_fix: str) -> str:
    """The advice for the gaps: for the host's, what the sampled lines say (tenprof's runs), else what the
    host was doing by the step decomposition, else the general advice."""
    if main_kind != HOST:
        return _FIXES[main_kind]
    return sampled_fix or parts_fix or _FIXES[main_kind]


def _unprofiled(ctx: Context, total: int, by_kind: dict[str, int], window: int) -> tuple[int, dict[str, int], int, str]:
    """The idle time the program has un-profiled, split by cause, and the time it is a share of.

    Where the overhead is known (measured, or estimated), the idle per step is what is left of the
    un-profiled step once the GPU's work is done; the waits on a synchronization or a transfer are the
    GPU's and stay (up to that idle), the rest is the host not launching work. The idle the profiler's
    own CPU time added is dropped: a gap that exists only because of the profiler raises nothing."""
    o = ctx.overhead
    idle_per_step = o.unprofiled_idle_per_step_ns
    if idle_per_step is None or o.unprofiled_step_ns is None:
        return (
            total,
            by_kind,
            window,
            (
                f"{100 * total / window if window else 0:.0f}% of the GPU time span, as recorded; the profiler's "
                f"overhead is unknown ({o.note}), so un-profiled some of this idle time is not there"
            ),
        )
    steps = max(ctx.step_count, 1)
    # Un-profiled there is no more idle than recorded less what the profiler added per step, and no more
    # than the un-profiled step leaves the GPU (the second counts short gaps too, hence both bounds).
    added = max(0.0, (o.profiled_step_ns or 0.0) - o.unprofiled_step_ns) * steps
    left = idle_per_step * steps
    idle = int(max(0.0, min(total - added, left)))
    waits = {kind: v for kind, v in by_kind.items() if kind != HOST}
    scale = min(1.0, idle / sum(waits.values())) if sum(waits.values()) else 1.0
    corrected = {kind: int(v * scale) for kind, v in waits.items()}
    corrected[HOST] = max(0, idle - sum(corrected.values()))
    unprofiled_window = int(o.unprofiled_step_ns * steps)
    share = 100 * idle / unprofiled_window if unprofiled_window else 0.0
    basis = (
        f"un-profiled ({o.method}) {duration(idle)} = {share:.0f}% of {steps} step(s) of "
        f"{duration(int(o.unprofiled_step_ns))}, the rest being the profiler's own CPU time"
    )
    return idle, corrected, unprofiled_window, basis


_FIXES = {
    HOST: "Move the CPU work between these lines off the critical path: prepare the next "
    "batch in a DataLoader with workers and pin_memory, avoid Python work between GPU ops, or overlap it "
    "with GPU work by launching the GPU work first.",
    SYNCED: "Remove the synchronization (see the sync-in-loop finding): keep values on "
    "the GPU and read them once, after the loop.",
    QUEUED: "The next kernel was launched before the gap and waited: on an event, another stream, or a graph's "
    "dependencies. Look at what it waits for (cudaStreamWaitEvent, a collective on another stream) and overlap "
    "independent work with it; the host is not the cause.",
    TRANSFER: "Copy from pinned memory with non_blocking=True, on a side stream, ahead of use, "
    "so the copy overlaps compute.",
}
