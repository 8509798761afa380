"""Trace scopes take the call path tenprof.scope recorded (importers.call_paths.match_sidecar_scopes)."""

from __future__ import annotations

import numpy as np

from tenprof.importers.call_paths import match_sidecar_scopes


def _records(starts: list[int], frames: list[int]) -> list[list[object]]:
    """tenprof.scope's records: name, thread, bracket start and end, frame, insert depth."""
    return [["proj", 7, s, s + 10, f, 0] for s, f in zip(starts, frames, strict=True)]


def test_scopes_entered_microseconds_apart_match_in_order_though_the_clock_is_off() -> None:
    # two scopes per iteration, 12 ns apart, on a clock mapping 6 ns off: each range overlaps the bracket
    # before its own more than its own, so the nearest bracket would give each the other scope's line
    trace_starts = np.array([100 + 12 * k for k in range(6)], dtype=np.int64)
    records = _records([106 + 12 * k for k in range(6)], [5, 7, 5, 7, 5, 7])
    frame, _ = match_sidecar_scopes(["proj"] * 6, np.full(6, 7), trace_starts, trace_starts + 8, records)
    assert frame.tolist() == [5, 7, 5, 7, 5, 7]


def test_with_a_record_missing_each_range_takes_the_bracket_it_overlaps() -> None:
    trace_starts = np.array([100, 200, 300], dtype=np.int64)
    records = _records([101, 301], [5, 9])  # the middle scope's record is missing: it overlaps none
    frame, _ = match_sidecar_scopes(["proj"] * 3, np.full(3, 7), trace_starts, trace_starts + 8, records)
    assert frame.tolist() == [5, -1, 9]
    other, _ = match_sidecar_scopes(["other"], np.full(1, 7), trace_starts[:1], trace_starts[:1] + 8, records)
    assert other.tolist() == [-1]
