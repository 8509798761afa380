"""torch.compile's compilations as a recording names them (analyses.timeline.compilations): the
`entire_frame_compile` op, else the `_compile.compile_inner (dynamo_timed)` scope a build records alone. A
public A10G trace whose first call compiled for 959 ms had no finding: only the scope named it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tenprof.analyses.findings import find_all
from tenprof.analyses.timeline.compilations import frame_compilations
from tenprof.analyses.timeline.step_time import step_time
from tenprof.store.profile import Profile
from tests.helpers import imported_events, launch

COMPILE_US = 400_000.0
STEPS = 5


def _compiled_run(tmp_path: Path, with_op: bool) -> Profile:
    """A 400 ms compilation in the first of five 1 ms steps, each step running one kernel; the compilation
    recorded as the scope alone, or (`with_op`) with the `entire_frame_compile` op inside it too, as torch
    2.11 records it."""
    events: list[dict[str, object]] = []
    base = 0.0
    for step in range(STEPS):
        length = 1_000.0 + (COMPILE_US + 100 if step == 0 else 0.0)
        events.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{step}", "pid": 1, "tid": 1,
                       "ts": base, "dur": length - 1})  # fmt: skip
        at = base + 10
        if step == 0:
            events.append({"ph": "X", "cat": "user_annotation", "name": "_compile.compile_inner (dynamo_timed)",
                           "pid": 1, "tid": 1, "ts": at, "dur": COMPILE_US})  # fmt: skip
            if with_op:
                events.append({"ph": "X", "cat": "cpu_op", "name": "entire_frame_compile", "pid": 1, "tid": 1,
                               "ts": at + 1, "dur": COMPILE_US - 2})  # fmt: skip
            at += COMPILE_US + 50
        events += launch("aten::mm", at, 30.0, 10.0, 800.0, step + 1)
        base += length
    return imported_events(tmp_path, events)


@pytest.mark.parametrize("with_op", [False, True])
def test_a_compilation_is_found_by_its_scope_or_its_op_and_counted_once(tmp_path: Path, with_op: bool) -> None:
    profile = _compiled_run(tmp_path, with_op)
    found = frame_compilations(profile)
    assert len(found.start) == 1 and (found.ops >= 0).tolist() == [with_op]
    compile_time = {f.id: f for f in find_all(profile)}["torch-compile-time"]
    expected = (COMPILE_US - 2 if with_op else COMPILE_US) * 1000
    assert compile_time.cost_ns == pytest.approx(expected)
    # the compiling step's host time is the decomposition's compile part, not Python's
    first = step_time(profile).steps[0]
    assert first.parts["compile"] == pytest.approx(expected, rel=0.01)


def _compile_then_short_steps(tmp_path: Path, marked: bool) -> Profile:
    """A 400 ms compilation, then six iterations of a 50 us kernel each in a 1 ms step whose host idles the GPU
    (a cost paid every step); `marked`: each iteration a ProfilerStep (the compilation in the first), else none."""
    events: list[dict[str, object]] = [
        {"ph": "X", "cat": "cpu_op", "name": "entire_frame_compile", "pid": 1, "tid": 1, "ts": 10, "dur": COMPILE_US}
    ]
    base = COMPILE_US + 100
    for step in range(6):
        if marked:
            begin = 0.0 if step == 0 else base
            events.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{step}", "pid": 1, "tid": 1,
                           "ts": begin, "dur": base + 999 - begin})  # fmt: skip
        events += launch("aten::mm", base + 10, 30.0, 10.0, 50.0, step + 1)
        base += 1_000.0
    return imported_events(tmp_path, events)


def test_a_compilation_that_dwarfs_the_inferred_iterations_leads(tmp_path: Path) -> None:
    # a compiled ResNet-18's first call on an RTX 4090 D (a public trace, no steps): 1.42 s compiling led by a
    # compiled-region cost of 62 us judged on three inferred "iterations"
    found = find_all(_compile_then_short_steps(tmp_path, marked=False))
    assert found[0].id == "torch-compile-time" and found[0].once
    assert len(found) > 1  # a cost paid every step is there, after it


def test_with_marked_steps_the_compilation_stays_after_the_steps_costs(tmp_path: Path) -> None:
    found = find_all(_compile_then_short_steps(tmp_path, marked=True))
    ids = [f.id for f in found]
    assert "torch-compile-time" in ids and ids[0] != "torch-compile-time"


def test_in_a_pass_judged_as_one_the_compilation_is_a_cost_of_the_pass(tmp_path: Path) -> None:
    # a convolution's first call through torch.compile on an A10G (a public trace): once its "iterations" were
    # no longer read as a loop, it led with idle-gaps, the compilation nowhere
    events: list[dict[str, object]] = [
        {"ph": "X", "cat": "cpu_op", "name": "entire_frame_compile", "pid": 1, "tid": 1, "ts": 10, "dur": COMPILE_US}
    ]
    events += launch("aten::mm", 5.0, 3.0, 2.0, 50.0, 1)  # the pass's first GPU work, before the compilation
    events += launch("aten::convolution", COMPILE_US + 100, 30.0, 10.0, 500.0, 2)
    events += launch("aten::relu", COMPILE_US + 700, 20.0, 8.0, 50.0, 3)
    found = find_all(imported_events(tmp_path, events))
    first = found[0]
    assert first.id == "torch-compile-time" and not first.once
    assert first.cost_ns == pytest.approx(COMPILE_US * 1000, rel=0.01)
    idle = [f for f in found if f.id == "idle-gaps"]
    assert not idle or idle[0].cost_ns < 0.1 * first.cost_ns  # the same idle time is not charged twice
