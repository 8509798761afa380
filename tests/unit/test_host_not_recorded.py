"""A trace recorded with the GPU's activity alone (`activities=[ProfilerActivity.CUDA]`) holds CUDA calls and
kernels but no CPU ops: the host's time between its CUDA calls is not known to be Python. Three public traces so
recorded (a Swin transformer on an RTX A4000, two course assignments) led with idle-gaps "in Python outside torch
ops 97-100%", advised to move the Python work. The step decomposition, idle-gaps and the not-judged notes now say
the host's work was not recorded and how to record it; the same loop with its CPU ops recorded is the control."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from tenprof.analyses.findings import find_all, not_judged
from tenprof.analyses.timeline.step_time import step_time
from tenprof.renderers.step_time_text import render_step_time
from tenprof.store.profile import Profile
from tests.helpers import imported_events, launch

BURSTS = 6


def _loop(tmp_path: Path, cpu_ops: bool) -> Profile:
    """BURSTS bursts of four 50 us kernels, each burst 5 ms after the last: the host, between them, in work of
    its own; each launch inside an aten::mul op where `cpu_ops`, else with no op around it."""
    events: list[dict[str, object]] = []
    correlation = 0
    for burst in range(BURSTS):
        for i in range(4):
            correlation += 1
            at = 5_300.0 * burst + 60.0 * i
            events += [e for e in launch("aten::mul", at, 30.0, 8.0, 50.0, correlation)
                       if cpu_ops or e["cat"] != "cpu_op"]  # fmt: skip
    return imported_events(tmp_path, events)


def _step_text(profile: Profile) -> str:
    console = Console(width=200, record=True)
    render_step_time(step_time(profile), console)
    return console.export_text()


def test_a_trace_without_cpu_ops_says_the_hosts_work_was_not_recorded(tmp_path: Path) -> None:
    profile = _loop(tmp_path, cpu_ops=False)
    idle = {f.id: f for f in find_all(profile)}["idle-gaps"]
    assert "ProfilerActivity.CPU" in idle.fix and "Python" not in idle.fix
    assert any("in work the trace did not record" in line for line in idle.seen)
    assert not step_time(profile).host_ops_recorded
    text = _step_text(profile)
    assert "host, its work not recorded" in text and "Python" not in text
    assert any("holds no CPU ops" in note for note in not_judged(profile))
    # its launches' ops are named for what they are: not the user's own kernels, ops not recorded
    assert all(name.startswith("(no op recorded) ") for name in profile.table("ops").column("name").to_pylist())


def test_the_same_loop_with_its_cpu_ops_keeps_the_python_part(tmp_path: Path) -> None:
    profile = _loop(tmp_path, cpu_ops=True)
    idle = {f.id: f for f in find_all(profile)}["idle-gaps"]
    assert "ProfilerActivity.CPU" not in idle.fix and "Python" in idle.fix
    assert step_time(profile).host_ops_recorded
    assert "host in Python outside torch ops" in _step_text(profile)
    assert not any("holds no CPU ops" in note for note in not_judged(profile))
