"""A script's own torch.profiler beside tenprof's recording (capture.profiler_guard): one process has one
profiler. Started while tenprof records, the script's profiler runs and records what it would alone,
and tenprof keeps what it recorded before, marked partial with the line that started it (before, the
script's profiler recorded 2 events and the process died of a segmentation fault). Started the other
way round, tenprof refuses in one line and writes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

import tenprof
from tenprof.errors import TenprofError
from tests.helpers import line_of

torch = pytest.importorskip("torch")
HERE = Path(__file__).resolve()
SOURCE = HERE.read_text()


def test_the_scripts_profiler_records_and_tenprof_keeps_what_came_before(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from torch.profiler import ProfilerActivity, profile

    w, x = torch.randn(64, 64), torch.randn(32, 64)
    with tenprof.profile(str(tmp_path / "p"), overhead_steps=0) as p:
        for _ in range(3):
            x @ w  # before
            p.step()
        with profile(activities=[ProfilerActivity.CPU]) as own:  # its own profiler
            for _ in range(4):
                (x @ w).relu()
                own.step()
                p.step()
    assert [e.name for e in own.events()].count("aten::relu") == 4  # all of it, as without tenprof
    started = f"{HERE}:{line_of(SOURCE, '# its own profiler')}"
    assert f"started its own torch.profiler at {started}" in capsys.readouterr().err
    status = p.profile.meta.passes["timeline"]
    assert status.state == "partial" and started in status.reason
    names = p.profile.table("ops").column("name").to_pylist()
    assert names.count("aten::mm") == 3 and "aten::relu" not in names  # what came before, and only that


def test_a_recording_under_a_running_torch_profiler_is_refused_and_writes_nothing(tmp_path: Path) -> None:
    from torch.profiler import ProfilerActivity, profile

    with (
        profile(activities=[ProfilerActivity.CPU]),
        pytest.raises(TenprofError, match="already recording"),
        tenprof.profile(str(tmp_path / "p")),
    ):
        torch.randn(3)
    assert not (tmp_path / "p").exists()


def test_the_native_capture_gives_back_the_thread_state_it_holds(tmp_path: Path) -> None:
    """The native capture holds a profiler state on the script's thread (for the allocators' reports),
    which torch reads as a profiler running there ("Profiler is already enabled on this thread"): given
    back when it steps aside, so the script's profiler starts."""
    from torch.profiler import ProfilerActivity, profile

    from tenprof.capture.timeline import TimelineOptions, TimelineSession
    from tenprof.core.rawfiles import STEPPED_ASIDE_FILE

    session = TimelineSession(tmp_path, TimelineOptions(capture="native", sample_interval_ns=0, overhead_steps=0))
    session.start()
    try:
        torch.ones(3).add_(1)
        session.step()
        with profile(activities=[ProfilerActivity.CPU]) as own:
            torch.ones(3).mul_(2)
    finally:
        session.stop()
    assert "aten::mul_" in [e.name for e in own.events()]
    assert session.stepped_aside and (tmp_path / STEPPED_ASIDE_FILE).exists()
