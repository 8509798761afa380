"""Nesting and union of intervals against brute-force references."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tenprof.core.intervals import (
    IdIndex,
    _nest_by_stack,
    _nest_laminar,
    coverage,
    nest,
    take,
    uncovered,
    union_length,
)


@st.composite
def nested_intervals(draw: st.DrawFn) -> list[tuple[int, int]]:
    """Properly nested intervals, like one thread's op ranges."""
    out: list[tuple[int, int]] = []

    def fill(lo: int, hi: int, depth: int) -> None:
        t = lo
        while t < hi and len(out) < 40:
            gap = draw(st.integers(0, 5))
            length = draw(st.integers(1, 30))
            s, e = t + gap, min(t + gap + length, hi)
            if s >= e:
                break
            out.append((s, e))
            if depth < 3 and e - s > 2 and draw(st.booleans()):
                fill(s, e, depth + 1)
            t = e

    fill(0, 500, 0)
    return out


@settings(max_examples=150, deadline=None)
@given(nested_intervals(), st.lists(st.integers(-5, 510), max_size=30))
def test_nest_matches_brute_force(intervals: list[tuple[int, int]], probes: list[int]) -> None:
    starts = np.array([s for s, _ in intervals], dtype=np.int64)
    ends = np.array([e for _, e in intervals], dtype=np.int64)
    result = nest(starts, ends)
    for i, (s, e) in enumerate(intervals):
        # Identical ranges (a child as long as its parent) nest in input order, as Kineto lists them.
        enclosing = [
            j
            for j, (s2, e2) in enumerate(intervals)
            if j != i and s2 <= s and e <= e2 and ((s2, -e2) < (s, -e) or ((s2, e2) == (s, e) and j < i))
        ]
        expected_parent = min(enclosing, key=lambda j: (intervals[j][1] - intervals[j][0], -j)) if enclosing else -1
        assert result.parent[i] == expected_parent
        assert result.depth[i] == len(enclosing)
    times = np.array(probes, dtype=np.int64)
    found = result.innermost_at(times)
    for t, got in zip(probes, found, strict=True):
        covering = [j for j, (s, e) in enumerate(intervals) if s <= t < e]
        expected = min(covering, key=lambda j: (intervals[j][1] - intervals[j][0], -j)) if covering else -1
        assert got == expected


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 300), st.integers(0, 40)), max_size=40))
def test_union_length_matches_brute_force(pairs: list[tuple[int, int]]) -> None:
    starts = np.array([s for s, _ in pairs], dtype=np.int64)
    ends = np.array([s + d for s, d in pairs], dtype=np.int64)
    covered = set()
    for s, d in pairs:
        covered.update(range(s, s + d))
    assert union_length(starts, ends) == len(covered)


def test_children_ending_after_their_parent_are_clamped() -> None:
    result = nest(np.array([0, 5], dtype=np.int64), np.array([10, 11], dtype=np.int64))
    assert result.parent.tolist() == [-1, 0]
    assert result.innermost_at(np.array([10, 11], dtype=np.int64)).tolist() == [-1, -1]


def test_take_handles_missing_and_empty() -> None:
    values = np.array([7, 8, 9], dtype=np.int64)
    assert take(values, np.array([2, -1, 0], dtype=np.int64)).tolist() == [9, -1, 7]
    assert take(np.array([], dtype=np.int64), np.array([-1, -1], dtype=np.int64)).tolist() == [-1, -1]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 300), st.integers(0, 40)), max_size=30),
    st.lists(st.tuples(st.integers(-10, 320), st.integers(0, 80)), min_size=1, max_size=10),
)
def test_coverage_matches_brute_force(pairs: list[tuple[int, int]], windows: list[tuple[int, int]]) -> None:
    starts = np.array([s for s, _ in pairs], dtype=np.int64)
    ends = np.array([s + d for s, d in pairs], dtype=np.int64)
    covered = set()
    for s, d in pairs:
        covered.update(range(s, s + d))
    lo = np.array([a for a, _ in windows], dtype=np.int64)
    hi = np.array([a + w for a, w in windows], dtype=np.int64)
    got = coverage(starts, ends, lo, hi)
    for (a, w), value in zip(windows, got, strict=True):
        assert value == len([t for t in covered if a <= t < a + w])


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 300), st.integers(0, 40)), max_size=20),
    st.lists(st.tuples(st.integers(0, 300), st.integers(0, 40)), max_size=20),
)
def test_uncovered_matches_brute_force(windows: list[tuple[int, int]], by: list[tuple[int, int]]) -> None:
    def points(pairs: list[tuple[int, int]]) -> set[int]:
        return {t for s, d in pairs for t in range(s, s + d)}

    def arrays(pairs: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
        return np.array([s for s, _ in pairs], dtype=np.int64), np.array([s + d for s, d in pairs], dtype=np.int64)

    lo, hi = uncovered(arrays(windows), arrays(by))
    got = {t for a, b in zip(lo.tolist(), hi.tolist(), strict=True) for t in range(a, b)}
    assert got == points(windows) - points(by)
    assert (lo[1:] > hi[:-1]).all() and (hi > lo).all()  # disjoint, sorted, non-empty blocks


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-1, 12), max_size=40), st.lists(st.integers(-3, 14), max_size=20), st.booleans())
def test_id_index_agrees_with_a_dict(ids: list[int], queries: list[int], keep_first: bool) -> None:
    expected: dict[int, int] = {}
    for position, value in enumerate(ids):
        if value >= 0 and (not keep_first or value not in expected):
            expected[value] = position
    found = IdIndex(np.array(ids, dtype=np.int64), keep_first).find(np.array(queries, dtype=np.int64))
    assert found.tolist() == [expected.get(q, -1) for q in queries]


@st.composite
def ranges_with_ties(draw: st.DrawFn) -> list[tuple[int, int]]:
    """Ranges on a coarse grid: equal starts and ends, zero-length ranges, and (drawn as they come) ranges
    that overlap without nesting, as a trace's rounding makes them."""
    pairs = draw(st.lists(st.tuples(st.integers(0, 12), st.integers(0, 6)), max_size=30))
    return [(s, s + d) for s, d in pairs]


@settings(max_examples=400, deadline=None)
@given(st.one_of(nested_intervals(), ranges_with_ties()))
def test_the_array_nesting_is_the_stack_walks_wherever_it_answers(intervals: list[tuple[int, int]]) -> None:
    starts = np.array([s for s, _ in intervals], dtype=np.int64)
    ends = np.array([e for _, e in intervals], dtype=np.int64)
    order = np.lexsort((-ends, starts))
    walked = _nest_by_stack(starts, ends, order)
    fast = _nest_laminar(starts, ends, order)
    if fast is None:  # only where a child ends after its parent (the walk clamps it) or nothing to nest
        clamped = [i for i in range(len(intervals)) if walked.parent[i] >= 0 and ends[i] > ends[walked.parent[i]]]
        assert clamped or not intervals
        return
    for field in ("parent", "depth", "seg_starts", "seg_ids"):
        assert getattr(fast, field).tolist() == getattr(walked, field).tolist(), field
