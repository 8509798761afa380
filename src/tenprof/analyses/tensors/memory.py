"""Memory from the tensors pass: the peak, what is alive at it, dead tensors, and tensors kept too long.

Everything is on the op-sequence clock of the tensors pass. A storage occupies memory over
[alloc_op_seq, free_op_seq). Live bytes at op k are the storages allocated at or before k and not
freed before k; the peak is the op where that sum is largest. On CUDA the caching allocator hands out
blocks rounded up to 512 bytes, so the peak is computed with that rounding too; the allocator's own
`max_memory_allocated()` (recorded by the pass) also counts what no op output owns (cuBLAS workspaces,
temporaries inside ops), and the report shows both.

- **At the peak**: each live storage with its base tensor, creator line, and whether any op uses it
  again after the peak (saved for backward, parameters) or never again (kept alive for nothing).
- **Dead**: storages made by an op and never read by any op (outputs nobody consumed).
- **Kept alive**: storages whose memory stayed allocated long after their last use, ranked by
  bytes x ops held.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np

from tenprof.analyses.tensors.tensor_forest import Forest
from tenprof.store.profile import Profile

CUDA_BLOCK = 512


@dataclass(frozen=True)
class HeldStorage:
    storage_id: int
    tensor_id: int  # its base tensor
    nbytes: int
    what: str  # dtype[shape]
    creator_op: str
    line: str
    alloc_op_seq: int
    last_use_op_seq: int
    free_op_seq: int  # -1: alive at the end
    next_use_op_seq: int = -1  # at the peak: the first use after it, -1 when none
    count: int = 1  # storages of the same kind (type, creator op and line) this row stands for
    total_bytes: int = 0  # their bytes together


@dataclass(frozen=True)
class OtherAllocation:
    """Memory at the peak that no op output owns, by the op that allocated it (cuBLAS/cuDNN workspaces,
    temporaries inside composite ops, flash-attention scratch)."""

    op: str
    line: str
    op_seq: int  # the first op of this kind holding some at the peak
    nbytes: int
    count: int


@dataclass(frozen=True)
class AllocatorPeak:
    """The peak as the CUDA caching allocator saw it (its own log, replayed)."""

    peak_bytes: int
    op_seq: int  # the op running when the peak was reached
    op: str
    line: str
    tensor_bytes: int  # blocks at the peak that are op outputs (storages), at the allocator's block sizes
    tensor_requested_bytes: int  # the same storages at the bytes the ops asked for
    other_bytes: int
    blocks: int = 0  # allocations live at the peak
    other: list[OtherAllocation] = field(default_factory=list)
    matched_fraction: float = 1.0  # CUDA storages found in the log inside their own op


@dataclass(frozen=True)
class MemoryReport:
    device: str
    op_count: int
    peak_bytes: int
    peak_rounded_bytes: int
    peak_op_seq: int
    peak_op: str
    peak_line: str
    allocator_peak_bytes: int  # torch.cuda.max_memory_allocated(), -1 when not recorded
    allocator_at_end_bytes: int
    untracked_at_end_bytes: int  # allocator's live bytes at the end that no tracked storage explains
    at_peak: list[HeldStorage] = field(default_factory=list)
    at_peak_unused_after_bytes: int = 0
    dead: list[HeldStorage] = field(default_factory=list)
    dead_bytes: int = 0
    kept_alive: list[HeldStorage] = field(default_factory=list)
    allocator: AllocatorPeak | None = None


def _rounded(nbytes: np.ndarray, device_is_cuda: bool) -> np.ndarray:
    if not device_is_cuda:
        return nbytes
    return np.where(nbytes > 0, (nbytes + CUDA_BLOCK - 1) // CUDA_BLOCK * CUDA_BLOCK, 0)


def memory_report(profile: Profile, limit: int = 10) -> MemoryReport | None:
    storages = profile.table("storages")
    if storages.num_rows == 0:
        return None
    forest = Forest(profile)
    op_count = forest.op_count
    devices = storages.column("device").to_numpy(zero_copy_only=False)
    on_cuda = np.char.startswith(devices.astype(str), "cuda")
    device_is_cuda = bool(on_cuda.any())
    pick = on_cuda if device_is_cuda else np.ones(len(devices), dtype=bool)
    sid = storages.column("storage_id").to_numpy()[pick]
    nbytes = storages.column("nbytes").to_numpy()[pick]
    alloc = storages.column("alloc_op_seq").to_numpy()[pick]
    free = storages.column("free_op_seq").to_numpy()[pick]
    base = storages.column("base_tensor_id").to_numpy()[pick]
    end = np.where(free >= 0, free, op_count)
    rounded = _rounded(nbytes, device_is_cuda)

    live = _live_bytes(alloc, end, nbytes, op_count)
    live_rounded = _live_bytes(alloc, end, rounded, op_count)
    storage_peak_seq = int(np.argmax(live_rounded)) if len(live_rounded) else 0
    allocator = allocator_peak(profile, forest, limit)
    # The tensors listed as alive at the peak are those of the true peak when the allocator's log has it.
    peak_seq = allocator.op_seq if allocator is not None and allocator.op_seq >= 0 else storage_peak_seq

    # Per storage: the last use of any tensor on it, and the first use after the peak.
    t = forest.columns
    uses = profile.table("tensor_uses")
    use_seq = uses.column("op_seq").to_numpy()
    use_storage = t["storage_id"][uses.column("tensor_id").to_numpy()] if len(use_seq) else use_seq
    n_storages = int(storages.num_rows)
    last_use = np.full(n_storages, -1, dtype=np.int64)
    np.maximum.at(last_use, use_storage, use_seq)
    after = use_seq > peak_seq
    next_use = np.full(n_storages, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(next_use, use_storage[after], use_seq[after])
    reads = np.zeros(n_storages, dtype=np.int64)
    np.add.at(reads, t["storage_id"], t["reads"])
    made_by_op = np.zeros(n_storages, dtype=bool)
    made_by_op[t["storage_id"]] |= t["creator_op_seq"] >= 0

    def held(i: int, with_next: bool = False) -> HeldStorage:
        s = int(sid[i])
        tensor = int(base[i])
        nxt = int(next_use[s]) if with_next and next_use[s] != np.iinfo(np.int64).max else -1
        return HeldStorage(
            storage_id=s,
            tensor_id=tensor,
            nbytes=int(nbytes[i]),
            what=forest.describe(tensor) if tensor >= 0 else "",
            creator_op=forest.creator_op(tensor) if tensor >= 0 else "",
            line=forest.creator_line(tensor) if tensor >= 0 else "",
            alloc_op_seq=int(alloc[i]),
            last_use_op_seq=int(last_use[s]),
            free_op_seq=int(free[i]),
            next_use_op_seq=nxt,
        )

    alive = np.flatnonzero((alloc <= peak_seq) & (end > peak_seq))
    alive = alive[np.argsort(-nbytes[alive], kind="stable")]
    unused_after = alive[next_use[sid[alive]] == np.iinfo(np.int64).max]

    dead = np.flatnonzero((reads[sid] == 0) & made_by_op[sid] & (nbytes > 0))
    dead = dead[np.argsort(-nbytes[dead], kind="stable")]

    idle = end - np.maximum(last_use[sid], alloc) - 1
    cost = idle * nbytes
    long_held = np.flatnonzero((idle > max(op_count // 20, 1)) & (nbytes > 0) & (reads[sid] > 0))
    long_held = long_held[np.argsort(-cost[long_held], kind="stable")]

    checks = profile.meta.checks.get("tensors", {})
    allocator_max = int(checks.get("max_memory_allocated_bytes", -1))
    allocator_end = int(checks.get("memory_allocated_at_end_bytes", -1))
    ops = profile.table("tensor_ops")
    op_names = forest.op_names
    peak_op = str(op_names[storage_peak_seq]) if storage_peak_seq < len(op_names) else ""
    return MemoryReport(
        device="cuda" if device_is_cuda else "cpu",
        op_count=op_count,
        peak_bytes=int(live[storage_peak_seq]) if len(live) else 0,
        peak_rounded_bytes=int(live_rounded[storage_peak_seq]) if len(live_rounded) else 0,
        peak_op_seq=storage_peak_seq,
        peak_op=peak_op,
        peak_line=op_line(profile, forest, storage_peak_seq) if ops.num_rows else "",
        allocator_peak_bytes=allocator_max,
        allocator_at_end_bytes=allocator_end,
        untracked_at_end_bytes=int(checks.get("untracked_at_end_bytes", -1)),
        at_peak=_grouped([held(int(i), with_next=True) for i in alive], limit),
        at_peak_unused_after_bytes=int(nbytes[unused_after].sum()),
        dead=_grouped([held(int(i)) for i in dead], limit),
        dead_bytes=int(nbytes[dead].sum()),
        kept_alive=_grouped([held(int(i)) for i in long_held], limit),
        allocator=allocator,
    )


def op_line(profile: Profile, forest: Forest, op_seq: int) -> str:
    """The user's line of an op (a backward op's forward line), "" when unknown."""
    ops = profile.table("tensor_ops")
    seqs = ops.column("op_seq").to_numpy()
    row = int(np.searchsorted(seqs, op_seq))
    if row >= len(seqs) or seqs[row] != op_seq:
        return ""
    frame = int(ops.column("frame_id")[row].as_py())
    forward = int(ops.column("forward_op_seq")[row].as_py())
    if frame < 0 and forward >= 0:
        return op_line(profile, forest, forward)
    return forest.frame_line(frame)


def allocator_peak(profile: Profile, forest: Forest, limit: int) -> AllocatorPeak | None:
    """Replay the allocator's log up to its largest total: which blocks were live then, and which of
    them were op outputs."""
    events = profile.table("allocator_events")
    if events.num_rows == 0:
        return None
    total = events.column("allocated_bytes").to_numpy()
    peak = int(np.argmax(total))
    action = events.column("action").to_numpy(zero_copy_only=False)[: peak + 1]
    address = events.column("address").to_numpy()[: peak + 1]
    size = events.column("bytes").to_numpy()[: peak + 1]
    op_seq = events.column("op_seq").to_numpy()
    storage = events.column("storage_id").to_numpy()[: peak + 1]
    free_action = (
        "free_requested"
        if (events.column("action").to_numpy(zero_copy_only=False) == "free_requested").any()
        else "free_completed"
    )
    live: dict[int, int] = {}  # address -> index of the alloc event
    for i in range(peak + 1):
        if action[i] == "alloc":
            live[int(address[i])] = i
        elif action[i] == free_action:
            live.pop(int(address[i]), None)
    held = np.fromiter(live.values(), dtype=np.int64, count=len(live))
    is_tensor = storage[held] >= 0
    nbytes = profile.table("storages").column("nbytes").to_numpy()
    other_rows: dict[tuple[str, str], list[int]] = {}
    for i in held[~is_tensor].tolist():
        seq = int(op_seq[i])
        name = str(forest.op_names[seq]) if 0 <= seq < len(forest.op_names) else "(before the first op)"
        other_rows.setdefault((name, op_line(profile, forest, seq) if seq >= 0 else ""), []).append(i)
    other = sorted(
        (
            OtherAllocation(op=k[0], line=k[1], op_seq=int(op_seq[v[0]]), nbytes=int(size[v].sum()), count=len(v))
            for k, v in other_rows.items()
        ),
        key=lambda o: -o.nbytes,
    )
    allocs = events.column("storage_id").to_numpy()
    cuda_storages = int(
        (
            np.char.startswith(
                profile.table("storages").column("device").to_numpy(zero_copy_only=False).astype(str), "cuda"
            )
            & (nbytes > 0)
        ).sum()
    )
    peak_op_seq = int(op_seq[peak])
    return AllocatorPeak(
        peak_bytes=int(total[peak]),
        op_seq=peak_op_seq,
        op=str(forest.op_names[peak_op_seq]) if 0 <= peak_op_seq < len(forest.op_names) else "",
        line=op_line(profile, forest, peak_op_seq) if peak_op_seq >= 0 else "",
        tensor_bytes=int(size[held[is_tensor]].sum()),
        tensor_requested_bytes=int(nbytes[storage[held[is_tensor]]].sum()),
        other_bytes=int(size[held[~is_tensor]].sum()),
        blocks=len(held),
        other=other[:limit],
        matched_fraction=float((allocs >= 0).sum() / cuda_storages) if cuda_storages else 1.0,
    )


def _grouped(rows: list[HeldStorage], limit: int) -> list[HeldStorage]:
    """Rows of the same kind (type, creator op, line: one per layer or per step) folded into the first."""
    groups: dict[tuple[str, str, str], list[HeldStorage]] = {}
    for row in rows:
        groups.setdefault((row.what, row.creator_op, row.line), []).append(row)
    folded = [
        dataclasses.replace(members[0], count=len(members), total_bytes=sum(m.nbytes for m in members))
        for members in groups.values()
    ]
    return folded[:limit]


def _live_bytes(alloc: np.ndarray, end: np.ndarray, nbytes: np.ndarray, op_count: int) -> np.ndarray:
    """Bytes live at each op k: allocated at or before k, freed after k."""
    delta = np.zeros(op_count + 2, dtype=np.int64)
    np.add.at(delta, np.clip(alloc, 0, op_count + 1), nbytes)
    np.add.at(delta, np.clip(end, 0, op_count + 1), -nbytes)
    return np.cumsum(delta)[: max(op_count, 1)]
