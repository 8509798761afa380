"""A CPU process group (gloo): its collectives run on gloo's own threads (`gloo:all_reduce` ranges) while
the script waits for them outside any op. That wait is the step's `collective` part and the rank's
communication, so the rank the others wait for is named as on GPUs. Two ranks' torch.profiler traces are
written here as a 2-rank gloo job records them (the shape seen in a real 4-rank run of
examples/parallel_2d.py on the CPU): rank 1 computes 6 ms a step more, rank 0 waits for it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from tenprof.analyses.compare.ranks import ranks_report
from tenprof.analyses.timeline.step_time import step_time
from tenprof.importers.timeline_import import import_trace
from tenprof.store.profile import load_profile

STEP_US = 10_000.0
MAIN, GLOO = 1, 2  # the script's thread and gloo's


def _event(cat: str, name: str, tid: int, ts: float, dur: float) -> dict[str, Any]:
    return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": tid, "ts": ts, "dur": dur, "args": {}}


def _rank_trace(compute_us: float) -> dict[str, Any]:
    """Eight steps: an op computing `compute_us`, then an all-reduce: the c10d op hands it to gloo's thread
    (50 us), whose range lasts until the slower rank has computed too (both ranks' all-reduces end 9 ms
    into the step); the script waits meanwhile; the step ends at 10 ms."""
    events: list[dict[str, Any]] = []
    for k in range(8):
        t = k * STEP_US
        events.append(_event("user_annotation", f"ProfilerStep#{k}", MAIN, t, STEP_US - 1))
        events.append(_event("cpu_op", "aten::mm", MAIN, t + 10, compute_us))
        handed = t + 10 + compute_us + 5
        events.append(_event("cpu_op", "c10d::allreduce_", MAIN, handed, 50))
        events.append(_event("user_annotation", "gloo:all_reduce", GLOO, handed + 20, t + 9_000 - handed - 20))
    return {"traceEvents": events}


def test_a_rank_waiting_on_a_gloo_collective_waits_in_the_collective_part_and_the_late_rank_is_named(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out"
    for rank, compute_us in ((0, 2_000.0), (1, 8_000.0)):
        trace = tmp_path / f"rank{rank}.json"
        trace.write_bytes(orjson.dumps(_rank_trace(compute_us)))
        import_trace(trace, out / f"rank{rank:05d}", force=False)
    waits = [step_time(load_profile(out / f"rank{r:05d}")).mean("collective") for r in (0, 1)]
    # rank 0: from its hand-over to the end of the all-reduce, less the c10d op's own 50 us (dispatch)
    assert waits[0] == pytest.approx((9_000 - 2_015 - 50) * 1e3, rel=1e-3)
    assert waits[1] == pytest.approx((9_000 - 8_015 - 50) * 1e3, rel=1e-3)
    report = ranks_report(out)
    assert [s.communication_ns for s in report.ranks] == pytest.approx([6_965e3, 965e3], rel=1e-3)
    # no GPU work to overlap it with: all of it is exposed, and the rest of the step is not idle waiting
    assert [s.exposed_ns for s in report.ranks] == [s.communication_ns for s in report.ranks]
    assert [s.idle_ns for s in report.ranks] == [s.step_ns - s.communication_ns for s in report.ranks]
    assert [s.rank for s in report.stragglers] == [1]
