"""Address -> tensor lookup: hand-built cases and a brute-force reference on random storages and views."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tenprof.analyses.tensors.address_lookup import AddressIndex


@dataclass
class World:
    """Storages and tensors in the column form the index is built from."""

    storages: list[tuple[int, int, int, int]] = field(default_factory=list)  # address, nbytes, alloc, free
    tensors: list[tuple[int, int, int, list[int], list[int], int]] = field(default_factory=list)
    # storage, data_ptr, itemsize, shape, stride, first use

    def storage(self, address: int, nbytes: int, alloc: int, free: int = -1) -> int:
        self.storages.append((address, nbytes, alloc, free))
        return len(self.storages) - 1

    def tensor(
        self, storage: int, offset_bytes: int, itemsize: int, shape: list[int], stride: list[int], first: int
    ) -> int:
        self.tensors.append((storage, self.storages[storage][0] + offset_bytes, itemsize, shape, stride, first))
        return len(self.tensors) - 1

    def index(self) -> AddressIndex:
        s, t = self.storages, self.tensors
        return AddressIndex(
            storage_id=np.arange(len(s)),
            address=np.array([x[0] for x in s]),
            nbytes=np.array([x[1] for x in s]),
            alloc_op_seq=np.array([x[2] for x in s]),
            free_op_seq=np.array([x[3] for x in s]),
            tensor_storage=np.array([x[0] for x in t], dtype=np.int64),
            data_ptr=np.array([x[1] for x in t], dtype=np.int64),
            itemsize=np.array([x[2] for x in t], dtype=np.int64),
            shape=[x[3] for x in t],
            stride=[x[4] for x in t],
            first_use_op_seq=np.array([x[5] for x in t], dtype=np.int64),
        )

    def brute_force(self, address: int, seq: int) -> set[int]:
        found = set()
        for tid, (sid, ptr, item, shape, stride, first) in enumerate(self.tensors):
            _, _, alloc, free = self.storages[sid]
            if not (alloc <= seq and (free < 0 or seq < free) and first <= seq):
                continue
            for index in itertools.product(*(range(d) for d in shape)):
                start = ptr + item * sum(i * s for i, s in zip(index, stride, strict=True))
                if start <= address < start + item:
                    found.add(tid)
                    break
        return found


def pairs(index: AddressIndex, addresses: list[int], seqs: list[int]) -> list[set[int]]:
    m = index.lookup(np.array(addresses, dtype=np.int64), np.array(seqs, dtype=np.int64))
    out: list[set[int]] = [set() for _ in addresses]
    for q, t in zip(m.query.tolist(), m.tensor_id.tolist(), strict=True):
        out[q].add(t)
    return out


def test_transposed_and_sliced_views_skip_the_gaps() -> None:
    w = World()
    s = w.storage(1000, 4 * 4 * 4, alloc=0)
    base = w.tensor(s, 0, 4, [4, 4], [4, 1], first=0)
    left_half = w.tensor(s, 0, 4, [4, 2], [4, 1], first=1)  # x[:, :2]: two of every four elements
    col = w.tensor(s, 4, 4, [4], [4], first=1)  # x[:, 1]
    t_view = w.tensor(s, 0, 4, [4, 4], [1, 4], first=1)  # x.t(): every element
    index = w.index()
    # element 2 (byte 1008) is in row 0, column 2: outside the left half and column 1
    hits = pairs(index, [1008, 1004, 1017, 1003, 1064], [1, 1, 1, 1, 1])
    assert hits[0] == {base, t_view}
    assert hits[1] == {base, left_half, col, t_view}
    assert hits[2] == {base, left_half, t_view}  # byte 1017 is inside element 4 (row 1, col 0)
    assert hits[3] == {base, left_half, t_view}  # a byte in the middle of element 0
    assert hits[4] == set()  # one past the end


def test_views_do_not_exist_before_they_are_made() -> None:
    w = World()
    s = w.storage(0, 64, alloc=0)
    base = w.tensor(s, 0, 4, [16], [1], first=0)
    later = w.tensor(s, 0, 4, [4, 4], [4, 1], first=5)
    index = w.index()
    assert pairs(index, [0, 0], [4, 5]) == [{base}, {base, later}]


def test_overlapping_views_expand_and_as_strided() -> None:
    w = World()
    s = w.storage(0, 40, alloc=0)
    row = w.tensor(s, 0, 4, [3], [1], first=0)
    expanded = w.tensor(s, 0, 4, [5, 3], [0, 1], first=0)  # row.expand(5, 3): stride 0
    odd = w.tensor(s, 0, 4, [3, 3], [3, 2], first=0)  # offsets {0,2,3,4,5,6,7,8,10}: strides do not nest
    index = w.index()
    got = pairs(index, [0, 4, 8, 12, 16, 36, 40], [0] * 7)
    assert got == [{row, expanded, odd}, {row, expanded}, {row, expanded, odd}, {odd}, {odd}, set(), set()]


def test_address_reuse_after_free_finds_the_tensor_of_that_time() -> None:
    w = World()
    first = w.storage(4096, 1024, alloc=0, free=10)
    second = w.storage(4096, 512, alloc=10, free=20)
    third = w.storage(4096 + 512, 512, alloc=12)  # the rest of the first block, reused by another tensor
    a = w.tensor(first, 0, 2, [512], [1], first=0)
    b = w.tensor(second, 0, 2, [256], [1], first=10)
    c = w.tensor(third, 0, 2, [256], [1], first=12)
    index = w.index()
    got = pairs(index, [4096, 4096, 4096 + 600, 4096 + 600, 4096 + 600, 4096], [9, 10, 9, 11, 12, 20])
    assert got == [{a}, {b}, {a}, set(), {c}, set()]
    sids = index.storage_of(np.array([4096, 4096, 4096, 9999]), np.array([0, 15, 25, 0]))
    assert sids.tolist() == [first, second, -1, -1]


@st.composite
def worlds(draw: st.DrawFn) -> World:
    """Storages placed in a small address space over a few ops, reusing addresses after frees (never
    overlapping while alive), each with a few random views (any strides, offsets and itemsizes)."""
    w = World()
    live: list[tuple[int, int, int]] = []  # address, end, storage
    for seq in range(draw(st.integers(1, 12))):
        for address, end, sid in list(live):
            if draw(st.booleans()):
                a, nb, alloc, _ = w.storages[sid]
                w.storages[sid] = (a, nb, alloc, seq)
                live.remove((address, end, sid))
        nbytes = draw(st.sampled_from([8, 16, 24, 64]))
        address = draw(st.integers(0, 16)) * 8
        if any(address < e and s < address + nbytes for s, e, _ in live):
            continue
        sid = w.storage(address, nbytes, alloc=seq)
        live.append((address, address + nbytes, sid))
        for _ in range(draw(st.integers(1, 3))):
            item = draw(st.sampled_from([1, 2, 4]))
            ndim = draw(st.integers(0, 3))
            shape = [draw(st.integers(1, 4)) for _ in range(ndim)]
            stride = [draw(st.integers(0, 6)) for _ in range(ndim)]
            span = (sum((d - 1) * s for d, s in zip(shape, stride, strict=True)) + 1) * item
            if span > nbytes:
                continue
            offset = draw(st.integers(0, (nbytes - span) // item)) * item
            w.tensor(sid, offset, item, shape, stride, first=draw(st.integers(seq, seq + 3)))
    return w


@settings(max_examples=200, deadline=None)
@given(worlds(), st.lists(st.tuples(st.integers(-4, 200), st.integers(-1, 16)), min_size=1, max_size=40))
def test_lookup_matches_brute_force(world: World, queries: list[tuple[int, int]]) -> None:
    if not world.tensors:
        return
    index = world.index()
    got = pairs(index, [a for a, _ in queries], [s for _, s in queries])
    for (address, seq), found in zip(queries, got, strict=True):
        assert found == world.brute_force(address, seq), (address, seq)
