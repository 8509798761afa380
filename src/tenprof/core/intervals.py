"""Nested time intervals: parents, and "which innermost interval covers time t" as a vectorised lookup.

Kineto's ranges on one thread nest properly except for rounding at the edges (a child may end a
nanosecond after its parent); children are clamped into their parent rather than rejected.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

I64Array = npt.NDArray[np.int64]


def take(values: npt.NDArray[Any], index: I64Array, default: Any = -1) -> npt.NDArray[Any]:
    """values[index] where index >= 0, else `default`; safe when `values` is empty."""
    if len(values) == 0:
        return np.full(len(index), default, dtype=values.dtype if len(index) == 0 else np.asarray(default).dtype)
    return np.where(index >= 0, values[np.clip(index, 0, len(values) - 1)], default)


@dataclass(frozen=True)
class Nesting:
    """Result of `nest`: for each input interval, its parent's position (-1 at top) and depth."""

    parent: I64Array
    depth: I64Array
    # Elementary segments: seg_ids[i] is the innermost interval covering [seg_starts[i], seg_starts[i+1]).
    seg_starts: I64Array
    seg_ids: I64Array

    def innermost_at(self, times: I64Array) -> I64Array:
        """Index of the innermost interval covering each time, -1 where none does."""
        if len(self.seg_starts) == 0:
            return np.full(len(times), -1, dtype=np.int64)
        pos = np.searchsorted(self.seg_starts, times, side="right") - 1
        out = np.where(pos >= 0, self.seg_ids[np.clip(pos, 0, None)], -1)
        return out.astype(np.int64)


def nest(starts: I64Array, ends: I64Array) -> Nesting:
    """Parents and covering segments of intervals that nest (one thread's ranges)."""
    order = np.lexsort((-ends, starts))  # by start, longer first on ties
    return _nest_laminar(starts, ends, order) or _nest_by_stack(starts, ends, order)


def _nest_laminar(starts: I64Array, ends: I64Array, order: I64Array) -> Nesting | None:
    """`nest` in array operations, for ranges that nest as recorded (no child ending after its parent:
    every trace in tests/data); None when they do not, for the stack walk to clamp them.

    The walk's sequence is known without walking: range j leaves the stack just before the first range
    after it in `order` that starts at or after its end, and of those leaving at one moment the innermost
    (latest opened) first. Sorting the opens and closes that way and checking the sequence is a stack's
    (each close finds its own range on top) gives depths; a range's parent is the latest range opened
    before it one level up; the covering segments are the sequence's times with their top range."""
    n = len(order)
    if n == 0:
        return None
    s, e = starts[order], ends[order]  # by position in `order`
    position = np.arange(n, dtype=np.int64)
    leaves_before = np.maximum(position + 1, np.searchsorted(s, e, side="left"))
    moment = np.concatenate([position, leaves_before])
    is_open = np.concatenate([np.ones(n, dtype=bool), np.zeros(n, dtype=bool)])
    innermost_first = np.concatenate([np.zeros(n, dtype=np.int64), n - 1 - position])
    # one int64 key (moment, then closes before the open they precede, then innermost first): numpy sorts
    # a single integer key by radix, several times faster than lexsort's three keys
    sequence = np.argsort((moment * 2 + is_open) * n + innermost_first, kind="stable")
    which = np.where(sequence < n, sequence, sequence - n)  # the range of each step
    opening = is_open[sequence]
    depth_after = np.cumsum(np.where(opening, 1, -1))
    depth = np.empty(n, dtype=np.int64)
    depth[which[opening]] = depth_after[opening] - 1
    # a stack's sequence: each close leaves the depth its range opened at (else a range ended inside another
    # one's children: not nested as recorded)
    if (depth_after[~opening] != depth[which[~opening]]).any():
        return None
    # parent: the latest open before one's own, one level up (keys: level, then place in the sequence)
    step = np.flatnonzero(opening)
    width = 2 * n + 1
    keys = depth[which[step]] * width + step
    by_key = np.argsort(keys, kind="stable")
    at = np.searchsorted(keys[by_key], keys - width) - 1
    parent_position = np.where(depth[which[step]] > 0, which[step][by_key[np.clip(at, 0, None)]], -1)
    parent_of = np.full(n, -1, dtype=np.int64)
    parent_of[which[step]] = parent_position
    inside = parent_of >= 0
    if (e[inside] > e[parent_of[inside]]).any():  # a child ending after its parent: the walk clamps it
        return None
    # covering segments: each step's time and the range on top after it; of equal times, the last step's
    times = np.where(opening, s[which], e[which])
    top = np.where(opening, which, parent_of[which])
    last = np.concatenate([times[1:] != times[:-1], [True]])
    parent = np.full(n, -1, dtype=np.int64)
    parent[order] = np.where(parent_of >= 0, order[np.clip(parent_of, 0, None)], -1)
    depth_by_index = np.empty(n, dtype=np.int64)
    depth_by_index[order] = depth
    seg_ids = np.where(top[last] >= 0, order[np.clip(top[last], 0, None)], -1)
    return Nesting(parent, depth_by_index, times[last].astype(np.int64), seg_ids.astype(np.int64))


def _nest_by_stack(starts: I64Array, ends: I64Array, order: I64Array) -> Nesting:
    """`nest` by walking the ranges in `order` with a stack, clamping a child that ends after its parent
    to the parent's end (Kineto's rounding at the edges)."""
    n = len(starts)
    # one pass with a stack, on Python ints read through memoryviews (numpy scalars cost several times
    # more per step) and kept in typed arrays (a list of ints costs 36 bytes an element, these 8)
    start_of = np.ascontiguousarray(starts, dtype=np.int64).data
    end_of = np.ascontiguousarray(ends, dtype=np.int64).data
    parent = array("q", [-1]) * n
    depth = array("q", [0]) * n
    seg_starts = array("q")
    seg_ids = array("q")
    stack: list[int] = []
    stack_end: list[int] = []

    def emit(t: int, ident: int) -> None:
        """A covering segment from t: `ident` on top (a later one at the same time replaces it)."""
        if seg_starts and seg_starts[-1] == t:
            seg_ids[-1] = ident
        else:
            seg_starts.append(t)
            seg_ids.append(ident)

    def close_top() -> None:
        stack.pop()
        emit(stack_end.pop(), stack[-1] if stack else -1)

    for i in order.astype(np.int64).data:
        s = start_of[i]
        e = end_of[i]
        while stack and stack_end[-1] <= s:
            close_top()
        if stack:
            parent[i] = stack[-1]
            depth[i] = len(stack)
            e = min(e, stack_end[-1])
        stack.append(i)
        stack_end.append(e)
        emit(s, i)
    while stack:
        close_top()
    return Nesting(
        np.frombuffer(parent, dtype=np.int64).copy(),
        np.frombuffer(depth, dtype=np.int64).copy(),
        np.frombuffer(seg_starts, dtype=np.int64).copy(),
        np.frombuffer(seg_ids, dtype=np.int64).copy(),
    )


class IdIndex:
    """Ids (External id, correlation id: -1 for none) -> the position holding each, found by binary search
    over the sorted ids: a dict of millions of ints costs ten times the memory. Where an id repeats, the
    first or the last position holding it is kept."""

    def __init__(self, ids: I64Array, keep_first: bool) -> None:
        positions = np.flatnonzero(ids >= 0)
        by_id = positions[np.argsort(ids[positions], kind="stable")]
        sorted_ids = ids[by_id]
        if len(sorted_ids):  # one position per id: the first (or last) of each run of equal ids
            edge = sorted_ids[1:] != sorted_ids[:-1]
            keep = np.concatenate([[True], edge]) if keep_first else np.concatenate([edge, [True]])
            by_id, sorted_ids = by_id[keep], sorted_ids[keep]
        self._ids, self._positions = sorted_ids, by_id.astype(np.int64)

    def find(self, ids: I64Array) -> I64Array:
        """The position holding each id, -1 for an id not held (and for -1)."""
        if len(self._ids) == 0:
            return np.full(len(ids), -1, dtype=np.int64)
        at = np.clip(np.searchsorted(self._ids, ids), 0, len(self._ids) - 1)
        return np.where((self._ids[at] == ids) & (ids >= 0), self._positions[at], -1)


def union_length(starts: I64Array, ends: I64Array) -> int:
    """Total time covered by the union of intervals (GPU busy time)."""
    block_start, block_end = merged(starts, ends)
    return int((block_end - block_start).sum())


def merged(starts: I64Array, ends: I64Array) -> tuple[I64Array, I64Array]:
    """The union of intervals as sorted, disjoint blocks (starts, ends)."""
    if len(starts) == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    order = np.argsort(starts, kind="stable")
    s = starts[order]
    e = np.maximum.accumulate(ends[order])
    new_block = np.empty(len(s), dtype=bool)
    new_block[0] = True
    new_block[1:] = s[1:] > e[:-1]
    first = np.flatnonzero(new_block)
    last = np.append(first[1:], len(s)) - 1
    return s[first], e[last]


def coverage(starts: I64Array, ends: I64Array, lo: I64Array, hi: I64Array) -> I64Array:
    """For each window [lo[i], hi[i]), how much of it the union of the intervals covers.

    One merge and two binary searches per window: linear in the events, not events x windows."""
    lo = np.asarray(lo, dtype=np.int64)
    hi = np.asarray(hi, dtype=np.int64)
    bs, be = merged(starts, ends)
    if len(bs) == 0:
        return np.zeros(len(lo), dtype=np.int64)
    before = np.concatenate([[0], np.cumsum(be - bs)])  # covered time before block k

    def covered_until(t: I64Array) -> I64Array:
        k = np.searchsorted(bs, t, side="right") - 1  # last block starting at or before t
        kk = np.clip(k, 0, None)
        inside = np.clip(np.minimum(t, be[kk]) - bs[kk], 0, None)
        return np.asarray(np.where(k >= 0, before[kk] + inside, 0), dtype=np.int64)

    covered: I64Array = np.maximum(covered_until(hi) - covered_until(lo), 0)
    return covered


def uncovered(windows: tuple[I64Array, I64Array], by: tuple[I64Array, I64Array]) -> tuple[I64Array, I64Array]:
    """The parts of the windows' union that no interval of `by` covers, as sorted, disjoint blocks: the
    GPU's idle time inside some steps, say, where the steps leave out others."""
    ws, we = merged(*windows)
    bs, be = merged(*by)
    # Cut at every boundary of either set; a piece lies in the result when its midpoint is in a window
    # and in no interval of `by`.
    cuts = np.sort(np.concatenate([ws, we, bs, be]))
    cuts = cuts[np.concatenate([[True], cuts[1:] != cuts[:-1]])] if len(cuts) else cuts  # sort+dedupe: unique
    if len(cuts) < 2:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    lo, hi = cuts[:-1], cuts[1:]
    mid = lo + (hi - lo) // 2
    in_window = _inside_blocks(ws, we, mid)
    in_by = _inside_blocks(bs, be, mid)
    keep = in_window & ~in_by & (hi > lo)
    return merged(lo[keep], hi[keep])


def _inside_blocks(starts: I64Array, ends: I64Array, t: I64Array) -> npt.NDArray[np.bool_]:
    k = np.searchsorted(starts, t, side="right") - 1
    return (k >= 0) & (t < ends[np.clip(k, 0, None)]) if len(starts) else np.zeros(len(t), dtype=bool)


def rank_within(groups: I64Array, times: I64Array) -> I64Array:
    """0-based rank of each item among the items of its group, by time."""
    n = len(groups)
    out = np.zeros(n, dtype=np.int64)
    if n == 0:
        return out
    order = np.lexsort((times, groups))
    g = groups[order]
    new_group = np.empty(n, dtype=bool)
    new_group[0] = True
    new_group[1:] = g[1:] != g[:-1]
    group_start = np.maximum.accumulate(np.where(new_group, np.arange(n), 0))
    out[order] = np.arange(n) - group_start
    return out
