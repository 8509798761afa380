"""Tensor stall cost: each memory stall blamed on a load, charged to the tensor (view) that load read.

Joins three passes, all keyed by the dispatch-order op number the tensors pass defines:
- stalls: memory-dependency samples blamed on a global/local/texture load, per (sampled kernel, PC);
  the sampled kernel ran in the first op instance of its signature (`stall_kernels.first_op_seq`);
- accesses: addresses each (launch, PC offset) touched, with bytes and counts, per op instance and
  launch ordinal, the kernel name kept to check the join;
- tensors: which live tensors contain an address at that op (`AddressIndex`).

Which samples count: every long-scoreboard sample (a warp waiting on global/local memory) of the
sampled kernels, each weighted by the op instances its kernel stands for (the stalls pass samples one
op instance per signature; the tensors named are that instance's). Where they go:
- blamed on a load with access records of the same op instance, kernel and PC offset (offset from the
  kernel's first instruction, since the two runs load the code at different addresses): split among the
  tensors the load touched by bytes; among several views containing an address, the one the op used
  (tensor_uses) is charged, else the storage's base; addresses in no live tensor go to `(no tensor)`
  (workspaces, allocator slack);
- blamed on a load the access pass has no record for: `(no access record)`;
- left on a wait instruction (no load register to shift to) in a kernel that copies global memory
  asynchronously (TMA `UTMALDG`, bulk `UBLKCP`, cp.async `LDGSTS`, whose data arrive through shared
  memory and a barrier): split among the tensors the op read, by their bytes, and marked inferred;
- anything else: `(unresolved memory stall)`.
Kernel names are compared as ncu and the sanitizer give them: ncu's function name must be the
sanitizer's (mangled) name or appear in it as a mangled identifier (`gather_kernel`,
`_ZN...29vectorized_elementwise_kernel...`). The total always equals the samples counted.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from tenprof.analyses.tensors.address_lookup import AddressIndex
from tenprof.core.kernel_names import base_name
from tenprof.store.profile import Profile

MEMORY_REASONS = ("long_scoreboard",)
TENSOR_SPACES = ("global", "local", "texture")
ASYNC_COPY_OPCODES = ("UTMALDG", "UBLKCP", "LDGSTS")
NO_TENSOR = -1
NO_ACCESS = -2
UNRESOLVED = -3


@dataclass(frozen=True)
class TensorCost:
    tensor_id: int  # NO_TENSOR / NO_ACCESS for the buckets
    samples: float
    share: float  # of all memory-stall samples blamed on loads
    kernels: tuple[str, ...]
    load_pcs: tuple[int, ...]
    inferred: float = 0.0  # of `samples`, charged through the op's inputs (asynchronous copies)
    ops: tuple[str, ...] = ()  # the ops whose kernels waited on it


def tensor_stall_cost(profile: Profile) -> list[TensorCost]:
    blame = profile.table("blame").to_pylist()
    if not blame:
        return []
    kernels = {k["replay_id"]: k for k in profile.table("stall_kernels").to_pylist()}
    space: dict[tuple[int, int], str] = {}
    first_pc: dict[int, int] = {}
    copies_async: set[int] = set()
    for r in profile.table("sass").to_pylist():
        space[(r["replay_id"], r["pc"])] = r["space"]
        first_pc[r["replay_id"]] = min(first_pc.get(r["replay_id"], r["pc"]), r["pc"])
        if str(r["opcode"]).startswith(ASYNC_COPY_OPCODES):
            copies_async.add(r["replay_id"])
    waits: dict[tuple[int, int], float] = defaultdict(float)
    for r in blame:
        if r["reason"] in MEMORY_REASONS:
            weight = float(kernels.get(r["replay_id"], {}).get("instances", 1) or 1)
            waits[(r["replay_id"], r["blamed_pc"])] += r["samples"] * weight
    total = sum(waits.values())
    if not total:
        return []
    records = AccessRecords(profile)
    index = AddressIndex.from_profile(profile) if records.count else None
    used = UsedViews(profile)
    base_of = profile.table("storages").column("base_tensor_id").to_numpy()
    charged: dict[int, float] = defaultdict(float)
    inferred: dict[int, float] = defaultdict(float)
    where: dict[int, set[tuple[str, int]]] = defaultdict(set)
    by_ops: dict[int, set[str]] = defaultdict(set)
    inputs: dict[int, dict[int, float]] = {}
    for (rid, pc), samples in waits.items():
        kernel = kernels.get(rid, {})
        name = str(kernel.get("name", ""))
        first = kernel.get("first_op_seq")
        op_seq = -1 if first is None else int(first)
        guessed = False
        if space.get((rid, pc)) in TENSOR_SPACES:
            rows = records.of(op_seq, pc - first_pc.get(rid, pc), name)
            shares = (
                _byte_shares(records, rows, op_seq, index, used, base_of) if len(rows) and index is not None else {}
            )
            shares = shares or {NO_ACCESS: 1.0}
        elif rid in copies_async and op_seq >= 0:
            if op_seq not in inputs:
                inputs[op_seq] = _input_shares(profile, op_seq)
            shares = inputs[op_seq] or {UNRESOLVED: 1.0}
            guessed = UNRESOLVED not in shares
        else:
            shares = {UNRESOLVED: 1.0}
        for tensor, share in shares.items():
            charged[tensor] += samples * share
            if guessed:
                inferred[tensor] += samples * share
            where[tensor].add((name, pc))
            if kernel.get("op"):
                by_ops[tensor].add(str(kernel["op"]))
    out = [
        TensorCost(
            tensor_id=t,
            samples=v,
            share=v / total,
            kernels=tuple(sorted({k for k, _ in where[t]})),
            load_pcs=tuple(sorted({p for _, p in where[t]})),
            inferred=inferred.get(t, 0.0),
            ops=tuple(sorted(by_ops[t])),
        )
        for t, v in charged.items()
    ]
    out.sort(key=lambda c: -c.samples)
    return out


def _input_shares(profile: Profile, op_seq: int) -> dict[int, float]:
    """The tensors op `op_seq` read (role read or readwrite), by their bytes."""
    rows = profile.sql(
        "select u.tensor_id, t.nbytes from tensor_uses u join tensors t using (tensor_id) "
        f"where u.op_seq = {int(op_seq)} and u.role in ('read', 'readwrite')"
    ).to_pylist()
    total = float(sum(int(r["nbytes"] or 0) for r in rows))
    if not total:
        return {}
    return {int(r["tensor_id"]): int(r["nbytes"] or 0) / total for r in rows if r["nbytes"]}


def same_kernel(ncu_name: str, sanitizer_name: str) -> bool:
    """ncu's kernel name (demangled or its function name) names the sanitizer's (mangled) kernel."""
    if ncu_name == sanitizer_name:
        return True
    base = base_name(ncu_name)
    return bool(base) and (base == sanitizer_name or f"{len(base)}{base}" in sanitizer_name)


class UsedViews:
    """Which (op, tensor) pairs tensor_uses lists, asked many at a time."""

    def __init__(self, profile: Profile) -> None:
        uses = profile.table("tensor_uses")
        seq = uses.column("op_seq").to_numpy().astype(np.int64)
        tensor = uses.column("tensor_id").to_numpy().astype(np.int64)
        self._width = int(tensor.max(initial=-1)) + 1
        self._keys = np.unique(seq * self._width + tensor)

    def used(self, op_seqs: np.ndarray, tensors: np.ndarray) -> np.ndarray:
        tensors = np.asarray(tensors, np.int64)
        if not len(self._keys):
            return np.zeros(len(tensors), dtype=bool)
        keys = np.asarray(op_seqs, np.int64) * self._width + tensors
        pos = np.clip(np.searchsorted(self._keys, keys), 0, len(self._keys) - 1)
        found: np.ndarray = (tensors < self._width) & (self._keys[pos] == keys)
        return found


class AccessRecords:
    """The accesses table's rows by (op instance, PC offset), each group in table order, read as arrays: a
    profile holds hundreds of thousands, which as Python rows took a second to group per stall cost."""

    def __init__(self, profile: Profile) -> None:
        table = profile.table("accesses")  # empty where the pass was not built
        self.count = table.num_rows
        self.address = table.column("address").to_numpy().astype(np.int64)
        self.bytes = table.column("bytes").to_numpy().astype(np.float64)
        self.kernel = profile.strings("accesses", "kernel")
        self._rows: dict[tuple[int, int], np.ndarray] = {}
        self._kernels: dict[str, np.ndarray] = {}
        if self.count:
            op_seq, pc_offset = table.column("op_seq").to_numpy(), table.column("pc_offset").to_numpy()
            order = np.lexsort((pc_offset, op_seq))  # stable: each group's rows stay in table order
            op_seq, pc_offset = op_seq[order], pc_offset[order]
            starts = np.flatnonzero(np.r_[True, (op_seq[1:] != op_seq[:-1]) | (pc_offset[1:] != pc_offset[:-1])])
            for start, end in zip(starts.tolist(), [*starts[1:].tolist(), self.count], strict=True):
                self._rows[(int(op_seq[start]), int(pc_offset[start]))] = order[start:end]

    def of(self, op_seq: int, pc_offset: int, kernel: str) -> np.ndarray:
        """The rows of op instance `op_seq` at `pc_offset` whose kernel is `kernel` (as ncu names it)."""
        rows = self._rows.get((op_seq, pc_offset))
        if rows is None:
            return np.zeros(0, dtype=np.int64)
        if kernel not in self._kernels:
            self._kernels[kernel] = self.kernel.where(lambda name: same_kernel(kernel, name))
        chosen: np.ndarray = rows[self._kernels[kernel][rows]]
        return chosen


def _byte_shares(
    records: AccessRecords,
    rows: np.ndarray,
    op_seq: int,
    index: AddressIndex,
    used: UsedViews,
    base_of: np.ndarray,
) -> dict[int, float]:
    addresses, weights = records.address[rows], records.bytes[rows]
    tensors = tensors_at(index, addresses, np.full(len(addresses), op_seq, dtype=np.int64), used, base_of)
    bytes_to: dict[int, float] = defaultdict(float)
    for tensor, weight in zip(tensors.tolist(), weights.tolist(), strict=True):
        bytes_to[tensor] += weight
    total = sum(bytes_to.values())
    return {t: b / total for t, b in bytes_to.items()} if total else {}


def tensors_at(
    index: AddressIndex, addresses: np.ndarray, op_seqs: np.ndarray, used: UsedViews, base_of: np.ndarray
) -> np.ndarray:
    """The tensor each (address, op) is charged to: among the live views containing the address, one the
    op used (tensor_uses), else the storage's base tensor, else NO_TENSOR (no live storage there)."""
    matches = index.lookup(addresses, op_seqs)
    out = np.full(len(addresses), NO_TENSOR, dtype=np.int64)
    storages = index.storage_of(addresses, op_seqs)
    has_storage = storages >= 0
    out[has_storage] = base_of[storages[has_storage]]
    if len(matches.query):
        is_used = used.used(op_seqs[matches.query], matches.tensor_id)
        # the first used view of each query (matches come grouped by query)
        query, tensor = matches.query[is_used], matches.tensor_id[is_used]
        first = np.unique(query, return_index=True)[1]
        out[query[first]] = tensor[first]
    return out
