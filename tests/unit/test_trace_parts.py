"""A run that stops torch.profiler for the steps it times un-profiled records its trace in parts, one per
session: the importer joins them into one timeline, and gives the steps between them from tenprof's clock
reads (the trace has no range for them)."""

from __future__ import annotations

from typing import Any

import numpy as np
import orjson
import pyarrow as pa

from tenprof.importers.callsites import Callsites
from tenprof.importers.formats.kineto_events import decode_events
from tenprof.importers.timeline_builder import build_timeline
from tenprof.importers.timeline_columns import Collector


def _session(ts: float, op: str, kernel: str) -> Collector:
    """One session's events as a new session numbers them: External id 1, correlation 7 for its launch."""
    cpu = {"pid": 1, "tid": 1}
    events: list[dict[str, Any]] = [
        {"ph": "X", "cat": "cpu_op", "name": op, **cpu, "ts": ts, "dur": 10, "args": {"External id": 1}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", **cpu, "ts": ts + 2, "dur": 3}
        | {"args": {"External id": 1, "correlation": 7}},
        {"ph": "X", "cat": "kernel", "name": kernel, "pid": 0, "tid": 7, "ts": ts + 20, "dur": 5}
        | {"args": {"External id": 1, "correlation": 7, "device": 0, "stream": 7}},
    ]
    col = Collector()
    col.add_batch(decode_events(orjson.dumps(events)))
    return col


def _build(col: Collector) -> dict[str, pa.Table]:
    tables: dict[str, pa.Table] = {}
    build_timeline(col, 0, tables.__setitem__)
    return tables


def test_parts_whose_ids_start_again_join_each_kernel_to_its_own_op() -> None:
    joined = _session(1000.0, "aten::first", "first_kernel")
    # the later session's base time is 1 ms later: its times move onto the first one's clock
    joined.append_part(_session(500.0, "aten::second", "second_kernel"), shift_us=1000.0)
    tables = _build(joined)
    ops = tables["ops"].to_pydict()
    kernels = tables["kernels"].to_pydict()
    assert ops["name"] == ["aten::first", "aten::second"] and ops["start_ns"] == [1_000_000, 1_500_000]
    assert [ops["name"][i] for i in kernels["op_id"]] == ["aten::first", "aten::second"]
    assert kernels["start_ns"] == [1_020_000, 1_520_000]
    assert tables["api_calls"].column("correlation_id").to_pylist() == [7, 14]


def test_parts_with_ids_already_apart_keep_them() -> None:
    joined = _session(1000.0, "aten::first", "first_kernel")
    later = _session(2000.0, "aten::second", "second_kernel")
    later.api.data["corr"][0] = later.kernels.data["corr"][0] = 9
    joined.append_part(later, shift_us=0.0)
    assert list(joined.api.data["corr"]) == [7, 9]


def test_steps_run_with_the_profiler_stopped_come_from_the_clock_reads() -> None:
    # four tenprof.step() calls: steps 2 and 3 ran un-profiled (the third field), the run ended in step 4
    bounds = [[100, 110, 0], [200, 210, 1], [300, 310, 1], [400, 410, 0]]
    log = Callsites(step_bounds=bounds, started_ns=50, stopped_ns=500, step_calls=4)
    number, start, end = log.unrecorded_steps(np.array([0, 1, 4]))
    assert number.tolist() == [2, 3] and start.tolist() == [210, 310] and end.tolist() == [300, 400]
    # a trace that has the range already (toggled-off capture, older runs) keeps its own
    assert log.unrecorded_steps(np.array([0, 1, 2, 3, 4]))[0].tolist() == []
