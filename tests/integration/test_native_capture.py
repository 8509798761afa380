"""`tenprof run --capture native` (experimental, CPU only so far): no torch.profiler session; the native
recorder records every op and tenprof writes the trace. Set against the default capture's run of the same
script (conftest's `cpu_steps_run`): the same ops in each step, with the same input shapes, each at the
same line."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
import torch

from tenprof.capture.timeline import NativeCaptureUnavailable, TimelineOptions, TimelineSession
from tenprof.cli.main import main
from tenprof.store.profile import Profile, load_profile
from tests.conftest import CPU_STEPS_SCRIPT, shared_recording


@pytest.fixture(scope="module")
def native_steps_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    def record(folder: Path) -> None:
        (folder / "loop.py").write_text(CPU_STEPS_SCRIPT)
        argv = ["run", "--quiet", "--capture", "native", "-o", str(folder / "prof"), str(folder / "loop.py")]
        assert main([*argv, str(folder / "flags.txt")]) == 0

    return shared_recording(tmp_path_factory, "cpu-steps-native-run", record)


def _ops_by_step(profile: Profile) -> dict[int, Counter[tuple[str, str, str, int]]]:
    """Each step's ops as (name, input shapes, file, line) counts; the line is the op's innermost frame's."""
    ops, frames = profile.table("ops"), profile.table("frames")
    files, lines = frames.column("file").to_pylist(), frames.column("line").to_pylist()
    by_step: dict[int, Counter[tuple[str, str, str, int]]] = {}
    columns = (ops.column(c).to_pylist() for c in ("name", "input_shapes", "step", "frame_id"))
    for name, shapes, step, frame in zip(*columns, strict=True):
        where = (Path(files[frame]).name, lines[frame]) if frame >= 0 else ("", -1)
        by_step.setdefault(step, Counter())[(name, shapes, *where)] += 1
    return by_step


@pytest.mark.xdist_group("cpu_steps_run")
def test_the_native_capture_records_the_ops_and_lines_the_default_one_does(
    native_steps_run: Path, cpu_steps_run: Path
) -> None:
    native, default = load_profile(native_steps_run / "prof"), load_profile(cpu_steps_run / "prof")
    assert native.meta.options["capture"] == "native"
    by_step = _ops_by_step(native)
    assert by_step == _ops_by_step(default)
    assert by_step[1][("aten::mm", "[[64,64],[64,64]]", "loop.py", 8)] == 20
    assert by_step[1][("aten::tanh", "[[64,64]]", "loop.py", 8)] == 20
    assert (native.column("ops", "frame_id") >= 0).all()
    steps = ("step", "complete", "capture_on")
    assert native.table("steps").select(steps).to_pylist() == default.table("steps").select(steps).to_pylist()
    # torch's profiler flag, which the default capture raises in its recorded steps, stays down throughout
    assert (native_steps_run / "flags.txt").read_text() == "0" * 11
    assert (cpu_steps_run / "flags.txt").read_text() != "0" * 11
    status = json.loads((native_steps_run / "prof" / "timeline" / "raw" / "child_status.json").read_text())
    assert status["trace_written"]


def test_the_native_capture_refuses_a_gpu_until_it_is_checked_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    session = TimelineSession(tmp_path, TimelineOptions(capture="native", overhead_steps=0))
    try:
        with pytest.raises(NativeCaptureUnavailable, match="not yet checked on a GPU"):
            session.start()
    finally:
        if session.log.recorder is not None:
            session.log.recorder.__exit__(None, None, None)


def test_tenprof_capture_names_the_default_capture_and_a_wrong_name_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tenprof.cli.run_command import default_capture

    monkeypatch.delenv("TENPROF_CAPTURE", raising=False)
    assert default_capture() == "kineto"
    monkeypatch.setenv("TENPROF_CAPTURE", "native")
    assert default_capture() == "native"
    monkeypatch.setenv("TENPROF_CAPTURE", "nsys")
    script = tmp_path / "s.py"
    script.write_text("print('ran')\n")
    assert main(["run", "--quiet", "-o", str(tmp_path / "prof"), str(script)]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "TENPROF_CAPTURE='nsys'" in err[0] and "kineto, native" in err[0], err
    assert not (tmp_path / "prof").exists()
