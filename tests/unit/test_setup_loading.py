"""A recording without marked steps leaves its set-up out of the steps (analyses.timeline.step_time); where a
DataLoader starting its workers or making its first batch holds part of it, the report says how much, as the set-up
is then more than imports and the model (a public ViT inference spent 780 ms of its 2.68 s set-up in the
DataLoader's first `__next__`)."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from tenprof.analyses.timeline.step_time import step_time
from tenprof.renderers.step_time_text import render_step_time
from tests.helpers import imported_events, launch


def test_the_set_ups_dataloader_time_is_told(tmp_path: Path) -> None:
    # the sampler's randperm and a worker's buffer inside the loader's first __next__, 7 ms before the GPU's work
    name = "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"
    events = [
        {"ph": "X", "cat": "user_annotation", "name": name, "pid": 1, "tid": 1, "ts": 1000.0, "dur": 5000.0},
        {"ph": "X", "cat": "cpu_op", "name": "aten::randperm", "pid": 1, "tid": 1, "ts": 1000.0, "dur": 20.0},
        {"ph": "X", "cat": "cpu_op", "name": "aten::empty", "pid": 1, "tid": 1, "ts": 5900.0, "dur": 20.0},
        *launch("aten::mm", 8000.0, 30.0, 8.0, 200.0, 1),
        *launch("aten::relu", 8300.0, 30.0, 8.0, 50.0, 2),
    ]
    result = step_time(imported_events(tmp_path, events))
    assert not result.marked and result.setup_ns > 5_000_000
    assert result.setup_loading_ns == 5_000_000
    text = io.StringIO()
    render_step_time(result, Console(file=text, width=300))
    assert "5.00ms of it in a DataLoader starting its workers or making its first batch" in text.getvalue()


def test_a_set_up_without_a_dataloader_says_nothing_of_one(tmp_path: Path) -> None:
    events = [*launch("aten::mm", 8000.0, 30.0, 8.0, 200.0, 1), *launch("aten::relu", 8300.0, 30.0, 8.0, 50.0, 2)]
    events.insert(
        0, {"ph": "X", "cat": "cpu_op", "name": "aten::randn", "pid": 1, "tid": 1, "ts": 1000.0, "dur": 5000.0}
    )
    result = step_time(imported_events(tmp_path, events))
    assert result.setup_ns > 5_000_000 and result.setup_loading_ns == 0
