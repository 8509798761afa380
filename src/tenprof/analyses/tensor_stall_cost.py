"""Tensor stall cost: each memory stall blamed on a load, charged to the tensor (view) that load read.

Joins three passes, all keyed by the dispatch-order op number the tensors pass defines:
- stalls: memory-dependency samples blamed on a global/local/texture load, per (sampled kernel, PC);
  the sampled kernel ran in the first op instance of its signature (`stall_kernels.first_op_seq`);
- accesses: addresses each (launch, PC offset) touched, with bytes and counts, per op instance and
  launch ordinal, the kernel name kept to check the join;
- tensors: which live tensors contain an address at that op (`AddressIndex`).

For each blamed load, the access records of the same op instance, kernel name and PC offset (offset from
the kernel's first instruction, since the two runs load the code at different addresses) give the bytes
it read from each tensor; its samples are split by those bytes. Among several views containing an
address, the one the op used (tensor_uses) is charged, else the storage's base. What cannot be charged
is kept under named buckets, never dropped: `(no tensor)` for addresses in no live tensor (workspaces,
allocator slack) and `(no access record)` for loads the access pass did not see (e.g. TMA bulk copies on
Hopper). The total always equals the memory-stall samples blamed on loads.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from tenprof.analyses.address_lookup import AddressIndex
from tenprof.store.profile import Profile

MEMORY_REASONS = ("long_scoreboard",)
TENSOR_SPACES = ("global", "local", "texture")
NO_TENSOR = -1
NO_ACCESS = -2


@dataclass(frozen=True)
class TensorCost:
    tensor_id: int  # NO_TENSOR / NO_ACCESS for the buckets
    samples: float
    share: float  # of all memory-stall samples blamed on loads
    kernels: tuple[str, ...]
    load_pcs: tuple[int, ...]


def tensor_stall_cost(profile: Profile) -> list[TensorCost]:
    blame = profile.table("blame").to_pylist()
    if not blame:
        return []
    kernels = {k["replay_id"]: k for k in profile.table("stall_kernels").to_pylist()}
    space: dict[tuple[int, int], str] = {}
    first_pc: dict[int, int] = {}
    for r in profile.table("sass").to_pylist():
        space[(r["replay_id"], r["pc"])] = r["space"]
        first_pc[r["replay_id"]] = min(first_pc.get(r["replay_id"], r["pc"]), r["pc"])
    loads: dict[tuple[int, int], float] = defaultdict(float)
    for r in blame:
        if r["reason"] in MEMORY_REASONS and space.get((r["replay_id"], r["blamed_pc"])) in TENSOR_SPACES:
            loads[(r["replay_id"], r["blamed_pc"])] += r["samples"]
    total = sum(loads.values())
    if not total:
        return []
    accesses = profile.table("accesses").to_pylist()
    by_key: dict[tuple[int, str, int], list[dict[str, object]]] = defaultdict(list)
    for a in accesses:
        by_key[(int(a["op_seq"]), str(a["kernel"]), int(a["pc_offset"]))].append(a)
    index = AddressIndex.from_profile(profile) if accesses else None
    used = _tensors_used(profile)
    base_of = profile.table("storages").column("base_tensor_id").to_numpy()
    charged: dict[int, float] = defaultdict(float)
    where: dict[int, set[tuple[str, int]]] = defaultdict(set)
    for (rid, pc), samples in loads.items():
        kernel = kernels.get(rid, {})
        op_seq = int(kernel.get("first_op_seq", -1) or -1)
        records = by_key.get((op_seq, str(kernel.get("name", "")), pc - first_pc.get(rid, pc)), [])
        shares = _byte_shares(records, op_seq, index, used, base_of) if records and index is not None else {}
        if not shares:
            shares = {NO_ACCESS: 1.0}
        for tensor, share in shares.items():
            charged[tensor] += samples * share
            where[tensor].add((str(kernel.get("name", "")), pc))
    out = [
        TensorCost(
            tensor_id=t,
            samples=v,
            share=v / total,
            kernels=tuple(sorted({k for k, _ in where[t]})),
            load_pcs=tuple(sorted({p for _, p in where[t]})),
        )
        for t, v in charged.items()
    ]
    out.sort(key=lambda c: -c.samples)
    return out


def _tensors_used(profile: Profile) -> dict[int, set[int]]:
    used: dict[int, set[int]] = defaultdict(set)
    uses = profile.table("tensor_uses")
    for seq, tid in zip(uses.column("op_seq").to_pylist(), uses.column("tensor_id").to_pylist(), strict=True):
        used[int(seq)].add(int(tid))
    return used


def _byte_shares(
    records: list[dict[str, object]],
    op_seq: int,
    index: AddressIndex,
    used: dict[int, set[int]],
    base_of: np.ndarray,
) -> dict[int, float]:
    addresses = np.array([int(r["address"]) for r in records], dtype=np.int64)  # type: ignore[call-overload]
    weights = np.array([int(r["bytes"]) * int(r["count"]) for r in records], dtype=np.float64)  # type: ignore[call-overload]
    matches = index.lookup(addresses, np.full(len(addresses), op_seq, dtype=np.int64))
    storages = index.storage_of(addresses, np.full(len(addresses), op_seq, dtype=np.int64))
    candidates: dict[int, list[int]] = defaultdict(list)
    for q, t in zip(matches.query.tolist(), matches.tensor_id.tolist(), strict=True):
        candidates[q].append(t)
    bytes_to: dict[int, float] = defaultdict(float)
    op_used = used.get(op_seq, set())
    for q in range(len(records)):
        found = candidates.get(q, [])
        chosen = [t for t in found if t in op_used]
        if chosen:
            tensor = chosen[0]
        elif storages[q] >= 0:
            tensor = int(base_of[storages[q]])
        else:
            tensor = NO_TENSOR
        bytes_to[tensor] += weights[q]
    total = sum(bytes_to.values())
    return {t: b / total for t, b in bytes_to.items()} if total else {}
