"""Many ranks, one report: per-rank summaries merged as a stream, imbalance, stragglers and where they
fall behind.

Each rank's profile (`<out>/rankNNNNN/`) is opened, reduced to a `RankSummary` and its per-line times,
and dropped before the next one is opened: merging holds one rank's tables at a time, and its cost grows
linearly with the number of ranks. Cross-rank tallies that need rows of every rank (kernel totals) run
in DuckDB over the ranks' Parquet files (`rank*/timeline/kernels.parquet`), the same files Spark or Dask
read.

Per rank and per complete step (medians over steps): step time, compute (a non-collective kernel runs),
communication (a collective kernel runs: NCCL; on a rank without GPU work, a gloo collective is in
flight: its ranges, during which the script waits), exposed communication (communication while no compute
kernel runs, HTA's definition), transfers, idle; overlap = 1 - exposed / communication; and the host's
time inside torch ops (top-level ops, overlaps once). Without marked steps the whole profiled span is one
step: from the first GPU work to the last, or, with no GPU work (a CPU run), from the first op to the last.

Stragglers. With collectives every step all ranks' steps take the same time, and the rank the others
wait for is the one that waits least inside collectives. A rank is named a straggler when its collective
time per step is under half the median of the other ranks' and the difference is at least 10% of the
step, or when its step time is over 1.2x the median step of all ranks (ranks that do not synchronize).
Where it falls behind: the line of the user's code whose GPU kernel time plus op CPU time per step
exceeds the other ranks' median the most.

Clocks. Ranks on one host share its clock (Kineto's timestamps), so their times are compared as they
are. For several hosts each rank's clock is shifted by the median, over its collective kernels, of the
difference between the end of its k-th collective and the end of rank 0's k-th: every rank issues the
same collectives in the same order (NCCL requires it) and a collective ends at nearly the same moment on
every rank (measured here on one host: within 5 us). The report states which method was used.

Findings. The first FIRST_FINDINGS findings paid every step (analyses.findings, as `tenprof report
--rank N` ranks them) of the first rank and of each straggler, at most FINDINGS_RANKS ranks, and of every
rank whose script stopped early (an out-of-memory error on one rank of many), however many: judging
them took about 60 ms a rank more on the 2-core development machine (209 against 145 ms a rank for 256
small ranks, benchmarks/merge_ranks.py), and the ranks of one job mostly share their findings; the others
are a `--rank N` away.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tenprof.analyses.compare.collectives import GroupArrivals, RankCollectives, align_and_compare, rank_collectives
from tenprof.analyses.findings import find_all, judging
from tenprof.analyses.op_kinds import is_collective
from tenprof.analyses.timeline.step_time import PARTS, host_collectives, step_time
from tenprof.analyses.timeline.summary import user_frame_of
from tenprof.core.intervals import coverage, merged
from tenprof.store.directory import rank_dirs
from tenprof.store.profile import Profile, load_profile

STRAGGLER_WAIT_RATIO = 0.5
STRAGGLER_MIN_STEP_SHARE = 0.1
STRAGGLER_STEP_RATIO = 1.2
FIRST_FINDINGS = 3
FINDINGS_RANKS = 4


@dataclass(frozen=True)
class RankFinding:
    """One of a rank's first findings: its check, title, cost per analysed step and first line."""

    id: str
    title: str
    cost_per_step_ns: float
    where: str
    urgent: bool = False  # the rank failed or will (out of memory): no cost of time


@dataclass
class RankSummary:
    rank: int
    host: str
    pid: int
    device: str
    steps: int
    step_ns: float
    compute_ns: float
    communication_ns: float
    exposed_ns: float
    transfers_ns: float
    idle_ns: float
    cpu_ops_ns: float = 0.0  # the host inside torch ops (top-level ops of any thread, overlaps once)
    marked: bool = True  # steps were marked (else `steps` is 1: the whole profiled span)
    windows: tuple[list[int], list[int]] = ([], [])  # the steps' [start, end) on this rank's clock
    clock_shift_ns: int = 0  # added to this rank's timestamps to put it on the reference rank's clock
    # where its mean steady step went (analyses.timeline.step_time); "capture" only where that was known
    parts: dict[str, float] = field(default_factory=dict)
    # its first findings paid every step: judged for the first rank, the ranks cut short and the stragglers
    # only (FINDINGS_RANKS); None for a rank not judged, which is not a rank without findings
    findings: list[RankFinding] | None = None
    cut_short: str = ""  # why its script stopped early (an out-of-memory error, a crash, Ctrl-C), '' when it did not

    @property
    def outside_ops_ns(self) -> float:
        """The step's time the host spent outside torch ops (its own Python, waiting, the profiler)."""
        return max(0.0, self.step_ns - self.cpu_ops_ns)

    overlap: float = math.nan  # the median over the steps of each step's 1 - exposed / communication


@dataclass(frozen=True)
class Straggler:
    rank: int
    reason: str
    line: str
    line_excess_ns: float  # per step, over the other ranks' median at that line
    op: str = ""  # the op at that line with the largest excess


@dataclass
class RanksReport:
    ranks: list[RankSummary]
    hosts: list[str]
    devices: list[str]
    clock_method: str
    stragglers: list[Straggler]
    arrivals: list[GroupArrivals] = field(default_factory=list)  # who arrived last, per process group


def rank_summary(profile: Profile, rank: int) -> RankSummary:
    meta = profile.meta
    k, t, steps = profile.table("kernels"), profile.table("transfers"), profile.table("steps")
    names = k.column("name").to_pylist()
    comm = np.array([is_collective(n) for n in names], dtype=bool)
    ks, ke = k.column("start_ns").to_numpy(), k.column("end_ns").to_numpy()
    ts, te = t.column("start_ns").to_numpy(), t.column("end_ns").to_numpy()
    complete = steps.column("complete").to_numpy(zero_copy_only=False) if steps.num_rows else np.zeros(0, bool)
    lo = steps.column("start_ns").to_numpy()[complete] if steps.num_rows else np.zeros(0, np.int64)
    hi = steps.column("end_ns").to_numpy()[complete] if steps.num_rows else np.zeros(0, np.int64)
    ops = profile.table("ops")
    top = ops.column("depth").to_numpy() == 0
    os_, oe = ops.column("start_ns").to_numpy()[top], ops.column("end_ns").to_numpy()[top]
    marked = bool(len(lo))
    if not len(lo) and len(ks):  # no steps marked: the whole profiled span is one step
        lo, hi = np.array([min(ks.min(), ts.min() if len(ts) else ks.min())]), np.array([ke.max()])
    elif not len(lo) and len(os_):  # nor any GPU work: the span of its ops (a CPU run)
        lo, hi = np.array([os_.min()]), np.array([oe.max()])
    compute = coverage(ks[~comm], ke[~comm], lo, hi)
    communication = coverage(ks[comm], ke[comm], lo, hi)
    with_comm = coverage(ks, ke, lo, hi)
    busy = coverage(np.concatenate([ks, ts]), np.concatenate([ke, te]), lo, hi)
    # each step's own overlap, then their median: medians of exposed and of communication taken apart come
    # from different steps (52% against steps that overlap 40-54%, on a public A100 trace)
    talked = communication > 0
    exposed = (with_comm - compute)[talked]
    overlap = float(np.median(1.0 - exposed / communication[talked])) if talked.any() else math.nan
    exposed_all, idle = with_comm - compute, (hi - lo) - busy
    if not len(ks):  # a CPU process group (gloo): its collectives run on its threads while the script waits
        communication = coverage(*merged(*host_collectives(profile)), lo, hi)
        exposed_all, idle = communication, (hi - lo) - communication  # no GPU work to overlap it with
    # the device its kernels ran on (the current device at the end can differ from the one used)
    devices = k.column("device").to_numpy()
    used = int(np.bincount(devices[devices >= 0]).argmax()) if (devices >= 0).any() else meta.run.cuda_device
    gpu = next((g for g in meta.gpus if g.index == used), None) if used >= 0 else None
    device = f"GPU {gpu.index}: {gpu.name}" if gpu is not None else ("CPU" if not meta.gpus else "GPU ?")

    def med(values: np.ndarray) -> float:
        return float(np.median(values)) if len(values) else 0.0

    return RankSummary(
        rank=rank,
        host=meta.host,
        pid=meta.pid,
        device=device,
        steps=len(lo),
        step_ns=med(hi - lo),
        compute_ns=med(compute),
        communication_ns=med(communication),
        exposed_ns=med(exposed_all),
        transfers_ns=med(busy - with_comm),
        idle_ns=med(idle),
        cpu_ops_ns=med(coverage(os_, oe, lo, hi)),
        marked=marked,
        windows=(lo.tolist(), hi.tolist()),
        overlap=overlap,
        parts=_step_parts(profile),
        cut_short=meta.run.cut_short_reason if meta.run.cut_short else "",
    )


def _first_findings(profile: Profile) -> list[RankFinding]:
    """The rank's first findings paid every step (one-offs such as cold start left out), most costly first."""
    ctx = judging(profile)
    steps = max(ctx.step_count, 1)
    return [
        RankFinding(f.id, f.title, f.cost_ns / steps, f.where[0] if f.where else "", f.urgent)
        for f in find_all(profile, ctx=ctx)
        if not f.once
    ][:FIRST_FINDINGS]


def _step_parts(profile: Profile) -> dict[str, float]:
    """Each part of the rank's mean steady step (the step decomposition), in nanoseconds."""
    result = step_time(profile)
    if not result.steps:
        return {}
    # the profiler's own work only where it was measured or estimated: left out, not 0, where it was not
    return {part: result.mean(part) for part in PARTS if part != "capture" or result.capture_method}


def line_times(profile: Profile, windows: tuple[list[int], list[int]]) -> dict[tuple[str, str], float]:
    """(user line, op) -> GPU kernel time plus op CPU self time per step, and the host's sampled time
    outside torch ops (op OUTSIDE_OPS): the median over the steps (so the first step's start-up work does
    not count), of the ops and samples inside each step."""
    ops = profile.table("ops")
    frames = profile.table("frames")
    user = user_frame_of(profile)
    files, numbers = frames.column("file").to_pylist(), frames.column("line").to_pylist()
    op_frame = ops.column("frame_id").to_numpy()
    op_name = ops.column("name").to_pylist()
    lo, hi = np.asarray(windows[0], dtype=np.int64), np.asarray(windows[1], dtype=np.int64)
    if not len(lo):
        return {}
    start = ops.column("start_ns").to_numpy()
    step_of = np.searchsorted(lo, start, side="right") - 1
    step_of[(step_of < 0) | (start >= hi[np.maximum(step_of, 0)])] = -1

    def line_of(frame: int) -> str:
        u = int(user[frame]) if frame >= 0 else -1
        return f"{files[u]}:{numbers[u]}" if u >= 0 else ""

    per_step: dict[tuple[str, str], np.ndarray] = {}

    def add(op: int, ns: float) -> None:
        line = line_of(int(op_frame[op]))
        if line and step_of[op] >= 0:
            per_step.setdefault((line, str(op_name[op])), np.zeros(len(lo)))[step_of[op]] += ns

    k = profile.table("kernels")
    for op, duration in zip(k.column("op_id").to_pylist(), k.column("duration_ns").to_pylist(), strict=True):
        if op is not None and op >= 0:
            add(int(op), float(duration))
    for op, ns in enumerate(ops.column("self_duration_ns").to_numpy().tolist()):
        add(op, float(ns))
    _add_host_time(profile, lo, hi, line_of, per_step)
    return {key: float(np.median(v)) for key, v in per_step.items()}


OUTSIDE_OPS = "Python, outside torch ops"  # the "op" of host time no torch op covers


def _add_host_time(
    profile: Profile,
    lo: np.ndarray,
    hi: np.ndarray,
    line_of: Callable[[int], str],
    per_step: dict[tuple[str, str], np.ndarray],
) -> None:
    """The host sampler's time on the main thread outside any torch op (op CPU times count the rest),
    per step and line: a slow input pipeline, a sleep, logging (issue 19). Nothing without samples."""
    from tenprof.analyses.timeline.host import main_thread

    samples = profile.table("host_samples")
    thread = main_thread(profile)
    if samples.num_rows == 0 or thread is None:
        return
    ts = samples.column("ts_ns").to_numpy()
    step = np.searchsorted(lo, ts, side="right") - 1
    keep = (step >= 0) & (ts < hi[np.maximum(step, 0)]) & (samples.column("op_id").to_numpy() < 0)
    keep &= samples.column("thread_id").to_numpy() == thread
    frame, weight = samples.column("frame_id").to_numpy(), samples.column("weight_ns").to_numpy()
    for i in np.flatnonzero(keep).tolist():
        line = line_of(int(frame[i]))
        if line:
            per_step.setdefault((line, OUTSIDE_OPS), np.zeros(len(lo)))[step[i]] += float(weight[i])


@dataclass(frozen=True)
class RankParts:
    """What the merged report needs of one rank, made from its profile alone (so anywhere: in this process
    or as a task of a cluster) and small: the profile itself is dropped."""

    summary: RankSummary
    lines: dict[tuple[str, str], float]
    collectives: RankCollectives


def rank_parts(directory: str, index: int) -> RankParts:
    """One rank's parts; `index` is its place among the ranks, its rank where its profile names none."""
    profile = load_profile(Path(directory))
    rank = profile.meta.rank if profile.meta.rank >= 0 else index
    summary = rank_summary(profile, rank)
    return RankParts(summary, line_times(profile, summary.windows), rank_collectives(profile, rank))


# each (rank directory, index) -> its parts, in the same order; by default in this process, one at a time
PartsOf = Callable[[list[tuple[str, int]]], list[RankParts]]


def ranks_report(out_dir: Path, parts_of: PartsOf | None = None) -> RanksReport:
    """Stream over the ranks' profiles under `out_dir` (see the module docstring); `parts_of` makes the
    ranks' parts elsewhere (the tasks of a cluster: report.ranks)."""
    directories = rank_dirs(out_dir)
    items = [(str(d), i) for i, d in enumerate(directories)]
    parts = parts_of(items) if parts_of is not None else [rank_parts(*item) for item in items]
    summaries = [p.summary for p in parts]
    lines = [p.lines for p in parts]
    collectives = [p.collectives for p in parts]
    hosts = sorted({s.host for s in summaries})
    alignment = align_and_compare(collectives)
    for summary in summaries:
        summary.clock_shift_ns = alignment.shifts.get(summary.rank, 0)
    stragglers = _stragglers(summaries, lines)
    straggling = {x.rank for x in stragglers}
    # a rank whose script stopped early (rank 3 of 4 out of memory) is judged whatever the limit: its first
    # finding is most likely why the job failed
    failed = [i for i, r in enumerate(summaries) if r.cut_short]
    judged = list(dict.fromkeys([0, *(i for i, r in enumerate(summaries) if r.rank in straggling)]))
    judged = list(dict.fromkeys([*judged[: max(FINDINGS_RANKS - len(failed), 1)], *failed]))
    for index in judged if summaries else []:
        summaries[index].findings = _first_findings(load_profile(directories[index]))
    return RanksReport(
        ranks=summaries,
        hosts=hosts,
        devices=sorted({f"{s.host} {s.device}" for s in summaries}),
        clock_method=alignment.method,
        stragglers=stragglers,
        arrivals=alignment.groups,
    )


def _stragglers(ranks: list[RankSummary], lines: list[dict[tuple[str, str], float]]) -> list[Straggler]:
    judged = [i for i, r in enumerate(ranks) if r.steps > 0 and r.step_ns > 0]  # ranks with a timeline
    if len(judged) < 2:
        return []
    step_median = float(np.median([ranks[i].step_ns for i in judged]))
    out: list[Straggler] = []
    for i in judged:
        r = ranks[i]
        others = [ranks[j] for j in judged if j != i]
        wait_others = float(np.median([o.communication_ns for o in others]))
        reason = ""
        if (
            wait_others > 0
            and r.communication_ns < STRAGGLER_WAIT_RATIO * wait_others
            and wait_others - r.communication_ns >= STRAGGLER_MIN_STEP_SHARE * r.step_ns
        ):
            reason = (
                f"the other ranks wait {wait_others / 1e6:.2f} ms per step in collectives, rank {r.rank} "
                f"{r.communication_ns / 1e6:.2f} ms: they wait for it"
            )
        elif step_median > 0 and r.step_ns > STRAGGLER_STEP_RATIO * step_median:
            reason = f"its step takes {r.step_ns / 1e6:.2f} ms, {r.step_ns / step_median:.2f}x the median rank's"
        if not reason:
            continue
        theirs = [lines[j] for j in judged if j != i]
        excess = {key: v - float(np.median([o.get(key, 0.0) for o in theirs])) for key, v in lines[i].items()}
        by_line: dict[str, float] = {}
        for (line, _), extra in excess.items():
            by_line[line] = by_line.get(line, 0.0) + extra
        line, extra = max(by_line.items(), key=lambda kv: kv[1], default=("", 0.0))
        op = max(((o, v) for (ln, o), v in excess.items() if ln == line), key=lambda kv: kv[1], default=("", 0.0))[0]
        out.append(Straggler(r.rank, reason, line, extra, op))
    return out
