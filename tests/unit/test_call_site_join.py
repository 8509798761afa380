"""Ops joined to the native recorder's records by time (importers/call_paths.py `_join_callsites`): an op
inside a record takes its frame; one outside every record takes the nearest within the clock mapping's
error, or an isolated one that no other op is inside; otherwise none (torch-free)."""

from __future__ import annotations

import numpy as np

from tenprof.importers.call_paths import ISOLATED_MAX_NS, _join_callsites
from tenprof.importers.callsites import Callsites

US = 1_000
THREAD = 7


def _records(*spans: tuple[int, int]) -> Callsites:
    """One record per span (start, end in us) on THREAD, its frame its index + 100."""
    return Callsites(
        call_thread=np.full(len(spans), THREAD, dtype=np.int64),
        call_start=np.array([s * US for s, _ in spans], dtype=np.int64),
        call_end=np.array([e * US for _, e in spans], dtype=np.int64),
        call_frame=np.arange(100, 100 + len(spans), dtype=np.int64),
    )


def _frames(calls: Callsites, mids_us: list[int], tolerance_us: int = 10) -> list[int]:
    mids = np.array([m * US for m in mids_us], dtype=np.int64)
    frame = np.full(len(mids), -1, dtype=np.int64)
    source = np.zeros(len(mids), dtype=np.int8)
    wanted = np.ones(len(mids), dtype=bool)
    _join_callsites(calls, np.full(len(mids), THREAD), mids, wanted, frame, source, tolerance_ns=tolerance_us * US)
    return frame.tolist()


def test_an_op_inside_a_record_or_within_the_mapping_error_takes_it() -> None:
    calls = _records((0, 10), (20, 30))
    assert _frames(calls, [5, 25, 35]) == [100, 101, 101]  # 35: 5 us past the second, within 10


def test_an_isolated_op_further_out_takes_the_one_record_near_it_that_no_op_is_inside() -> None:
    # a run's first op, its record 120 us away by the clock mapping, the next record a millisecond on
    calls = _records((0, 10), (1_000, 1_010), (1_020, 1_030))
    assert _frames(calls, [130, 1_005, 1_025]) == [100, 101, 102]


def test_an_op_out_of_reach_or_between_records_or_beside_a_taken_one_takes_none() -> None:
    far = ISOLATED_MAX_NS // US + 100
    calls = _records((0, 10), (far + 2_000, far + 2_010))
    assert _frames(calls, [10 + far]) == [-1]  # beyond ISOLATED_MAX_NS
    between = _records((0, 10), (300, 310))
    assert _frames(between, [110]) == [-1]  # 100 us from one, 190 us from the other: which is unknown
    taken = _records((0, 10), (2_000, 2_010))
    assert _frames(taken, [5, 130]) == [100, -1]  # the near record is the first op's own
