"""Collectives across the ranks of a job: each rank's clock shift, estimated from the collectives themselves,
and who arrived last at each collective, per process group.

Each rank's collectives come from its `collectives` table: the process group and the collective's place
among the group's collectives on that rank (`seq`), from the NCCL kernels' args in the trace; the same
(group, seq) is the same collective on every rank of the group, as a communicator runs its collectives in
one order. A recording without those args (older ones) gives its collective kernels in start order, as
one group named '?'.

Clocks. The kernels of one collective end within microseconds of each other on every rank of its group
(measured on one host: within 5 us): none can finish before the last rank's data arrived. So the shift
that puts rank r on the reference rank's clock is the median, over the collectives it shares with a rank
q already placed, of (end on q + q's shift) - end on r. The reference is the lowest rank (shift 0); a
rank that shares no group with it is reached through ranks that do. The shifts are applied where the
ranks ran on several hosts, or where one exceeds SHARED_CLOCK_NS: ranks of one host read one clock,
whose disagreement is a few microseconds, so a larger estimate means the clocks were not shared.

Who arrived last. A collective's kernel starts on a rank when that rank's stream reaches it, and then
waits in the kernel for the other ranks. So each rank's arrival is its kernel's start (shifted), the
last to arrive is the latest start, and each rank's wait is the last arrival less its own. Only the
collectives every rank of the group in the profile holds are compared (a rank whose recording started
later holds fewer), and, where the ranks marked steps, only those that start in a steady step (past the
cold ones) on every rank of the group: a job's first collectives build its communicators and meet ranks
still loading, compiling or tuning, whose lateness is no straggler's (on four H200s, a balanced 2D job's
tensor-parallel groups read 5.5 ms of lateness a step over all its collectives). Per group: how many were
compared, and per rank the share of them at which it arrived last (alone: ranks within TIE_NS of the
latest arrived together, and none of them counts) and its mean wait: a slow tensor-parallel group is told
from a slow data-parallel one.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from tenprof.analyses.compare.bus_bandwidth import bus_factor, link_peak, message_bytes
from tenprof.analyses.op_kinds import is_collective
from tenprof.analyses.timeline.overhead import inside, recorded_steps, steady_windows
from tenprof.store.profile import Profile

I64 = npt.NDArray[np.int64]
SHARED_CLOCK_NS = 50_000  # a shift larger than this means the ranks' clocks were not one host's
TIE_NS = 1_000  # ranks arriving within this of the latest arrived together: none of them was last
BUS_MIN_BYTES = 1 << 20  # smaller messages are bound by latency: their bandwidth says little of the links
UNKNOWN_GROUP = "?"


@dataclass(frozen=True)
class RankCollectives:
    """One rank's collectives, in start order."""

    rank: int
    host: str
    group: list[str]
    description: dict[str, str]  # group -> what the job named it ('default_pg')
    seq: I64
    start_ns: I64
    end_ns: I64
    collective: list[str] = field(default_factory=list)  # allreduce, ... ('' where not said)
    nbytes: I64 = field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # as nccl-tests counts; -1
    group_size: dict[str, int] = field(default_factory=dict)  # group -> its ranks, where said
    gpu: str = ""  # the rank's GPU model, as CUDA names it
    # per collective: it starts in one of the rank's steady steps (all True where the rank marked none)
    steady: npt.NDArray[np.bool_] | None = None
    steady_steps: int = 0  # the rank's steady steps (0: none marked)

    def keys(self) -> dict[tuple[str, int], int]:
        """(group, seq) -> the collective's row."""
        return {(g, int(s)): i for i, (g, s) in enumerate(zip(self.group, self.seq.tolist(), strict=True))}


def rank_collectives(profile: Profile, rank: int) -> RankCollectives:
    """A rank's collectives from its profile (see the module)."""
    kernels = profile.table("kernels")
    start, end = kernels.column("start_ns").to_numpy(), kernels.column("end_ns").to_numpy()
    table = profile.table("collectives")
    # the GPU it used (an imported trace names no current device: then the first it lists)
    used = [g.name for g in profile.meta.gpus if g.index == profile.meta.run.cuda_device] or [
        g.name for g in profile.meta.gpus[:1]
    ]
    gpu = used[0] if used else ""
    windows = _steady_windows(profile)
    if table.num_rows:
        ids = table.column("kernel_id").to_numpy()
        groups = [str(g) for g in table.column("group").to_pylist()]
        descriptions = dict(zip(groups, (str(d) for d in table.column("group_description").to_pylist()), strict=True))
        sizes = table.column("group_size").to_numpy()
        names = [str(c) for c in table.column("collective").to_pylist()]
        nbytes = [
            message_bytes(c, i, o, t)
            for c, i, o, t in zip(
                names,
                table.column("in_elements").to_pylist(),
                table.column("out_elements").to_pylist(),
                table.column("element_type").to_pylist(),
                strict=True,
            )
        ]
        return RankCollectives(
            rank,
            profile.meta.host,
            groups,
            descriptions,
            table.column("seq").to_numpy(),
            start[ids],
            end[ids],
            names,
            np.array(nbytes, dtype=np.int64),
            {g: int(s) for g, s in zip(groups, sizes.tolist(), strict=True) if s > 0},
            gpu,
            _starting_in(windows, start[ids]),
            len(windows[0]) if windows else 0,
        )
    ids = np.flatnonzero([is_collective(n) for n in kernels.column("name").to_pylist()])
    return RankCollectives(
        rank,
        profile.meta.host,
        [UNKNOWN_GROUP] * len(ids),
        {UNKNOWN_GROUP: "no groups in the trace: its collective kernels in order"} if len(ids) else {},
        np.arange(len(ids), dtype=np.int64),
        start[ids],
        end[ids],
        [""] * len(ids),
        np.full(len(ids), -1, dtype=np.int64),
        {},
        gpu,
        _starting_in(windows, start[ids]),
        len(windows[0]) if windows else 0,
    )


def _steady_windows(profile: Profile) -> tuple[I64, I64] | None:
    """The rank's steady steps' [start, end) (all its recorded complete ones where none is past the cold
    ones); None where it marked no step."""
    lo, hi = steady_windows(profile)
    if not len(lo):
        steps = profile.table("steps")
        chosen = recorded_steps(profile)
        lo, hi = steps.column("start_ns").to_numpy()[chosen], steps.column("end_ns").to_numpy()[chosen]
    return (lo, hi) if len(lo) else None


def _starting_in(windows: tuple[I64, I64] | None, starts: I64) -> npt.NDArray[np.bool_]:
    """Whether each time falls in one of the windows (all True without windows)."""
    return np.ones(len(starts), dtype=bool) if windows is None else inside(*windows, starts)


@dataclass(frozen=True)
class GroupArrivals:
    """Who arrived last at the collectives of one process group."""

    group: str
    description: str
    ranks: list[int]
    compared: int  # collectives every rank of the group holds
    last_share: dict[int, float]  # rank -> share of the compared collectives at which it arrived last
    mean_wait_ns: dict[int, float]  # rank -> its mean wait for the last rank
    # what the last rank's lateness cost: over the compared collectives, the last arrival less the one
    # before it (had the last rank come with the others, each such collective would have ended that much
    # sooner on every rank: a bound on what the step would gain)
    late_ns: float = 0.0
    steps: float = 0.0  # the steps late_ns is spread over: the ranks' steady steps where compared in them
    # nccl-tests' bus bandwidth (analyses.compare.bus_bandwidth), the median over the compared collectives
    # of BUS_MIN_BYTES or more, from their time after the last arrival; None where the trace gives no sizes
    bus_gbs: float | None = None
    bus_collectives: int = 0
    link: str = ""  # the link between the group's GPUs and its peak one way, where known
    link_peak_gbs: float | None = None

    @property
    def most_often_last(self) -> int:
        """The rank most often last (the lowest of equals), -1 where none ever was."""
        if not any(self.last_share.values()):
            return -1
        return max(self.last_share, key=lambda r: (self.last_share[r], -r))


@dataclass(frozen=True)
class Alignment:
    shifts: dict[int, int]  # rank -> the shift added to its timestamps (0 where not applied)
    estimated: dict[int, int]  # rank -> the shift estimated, applied or not (ranks reached only)
    applied: bool
    method: str
    groups: list[GroupArrivals] = field(default_factory=list)


def align_and_compare(ranks: list[RankCollectives]) -> Alignment:
    """Each rank's clock shift and, with it, who arrived last at each group's collectives."""
    estimated = _estimate_shifts(ranks)
    hosts = {r.host for r in ranks if r.host}  # a rank killed before it said its host: unknown, not another
    largest = max((abs(s) for s in estimated.values()), default=0)
    applied = len(hosts) > 1 or largest > SHARED_CLOCK_NS
    if len(ranks) < 2 or not any(len(r.seq) for r in ranks):
        method = "no collectives to align the clocks on: none applied"
        applied = False
    elif applied:
        why = f"{len(hosts)} hosts" if len(hosts) > 1 else f"one host, but a shift of {largest / 1e3:.0f} us"
        method = (
            f"{why}: each rank shifted onto rank {min(r.rank for r in ranks)}'s clock by the median difference between "
            "the ends of the collectives they share (matched by process group and order)"
        )
    else:
        method = (
            f"one host: the ranks share its clock (the shifts the collectives' ends give are within "
            f"{largest / 1e3:.1f} us); none applied"
        )
    shifts = {r.rank: (estimated.get(r.rank, 0) if applied else 0) for r in ranks}
    return Alignment(shifts, estimated, applied, method, _arrivals(ranks, shifts))


def _estimate_shifts(ranks: list[RankCollectives]) -> dict[int, int]:
    """Shift per rank reached from the lowest one through shared collectives (see the module)."""
    if not ranks:
        return {}
    keys = [r.keys() for r in ranks]
    first = min(range(len(ranks)), key=lambda i: ranks[i].rank)
    shift: dict[int, int] = {first: 0}
    queue = deque([first])
    while queue:  # breadth first: each rank placed from the first placed rank it shares collectives with
        q = queue.popleft()
        for r in range(len(ranks)):
            if r in shift:
                continue
            shared = keys[q].keys() & keys[r].keys()
            if not shared:
                continue
            rows_q = np.array([keys[q][k] for k in shared], dtype=np.int64)
            rows_r = np.array([keys[r][k] for k in shared], dtype=np.int64)
            gaps = ranks[q].end_ns[rows_q] + shift[q] - ranks[r].end_ns[rows_r]
            shift[r] = int(np.median(gaps))
            queue.append(r)
    return {ranks[i].rank: s for i, s in shift.items()}


def _arrivals(ranks: list[RankCollectives], shifts: dict[int, int]) -> list[GroupArrivals]:
    groups: dict[str, list[int]] = {}
    for i, r in enumerate(ranks):
        for g in dict.fromkeys(r.group):
            groups.setdefault(g, []).append(i)
    found = []
    for group, members in sorted(groups.items()):
        if len(members) < 2:
            continue
        keys = [ranks[i].keys() for i in members]
        seqs = sorted(set.intersection(*({s for g, s in k if g == group} for k in keys)))
        steady = [
            s for s in seqs if all(_is_steady(ranks[i], k[(group, s)]) for i, k in zip(members, keys, strict=True))
        ]
        marked = [ranks[i].steady_steps for i in members if ranks[i].steady_steps]
        if steady and marked:  # compared in the steady steps only (see the module)
            seqs = steady
        if not seqs:
            continue
        arrival = np.empty((len(seqs), len(members)), dtype=np.int64)
        for column, (i, k) in enumerate(zip(members, keys, strict=True)):
            rows = np.array([k[(group, s)] for s in seqs], dtype=np.int64)
            arrival[:, column] = ranks[i].start_ns[rows] + shifts.get(ranks[i].rank, 0)
        last = np.argmax(arrival, axis=1)
        wait = arrival.max(axis=1, keepdims=True) - arrival
        ordered = np.sort(arrival, axis=1)
        alone = ordered[:, -1] - ordered[:, -2] > TIE_NS  # one rank clearly last, not several together
        counts = np.bincount(last[alone], minlength=len(members))
        rank_ids = [ranks[i].rank for i in members]
        bus, moved = _bus_gbs(ranks, members, group, seqs, arrival.max(axis=1), shifts)
        one_host = len({ranks[i].host for i in members}) == 1
        link = link_peak(ranks[members[0]].gpu, one_host)
        found.append(
            GroupArrivals(
                group=group,
                description=next((ranks[i].description.get(group, "") for i in members), ""),
                ranks=rank_ids,
                compared=len(seqs),
                last_share={r: float(c) / len(seqs) for r, c in zip(rank_ids, counts.tolist(), strict=True)},
                mean_wait_ns={r: float(w) for r, w in zip(rank_ids, wait.mean(axis=0).tolist(), strict=True)},
                late_ns=float((ordered[:, -1] - ordered[:, -2]).sum()),
                steps=float(np.median(marked)) if steady and marked else 0.0,
                bus_gbs=bus,
                bus_collectives=moved,
                link=link[0] if link else "",
                link_peak_gbs=link[1] if link else None,
            )
        )
    return found


def _is_steady(rank: RankCollectives, row: int) -> bool:
    return rank.steady is None or bool(rank.steady[row])


def _bus_gbs(
    ranks: list[RankCollectives], members: list[int], group: str, seqs: list[int], last: I64, shifts: dict[int, int]
) -> tuple[float | None, int]:
    """The group's median bus bandwidth (GB/s) over its compared collectives of BUS_MIN_BYTES or more, and
    how many those were; None where the trace gives no sizes."""
    first = ranks[members[0]]
    if not len(first.nbytes):
        return None, 0
    rows = first.keys()
    keys = [r.keys() for r in (ranks[i] for i in members)]
    n = first.group_size.get(group, len(members))
    rates = []
    for k, seq in enumerate(seqs):
        row = rows[(group, seq)]
        factor = bus_factor(first.collective[row], n)
        size = int(first.nbytes[row])
        if factor is None or size < BUS_MIN_BYTES:
            continue
        ends = [
            ranks[i].end_ns[key[(group, seq)]] + shifts.get(ranks[i].rank, 0)
            for i, key in zip(members, keys, strict=True)
        ]
        took = float(np.median(ends)) - float(last[k])
        if took > 0:
            rates.append(size / took * factor)  # bytes per ns = GB/s
    return (float(np.median(rates)) if rates else None), len(rates)
