"""The tensors pass's raw file (`tensors.json.gz`, written by tenprof.capture.tensors) -> its tables.

Derived here, once, so every report reads them: the backward op -> forward op link (an autograd node's
sequence number is the one its forward op took, so a backward op goes to the first forward op that
carries it), each tensor's creator line (a backward op's tensors get the forward op's line), use counts
and first / last use and read, byte ranges, and each storage's base tensor.
"""

from __future__ import annotations

import gzip
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pyarrow as pa

from tenprof.errors import TraceFormatError
from tenprof.sourcefiles import line_text
from tenprof.store.schema import ALLOCATOR_EVENTS, FRAMES, STORAGES, TENSOR_OPS, TENSOR_USES, TENSORS
from tenprof.store.writer import PassWriter


@dataclass
class TensorsReport:
    op_count: int = 0
    tensor_count: int = 0
    storage_count: int = 0
    unseen_creators: int = 0
    cuda_memory: dict[str, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def read_raw(path: Path) -> dict[str, Any]:
    try:
        data: dict[str, Any] = orjson.loads(gzip.decompress(path.read_bytes()))
    except (OSError, EOFError, zlib.error, orjson.JSONDecodeError) as exc:
        raise TraceFormatError(
            f"{path.name} is damaged ({exc.__class__.__name__}); the tensors pass was cut short?"
        ) from exc
    if data.get("version") != 1:
        raise TraceFormatError(f"{path.name}: unknown format version {data.get('version')!r}")
    return data


def _arr(values: list[Any]) -> np.ndarray:
    return np.asarray(values, dtype=np.int64)


def build_tensor_tables(
    data: dict[str, Any], sources_as_of: float | None = None
) -> tuple[dict[str, pa.Table], TensorsReport]:
    """The raw file's content (`read_raw`) -> the tensors pass's tables by name, and what to report."""
    names = np.asarray(data["names"] + [""], dtype=object)  # index -1 reads as ""
    ops = _read_ops(data)
    storages = _read_storages(data["storages"], int(data.get("op_count", ops.count)))
    uses = {k: _arr(v) for k, v in data["uses"].items()}
    counts = _use_counts(uses, len(data["tensors"]["tensor_id"]))
    tensors = _tensor_table(data["tensors"], names, ops, storages, counts)
    storage_table = _storage_table(storages, tensors)
    allocator, matched = _allocator_events(data.get("allocator") or {}, ops.columns, storage_table)
    tables = {
        "allocator_events": allocator,
        "tensor_ops": _op_table(ops, names),
        "tensors": tensors,
        "tensor_uses": _use_table(uses, np.asarray(data["roles"], dtype=object)),
        "storages": storage_table,
        "tensor_frames": _frame_table(data["frames"], sources_as_of),
    }
    return tables, _report(data, ops.count, tensors.num_rows, storage_table.num_rows, matched)


@dataclass(frozen=True)
class _Ops:
    """The raw file's ops as arrays in op_seq order, with the backward op -> forward op link."""

    columns: dict[str, np.ndarray]  # the raw file's op columns, sorted by op_seq
    seq_to_row: np.ndarray  # op_seq -> row, -1 for a number with no row
    forward_seq: np.ndarray  # per row: a backward op's forward op (its op_seq), else -1
    frame: np.ndarray  # per row: the op's frame_id, a backward op without one taking its forward op's

    @property
    def count(self) -> int:
        return len(self.columns["op_seq"])


def _read_ops(data: dict[str, Any]) -> _Ops:
    """The raw file's `ops` sorted by op_seq, each backward op linked to its forward op and given that
    op's frame when it has none of its own."""
    ops = {k: _arr(v) for k, v in data["ops"].items()}
    order = np.argsort(ops["op_seq"], kind="stable")  # two threads may append out of order
    ops = {k: v[order] for k, v in ops.items()}
    n_ops = len(ops["op_seq"])
    # An op still running when the script stopped has a number but no row: map numbers to rows.
    seq_to_row = np.full(int(data.get("op_count", n_ops)) + 1, -1, dtype=np.int64)
    seq_to_row[ops["op_seq"]] = np.arange(n_ops)
    forward_seq = _forward_ops(ops)
    frame = ops["frame_id"].copy()
    linked = (frame < 0) & (forward_seq >= 0)
    frame[linked] = frame[seq_to_row[forward_seq[linked]]]
    return _Ops(ops, seq_to_row, forward_seq, frame)


def _op_table(ops: _Ops, names: np.ndarray) -> pa.Table:
    """The `tensor_ops` table: one row per op (`names` maps name ids to names, -1 to "")."""
    columns = ops.columns
    return pa.table(
        {
            "op_seq": columns["op_seq"],
            "name": names[columns["name_id"]].astype(str),
            "thread_id": columns["thread_id"],
            "frame_id": columns["frame_id"],
            "is_backward": columns["is_backward"].astype(bool),
            "autograd_seq_nr": columns["autograd_nr"],
            "forward_op_seq": ops.forward_seq,
            "step": columns["step"],
            "start_unix_ns": columns.get("time_ns", np.full(ops.count, -1, dtype=np.int64)),
        },
        schema=TENSOR_OPS,
    )


@dataclass(frozen=True)
class _Storages:
    """The raw file's storages as arrays, one entry per storage_id."""

    storage_id: np.ndarray
    device: np.ndarray  # object array of device names
    address: np.ndarray
    nbytes: np.ndarray
    alloc_op_seq: np.ndarray
    free_op_seq: np.ndarray  # -1: alive until the end


def _read_storages(storages: dict[str, list[Any]], op_count: int) -> _Storages:
    """The raw file's `storages` as arrays; a storage freed after the last of the `op_count` ops counts
    as never freed."""
    s_free = _arr(storages["free_op_seq"])
    # Freed after the last op (the script's globals go when it ends): alive for as long as we looked.
    s_free[s_free >= op_count] = -1
    return _Storages(
        storage_id=_arr(storages["storage_id"]),
        device=np.asarray(storages["device"], dtype=object),
        address=_arr(storages["address"]),
        nbytes=_arr(storages["nbytes"]),
        alloc_op_seq=_arr(storages["alloc_op_seq"]),
        free_op_seq=s_free,
    )


@dataclass(frozen=True)
class _UseCounts:
    """Per tensor (indexed by tensor_id), what its uses add up to."""

    first_use: np.ndarray  # the first op using it, int64 max when none does
    last_use: np.ndarray  # the last op using it, -1 when none does
    last_read: np.ndarray  # the last op reading it, -1 when none does
    reads: np.ndarray
    writes: np.ndarray


def _use_counts(uses: dict[str, np.ndarray], n_tensors: int) -> _UseCounts:
    """Reduce the uses (columns tensor_id, op_seq, role: 0 read, 1 write, 2 both) per tensor."""
    use_t, use_seq, use_role = uses["tensor_id"], uses["op_seq"], uses["role"]
    is_read = (use_role == 0) | (use_role == 2)
    is_write = (use_role == 1) | (use_role == 2)
    return _UseCounts(
        first_use=_reduce(n_tensors, use_t, use_seq, np.minimum, np.iinfo(np.int64).max),
        last_use=_reduce(n_tensors, use_t, use_seq, np.maximum, -1),
        last_read=_reduce(n_tensors, use_t[is_read], use_seq[is_read], np.maximum, -1),
        reads=np.bincount(use_t[is_read], minlength=n_tensors)[:n_tensors],
        writes=np.bincount(use_t[is_write], minlength=n_tensors)[:n_tensors],
    )


def _tensor_table(t: dict[str, Any], names: np.ndarray, ops: _Ops, storages: _Storages, counts: _UseCounts) -> pa.Table:
    """The `tensors` table from the raw file's `tensors` columns: byte ranges, the creator's line and
    first / last use (a tensor never used is first used by its creator), each tensor's storage's device
    and free."""
    tid = _arr(t["tensor_id"])
    n_t = len(tid)
    shapes: list[list[int]] = t["shape"]
    strides: list[list[int]] = t["stride"]
    itemsize = _arr(t["itemsize"])
    numel = np.asarray([int(np.prod(s)) if s else 1 for s in shapes], dtype=np.int64)
    span = np.asarray(
        [sum((d - 1) * st for d, st in zip(s, sd, strict=True)) + 1 for s, sd in zip(shapes, strides, strict=True)],
        dtype=np.int64,
    )
    data_ptr = _arr(t["data_ptr"])
    byte_end = np.where(numel > 0, data_ptr + span * itemsize, data_ptr)
    t_sid = _arr(t["storage_id"])
    creator = _arr(t["creator_op_seq"])
    creator_row = np.where(creator >= 0, ops.seq_to_row[np.clip(creator, 0, len(ops.seq_to_row) - 1)], -1)
    creator_frame = np.where(creator_row >= 0, ops.frame[np.clip(creator_row, 0, max(ops.count - 1, 0))], -1)
    first_use = counts.first_use
    first = np.where(first_use == np.iinfo(np.int64).max, np.where(creator >= 0, creator, -1), first_use)
    parent = _arr(t["parent_tensor_id"])
    return pa.table(
        {
            "tensor_id": tid,
            "storage_id": t_sid,
            "device": storages.device[t_sid].astype(str) if n_t else np.asarray([], dtype=str),
            "dtype": t["dtype"],
            "itemsize": itemsize.astype(np.int32),
            "shape": pa.array(shapes, type=pa.list_(pa.int64())),
            "stride": pa.array(strides, type=pa.list_(pa.int64())),
            "numel": numel,
            "storage_offset": _arr(t["storage_offset"]),
            "data_ptr": data_ptr,
            "byte_start": data_ptr,
            "byte_end": byte_end,
            "nbytes": numel * itemsize,
            "is_view": parent >= 0,
            "parent_tensor_id": parent,
            "view_op": names[_arr(t["view_op_id"])].astype(str) if n_t else np.asarray([], dtype=str),
            "source_tensor_id": _arr(t["source_tensor_id"]),
            "source_op": names[_arr(t["source_op_id"])].astype(str) if n_t else np.asarray([], dtype=str),
            "creator_op_seq": creator,
            "creator_frame_id": creator_frame,
            "first_use_op_seq": first,
            "last_use_op_seq": np.maximum(counts.last_use, first),
            "last_read_op_seq": counts.last_read,
            "reads": counts.reads.astype(np.int64),
            "writes": counts.writes.astype(np.int64),
            "free_op_seq": storages.free_op_seq[t_sid] if n_t else np.asarray([], dtype=np.int64),
        },
        schema=TENSORS,
    )


def _storage_table(storages: _Storages, tensors: pa.Table) -> pa.Table:
    """The `storages` table, each storage's base tensor taken from the built `tensors` table."""
    sid = storages.storage_id
    base = np.full(len(sid), -1, dtype=np.int64)
    if tensors.num_rows:
        # The first tensor seen on each storage is its base (tensor ids are given in order of first sight).
        first_on = np.unique(tensors.column("storage_id").to_numpy(), return_index=True)
        base[first_on[0]] = tensors.column("tensor_id").to_numpy()[first_on[1]]
    return pa.table(
        {
            "storage_id": sid,
            "device": storages.device.astype(str) if len(sid) else np.asarray([], dtype=str),
            "address": storages.address,
            "nbytes": storages.nbytes,
            "alloc_op_seq": storages.alloc_op_seq,
            "free_op_seq": storages.free_op_seq,
            "base_tensor_id": base,
        },
        schema=STORAGES,
    )


def _use_table(uses: dict[str, np.ndarray], roles: np.ndarray) -> pa.Table:
    """The `tensor_uses` table: one row per (op, tensor, role), `roles` naming the role numbers."""
    role = uses["role"]
    return pa.table(
        {
            "op_seq": uses["op_seq"],
            "tensor_id": uses["tensor_id"],
            "role": roles[role].astype(str) if len(role) else [],
        },
        schema=TENSOR_USES,
    )


def _frame_table(frames: list[list[Any]], sources_as_of: float | None = None) -> pa.Table:
    """The `tensor_frames` table from the raw file's frame rows (FRAMES' columns in order, but the text,
    read here for the user's lines)."""
    stored = FRAMES.names[:-1]
    columns: dict[str, list[Any]] = {name: [row[i] for row in frames] for i, name in enumerate(stored)}
    columns["text"] = [line_text(row[2], row[3], sources_as_of) if row[6] else None for row in frames]
    return pa.table(columns, schema=FRAMES)


def _report(data: dict[str, Any], n_ops: int, n_tensors: int, n_storages: int, matched: float | None) -> TensorsReport:
    """The pass's counts and warnings: the raw file's own (cut short, compiled graphs) and an allocator
    log that matched under 95% of CUDA storages (`matched` from `_allocator_events`)."""
    report = TensorsReport(
        op_count=n_ops,
        tensor_count=n_tensors,
        storage_count=n_storages,
        unseen_creators=int(data.get("unseen_creators", 0)),
        cuda_memory={k: int(v) for k, v in data.get("cuda_memory", {}).items()},
        warnings=[str(data["broken"])] if data.get("broken") else [],
    )
    untracked = int(data.get("untracked_uses", 0))
    if untracked:
        report.warnings.append(
            f"{untracked} use(s) of tensors without a storage (sparse, nested) are not in the forest: their "
            "memory and reads are not counted"
        )
    graphs = int(data.get("compiled_graphs", 0))
    if graphs:
        report.warnings.append(
            f"torch.compile ran {graphs} graph(s): their kernels read and write tensors where no dispatch hook "
            "sees, so uses, 'never read' and lifetimes miss what happens inside them"
        )
    if matched is not None and matched < 0.95:
        report.warnings.append(
            f"only {matched:.0%} of op outputs on CUDA were found in the allocator's log at their op; "
            "what the memory report says besides op outputs is approximate"
        )
    return report


def _allocator_events(
    log: dict[str, list[Any]], ops: dict[str, np.ndarray], storages: pa.Table
) -> tuple[pa.Table, float | None]:
    """The allocator's log with each event placed in the op running at the time (by wall clock: both
    sides stamp it), a running total, and alloc events matched to the storages they became.

    Returns the table and the share of CUDA storages whose alloc event was found inside their own op,
    the check that the clocks agree (None when there is no log)."""
    n = len(log.get("action", []))
    if not n:
        return ALLOCATOR_EVENTS.empty_table(), None
    action = np.asarray(log["action"], dtype=object)
    address = _arr(log["address"])
    size = _arr(log["bytes"])
    unix_ns = _arr(log["time_us"]) * 1000
    op_time = ops.get("time_ns", np.zeros(0, dtype=np.int64))
    order = np.argsort(op_time, kind="stable")
    pos = np.searchsorted(op_time[order], unix_ns, side="right") - 1
    op_seq = np.where(pos >= 0, ops["op_seq"][order][np.clip(pos, 0, max(len(order) - 1, 0))], -1)
    # allocated_bytes drops when a free is requested (the block is no longer handed out), as torch counts it
    has_requested = bool((action == "free_requested").any())
    free_action = "free_requested" if has_requested else "free_completed"
    delta = np.where(action == "alloc", size, np.where(action == free_action, -size, 0))
    # Alloc events -> storages: same address, the storage made in the op the event falls in.
    storage_id = np.full(n, -1, dtype=np.int64)
    s_dev = storages.column("device").to_numpy(zero_copy_only=False).astype(str)
    cuda = np.char.startswith(s_dev, "cuda") & (storages.column("nbytes").to_numpy() > 0)
    s_key = {
        (int(a), int(k)): int(sid)
        for a, k, sid in zip(
            storages.column("address").to_numpy()[cuda],
            storages.column("alloc_op_seq").to_numpy()[cuda],
            storages.column("storage_id").to_numpy()[cuda],
            strict=True,
        )
    }
    wanted = len(s_key)
    for i in np.flatnonzero(action == "alloc").tolist():
        storage_id[i] = s_key.pop((int(address[i]), int(op_seq[i])), -1)
    matched = 1.0 - len(s_key) / wanted if wanted else 1.0
    table = pa.table(
        {
            "event_id": np.arange(n, dtype=np.int64),
            "device": _arr(log["device"]).astype(np.int32),
            "action": action.astype(str),
            "address": address,
            "bytes": size,
            "unix_ns": unix_ns,
            "op_seq": op_seq,
            "allocated_bytes": np.cumsum(delta),
            "storage_id": storage_id,
        },
        schema=ALLOCATOR_EVENTS,
    )
    return table, matched


def _forward_ops(ops: dict[str, np.ndarray]) -> np.ndarray:
    """For each backward op, the op_seq of the first forward op carrying its autograd node's number."""
    out = np.full(len(ops["op_seq"]), -1, dtype=np.int64)
    backward = ops["is_backward"].astype(bool)
    nr = ops["autograd_nr"]
    fwd = ~backward & (nr >= 0)
    if not fwd.any() or not backward.any():
        return out
    fwd_nr, first_index = np.unique(nr[fwd], return_index=True)  # first occurrence = the op that made it
    fwd_seq = ops["op_seq"][fwd][first_index]
    want = backward & (nr >= 0)
    pos = np.searchsorted(fwd_nr, nr[want])
    pos = np.clip(pos, 0, len(fwd_nr) - 1)
    found = fwd_nr[pos] == nr[want]
    out[np.flatnonzero(want)[found]] = fwd_seq[pos[found]]
    return out


def _reduce(n: int, index: np.ndarray, values: np.ndarray, ufunc: Any, initial: int) -> np.ndarray:
    out = np.full(n, initial, dtype=np.int64)
    if len(index):
        ufunc.at(out, index, values)
    return out


def build_tensors_pass(writer: PassWriter, raw: Path) -> TensorsReport:
    tables, report = build_tensor_tables(read_raw(raw), raw.stat().st_mtime if raw.exists() else None)
    for name, table in tables.items():
        writer.write_table(name, table)
    return report
