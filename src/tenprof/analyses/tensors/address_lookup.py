"""Address -> tensor at a point in the run: which live tensors (and views) hold the byte at an address.

`AddressIndex.lookup(addresses, op_seqs)` answers many queries at once, vectorised with numpy:

1. **Storage.** Live allocations never overlap, but one address is reused by many storages over the
   run. The address space is cut at every storage's start and end into elementary segments; each
   segment lists the storages covering it ordered by allocation, and a query takes the last storage
   allocated at or before its op that is not yet freed (one `searchsorted` over a combined key).
   A storage is live over [alloc_op_seq, free_op_seq): the op that made it already writes it, and
   `free_op_seq` is the first op after its memory went back to the allocator.
2. **Tensors on it.** Every tensor (layout) on that storage first used at or before the op is a
   candidate. A candidate contains the address if the element index `(address - data_ptr) // itemsize`
   decomposes into in-range indices of its strides: dims are sorted by stride and peeled greedily, which
   is exact for layouts whose strides nest (everything views make from a dense tensor: transposes,
   slices, expands once stride-0 dims are dropped). Layouts that overlap themselves (`as_strided`
   tricks) are checked exactly by listing their element offsets.

Results come back as pairs (query index, tensor id); queries that hit no storage are reported by
`storage_of`, so callers can count addresses that fall in no tensor (workspaces, allocator slack).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tenprof.store.profile import Profile

_NO_FREE = np.iinfo(np.int64).max // 4
_SEQ_BITS = 40  # op sequence numbers below 2**40; segments below 2**23
_SEQ_MAX = (1 << _SEQ_BITS) - 1


@dataclass(frozen=True)
class Matches:
    query: np.ndarray  # index into the queries
    tensor_id: np.ndarray


class AddressIndex:
    def __init__(
        self,
        *,
        storage_id: np.ndarray,
        address: np.ndarray,
        nbytes: np.ndarray,
        alloc_op_seq: np.ndarray,
        free_op_seq: np.ndarray,
        tensor_storage: np.ndarray,
        data_ptr: np.ndarray,
        itemsize: np.ndarray,
        shape: list[list[int]],
        stride: list[list[int]],
        first_use_op_seq: np.ndarray,
    ) -> None:
        self._build_storages(
            np.asarray(storage_id, np.int64),
            np.asarray(address, np.int64),
            np.asarray(nbytes, np.int64),
            np.asarray(alloc_op_seq, np.int64),
            np.asarray(free_op_seq, np.int64),
        )
        self._build_tensors(
            np.asarray(tensor_storage, np.int64),
            np.asarray(data_ptr, np.int64),
            np.asarray(itemsize, np.int64),
            shape,
            stride,
            np.asarray(first_use_op_seq, np.int64),
        )

    @classmethod
    def from_profile(cls, profile: Profile) -> AddressIndex:
        s = profile.table("storages")
        t = profile.table("tensors")
        return cls(
            storage_id=s.column("storage_id").to_numpy(),
            address=s.column("address").to_numpy(),
            nbytes=s.column("nbytes").to_numpy(),
            alloc_op_seq=s.column("alloc_op_seq").to_numpy(),
            free_op_seq=s.column("free_op_seq").to_numpy(),
            tensor_storage=t.column("storage_id").to_numpy(),
            data_ptr=t.column("data_ptr").to_numpy(),
            itemsize=t.column("itemsize").to_numpy(),
            shape=t.column("shape").to_pylist(),
            stride=t.column("stride").to_pylist(),
            first_use_op_seq=t.column("first_use_op_seq").to_numpy(),
        )

    # -- storages
    def _build_storages(
        self, sid: np.ndarray, address: np.ndarray, nbytes: np.ndarray, alloc: np.ndarray, free: np.ndarray
    ) -> None:
        keep = nbytes > 0
        sid, address, nbytes, alloc = sid[keep], address[keep], nbytes[keep], alloc[keep]
        free = np.where(free[keep] >= 0, free[keep], _NO_FREE)
        end = address + nbytes
        self._bounds = np.unique(np.concatenate([address, end]))
        first_seg = np.searchsorted(self._bounds, address)
        last_seg = np.searchsorted(self._bounds, end)  # exclusive
        counts = last_seg - first_seg
        owner = np.repeat(np.arange(len(sid)), counts)
        within = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
        seg = np.repeat(first_seg, counts) + within
        order = np.lexsort((alloc[owner], seg))
        seg, owner = seg[order], owner[order]
        # One sorted key per (segment, storage): segment in the high bits, allocation op in the low ones.
        self._seg = seg
        self._key = (seg << _SEQ_BITS) | np.minimum(alloc[owner], _SEQ_MAX)
        self._seg_free = free[owner]
        self._seg_sid = sid[owner]

    def storage_of(self, addresses: np.ndarray, op_seqs: np.ndarray) -> np.ndarray:
        """The storage id live at each (address, op), -1 where none is."""
        a = np.asarray(addresses, np.int64)
        s = np.asarray(op_seqs, np.int64)
        out = np.full(len(a), -1, dtype=np.int64)
        if not len(self._bounds) or not len(a):
            return out
        seg = np.searchsorted(self._bounds, a, side="right") - 1
        inside = (seg >= 0) & (seg < len(self._bounds) - 1) & (s >= 0)
        # The last storage of the segment allocated at or before the op.
        pos = np.searchsorted(self._key, (np.maximum(seg, 0) << _SEQ_BITS) | np.clip(s, 0, _SEQ_MAX), "right") - 1
        pos_c = np.clip(pos, 0, max(len(self._key) - 1, 0))
        ok = inside & (pos >= 0) & (self._seg[pos_c] == seg) & (self._seg_free[pos_c] > s)
        out[ok] = self._seg_sid[pos_c[ok]]
        return out

    # -- tensors
    def _build_tensors(
        self,
        t_sid: np.ndarray,
        data_ptr: np.ndarray,
        itemsize: np.ndarray,
        shape: list[list[int]],
        stride: list[list[int]],
        first_use: np.ndarray,
    ) -> None:
        n = len(t_sid)
        self._t_order = np.argsort(t_sid, kind="stable")
        n_storages = int(max(t_sid.max(initial=-1), self._seg_sid.max(initial=-1))) + 2
        self._t_start = np.searchsorted(t_sid[self._t_order], np.arange(n_storages))
        self._t_ptr = data_ptr
        self._t_item = np.maximum(itemsize, 1)
        self._t_first = first_use
        depth = max(
            (
                sum(1 for d, st in zip(sh, sd, strict=True) if d > 1 and st > 0)
                for sh, sd in zip(shape, stride, strict=True)
            ),
            default=1,
        )
        depth = max(depth, 1)
        sizes = np.ones((n, depth), dtype=np.int64)
        strides = np.ones((n, depth), dtype=np.int64)
        span = np.zeros(n, dtype=np.int64)  # elements from element 0 to the last, plus one
        empty = np.zeros(n, dtype=bool)
        nested = np.ones(n, dtype=bool)
        for i, (sh, sd) in enumerate(zip(shape, stride, strict=True)):
            if any(d == 0 for d in sh):
                empty[i] = True
                continue
            dims = sorted(((st, d) for d, st in zip(sh, sd, strict=True) if d > 1 and st > 0), reverse=True)
            reach = 0
            for st, d in reversed(dims):  # smallest stride first: each must clear what the smaller ones reach
                if st <= reach:
                    nested[i] = False
                reach += (d - 1) * st
            span[i] = reach + 1
            for k, (st, d) in enumerate(dims):
                sizes[i, k], strides[i, k] = d, st
        self._sizes, self._strides, self._span, self._empty, self._nested = sizes, strides, span, empty, nested
        self._shape, self._stride = shape, stride

    def lookup(self, addresses: np.ndarray, op_seqs: np.ndarray) -> Matches:
        """Every live tensor whose elements contain each address at each op, as (query, tensor) pairs."""
        a = np.asarray(addresses, np.int64)
        s = np.asarray(op_seqs, np.int64)
        sid = self.storage_of(a, s)
        hit = np.flatnonzero(sid >= 0)
        counts = self._t_start[sid[hit] + 1] - self._t_start[sid[hit]]
        query = np.repeat(hit, counts)
        within = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
        tensor = self._t_order[np.repeat(self._t_start[sid[hit]], counts) + within]
        keep = (self._t_first[tensor] <= s[query]) & ~self._empty[tensor]
        query, tensor = query[keep], tensor[keep]
        byte = a[query] - self._t_ptr[tensor]
        elem = byte // self._t_item[tensor]
        keep = (byte >= 0) & (elem < self._span[tensor])
        query, tensor, elem = query[keep], tensor[keep], elem[keep]
        rem = elem.copy()
        for k in range(self._sizes.shape[1]):
            st = self._strides[tensor, k]
            i = np.minimum(rem // st, self._sizes[tensor, k] - 1)
            rem -= i * st
        contained = rem == 0
        odd = ~self._nested[tensor]
        if odd.any():  # self-overlapping layouts: list their element offsets
            for j in np.flatnonzero(odd):
                contained[j] = int(elem[j]) in self._offsets(int(tensor[j]))
        return Matches(query[contained], tensor[contained])

    def _offsets(self, tensor: int) -> set[int]:
        grid = np.zeros(1, dtype=np.int64)
        for d, st in zip(self._shape[tensor], self._stride[tensor], strict=True):
            grid = (grid[:, None] + np.arange(d, dtype=np.int64)[None, :] * st).ravel()
        return set(grid.tolist())
