"""`tenprof run` on the CPU, and a clear message with the right exit code for each kind of bad input."""

from __future__ import annotations

import gzip
import os
import signal
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from tenprof.analyses.timeline.summary import user_frame_of
from tenprof.cli.main import main
from tenprof.store.profile import load_profile
from tests.conftest import DATA
from tests.helpers import line_of
from tests.integration.conftest import EXAMPLE, RAISING_SCRIPT, ROOT, ForcedModuleRun, Recorded


def _script(tmp_path: Path, body: str, name: str = "job.py") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return path


@pytest.mark.xdist_group("matmul_add_run")
def test_run_records_ops_lines_scopes_and_steps_on_cpu(matmul_add_run: Recorded) -> None:
    assert matmul_add_run.ran.code == 0
    profile = load_profile(matmul_add_run.profile)
    assert profile.meta.passes["timeline"].state == "complete"
    assert profile.meta.run.exit_code == 0 and not profile.meta.run.cut_short
    ops = profile.table("ops")
    names = ops.column("name").to_pylist()
    assert "aten::mm" in names and "aten::add" in names
    # Every op has a Python path reaching a line of the example script.
    frames = profile.table("frames")
    user = user_frame_of(profile)[ops.column("frame_id").to_numpy()]
    assert (user >= 0).all()
    files = {frames.column("file")[int(u)].as_py() for u in user}
    assert files == {str(EXAMPLE)}
    assert set(profile.table("scopes").column("name").to_pylist()) == {"matmul_add"}
    assert profile.table("steps").num_rows == 7  # six tenprof.step() calls and the tail
    # The launcher's marker of a child that had begun saving is not left in the profile.
    assert not list(matmul_add_run.profile.rglob("saving"))


@pytest.mark.xdist_group("forced_module_run")
def test_script_exit_code_is_passed_through(forced_module_run: ForcedModuleRun) -> None:
    # the script also says whether Inductor was imported: the capture must not import it (about a second)
    # for a script that never compiles
    assert forced_module_run.ran.code == 3
    assert "inductor imported: False" in forced_module_run.ran.out
    meta = load_profile(forced_module_run.profile).meta
    assert meta.run.exit_code == 3
    assert "exited with status 3" in meta.run.cut_short_reason


@pytest.mark.xdist_group("raising_run")
def test_script_that_raises_keeps_what_was_recorded(raising_run: Recorded) -> None:
    assert raising_run.ran.code == 1
    profile = load_profile(raising_run.profile)
    assert profile.meta.passes["timeline"].state == "partial"
    assert "aten::mul" in profile.table("ops").column("name").to_pylist()
    printed = raising_run.ran.out
    raised_at = line_of(RAISING_SCRIPT, "raise ValueError")
    assert "cut short" in printed and "ValueError: boom" in printed and f"{raising_run.script}:{raised_at}" in printed
    assert printed.splitlines()[0].startswith("The run was cut short: the script raised ValueError")  # first


@dataclass(frozen=True)
class Interrupted:
    """`tenprof run` of a script that catches the first Ctrl-C and goes on, given two: whether the script
    caught the first, and tenprof's exit code, output and profile."""

    caught: bool
    code: int
    out: str
    err: str
    profile: Path


@pytest.fixture(scope="module")
def interrupted_twice(tmp_path_factory: pytest.TempPathFactory) -> Interrupted:
    """One run for the two Ctrl-C tests: the first Ctrl-C must reach the script, the second stop it."""
    proc, out, marker = _start(
        tmp_path_factory.mktemp("interrupted"),
        """
        import pathlib, time, torch
        x = torch.ones(16)
        i = 0
        try:
            while True:
                x = x * 1.0001
                if i == 20:
                    pathlib.Path(MARKER).write_text("go")
                i += 1
                time.sleep(0.001)
        except KeyboardInterrupt:
            pathlib.Path(MARKER).write_text("caught")
        while True:  # a graceful shutdown that a second Ctrl-C must be able to cut
            time.sleep(0.01)
        """,
    )
    proc.send_signal(signal.SIGINT)  # to tenprof only: it must pass it on to the script's process
    deadline = time.time() + 60
    while marker.read_text() != "caught" and time.time() < deadline:
        time.sleep(0.05)
    caught = marker.read_text() == "caught"
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    return Interrupted(caught, proc.returncode, stdout, stderr, out)


def test_a_script_that_never_gets_back_to_python_is_killed_and_what_it_wrote_is_kept(tmp_path: Path) -> None:
    # a rank whose peer died waits in a collective that never returns, in C: SIGTERM's handler never runs
    # (a blocked signal stands in for that here). The launcher kills it after the grace and builds the trace
    # part of the steps recorded before the capture's first timed-off steps.
    marker = tmp_path / "started"
    job = _script(
        tmp_path,
        f"""
        import pathlib, signal, time, torch, tenprof
        x = torch.ones(64, 64)
        for _ in range(7):
            x = (x @ x).clamp(max=1.0)
            tenprof.step()
        signal.pthread_sigmask(signal.SIG_BLOCK, {{signal.SIGTERM}})
        pathlib.Path({str(marker)!r}).write_text("go")
        time.sleep(120)
        """,
    )
    out = tmp_path / "prof"
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), TENPROF_STOP_GRACE_S="1")
    proc = subprocess.Popen(
        [sys.executable, "-m", "tenprof", "run", "-o", str(out), str(job)], env=env, stderr=subprocess.PIPE, text=True
    )
    deadline = time.time() + 120
    while not marker.exists() and time.time() < deadline and proc.poll() is None:
        time.sleep(0.05)
    assert marker.exists(), proc.communicate()
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=60)  # not the script's 120 s
    assert proc.returncode == 137
    profile = load_profile(out)
    assert "never got back to Python" in profile.meta.run.cut_short_reason and profile.meta.host
    assert profile.meta.passes["timeline"].state == "partial"
    steps = profile.table("steps")
    on = zip(steps.column("step").to_pylist(), steps.column("capture_on").to_pylist(), strict=True)
    recorded = [n for n, recording in on if recording]
    assert recorded[:3] == [0, 1, 2] and profile.table("ops").num_rows > 0


@pytest.mark.xdist_group("interrupted_twice")
def test_ctrl_c_stops_the_script_and_saves_the_profile(interrupted_twice: Interrupted) -> None:
    # the Ctrl-C the script does not catch stops it
    assert interrupted_twice.code == 130, interrupted_twice.err[-2000:]
    profile = load_profile(interrupted_twice.profile)
    assert profile.meta.run.cut_short and "Ctrl-C" in profile.meta.run.cut_short_reason
    assert profile.table("ops").num_rows > 20
    assert "cut short" in interrupted_twice.out


@pytest.mark.xdist_group("forced_module_run")
def test_module_mode_runs_a_package_module(forced_module_run: ForcedModuleRun) -> None:
    # the module checks its arguments first: its own exit status says it ran to its end
    assert forced_module_run.ran.code == 3
    frames = load_profile(forced_module_run.profile).table("frames").column("file").to_pylist()
    assert str(forced_module_run.module_file) in frames


@pytest.mark.xdist_group("scheduled_run")
def test_schedule_records_only_the_active_steps(scheduled_run: Recorded) -> None:
    assert scheduled_run.ran.code == 0
    steps = load_profile(scheduled_run.profile).table("steps").to_pydict()
    recorded = [n for n, on in zip(steps["step"], steps["capture_on"], strict=True) if on]
    assert recorded == [2, 3]
    # the steps after the window (from the second: the first pays for writing the trace) are timed
    # un-profiled, from tenprof's clock reads
    assert [n for n in steps["step"] if n not in recorded] == [5, 6]


@pytest.mark.parametrize(
    "argv, code, message",
    [
        (["run", "no_such_script.py"], 2, "no_such_script.py: no such script"),
        (["run"], 2, "nothing to run"),
        (["run", "--schedule", "wait=x", str(EXAMPLE)], 2, "bad --schedule"),
        (["run", "--passes", "timeline,bogus", str(EXAMPLE)], 2, "unknown pass 'bogus'"),
        (["run", "--passes", "tensors,timeline,tensors", str(EXAMPLE)], 2, "pass 'tensors' given twice"),
        (["run", "--capture", "kineto", "--ops", "sampled", str(EXAMPLE)], 2, "--ops sampled needs a native capture"),
        (["run", "--on-demand", "--capture", "native", str(EXAMPLE)], 2, "--on-demand records with the default"),
        (["report", "/nonexistent/profile"], 3, "no such profile directory"),
        (["report", str(DATA), "--limit", "2"], 3, "not a tenprof profile"),
        (["report", str(DATA / "mlp"), "--steps", "40:"], 2, "selects none of the recorded steps"),
        (["import", "/nonexistent/trace.json"], 4, "no such file"),
    ],
)
def test_bad_input_gives_one_line_and_exit_code(
    argv: list[str], code: int, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == code
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("tenprof: error:") and message in err[0], err


def test_existing_output_directory_is_not_overwritten(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "prof"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    assert main(["run", "-o", str(out), str(EXAMPLE)]) == 2
    said = capsys.readouterr().err
    # not a profile: --force would not help, so it is not offered; a folder inside it would
    assert "is not a tenprof profile" in said and "pass --force" not in said and f"-o {out / 'tenprof-out'}" in said
    assert main(["run", "--force", "-o", str(out), str(EXAMPLE)]) == 2  # --force only replaces a profile
    assert (out / "keep.txt").read_text() == "mine"


@pytest.mark.parametrize("kind", ["truncated", "not-a-trace"])
def test_import_of_a_bad_trace_fails_cleanly(tmp_path: Path, kind: str, capsys: pytest.CaptureFixture[str]) -> None:
    real = (DATA / "conv" / "timeline" / "raw" / "kineto_trace.json.gz").read_bytes()
    trace = tmp_path / "trace.json.gz"
    trace.write_bytes(real[: len(real) // 3] if kind == "truncated" else gzip.compress(b'{"rows": [1, 2, 3]}'))
    out = tmp_path / "imported"
    assert main(["import", str(trace), "-o", str(out)]) == 4
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(trace) in err[0]
    assert not out.exists()  # nothing left behind that would block the retry


def test_import_of_a_real_kineto_trace(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A torch.profiler trace without tenprof's call-site log: ops, kernels and copies, no Python lines."""
    trace = DATA / "conv" / "timeline" / "raw" / "kineto_trace.json.gz"
    out = tmp_path / "imported"
    assert main(["import", str(trace), "-o", str(out)]) == 0
    assert "GPU kernels" in capsys.readouterr().out
    imported = load_profile(out)
    recorded = load_profile(DATA / "conv")
    assert imported.meta.source == "import" and imported.meta.gpus[0].name == recorded.meta.gpus[0].name
    for table in ("kernels", "transfers", "api_calls"):
        assert np.array_equal(imported.column(table, "duration_ns"), recorded.column(table, "duration_ns"))
    assert np.array_equal(imported.column("kernels", "op_id"), recorded.column("kernels", "op_id"))
    assert (imported.column("ops", "frame_id") == -1).all()


def _start(tmp_path: Path, body: str) -> tuple[subprocess.Popen[str], Path, Path]:
    marker = tmp_path / "started"
    job = _script(tmp_path, body.replace("MARKER", repr(str(marker))))
    out = tmp_path / "prof"
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    proc = subprocess.Popen(
        [sys.executable, "-m", "tenprof", "run", "-o", str(out), str(job)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.time() + 120
    while not marker.exists() and time.time() < deadline and proc.poll() is None:
        time.sleep(0.05)
    assert marker.exists(), proc.communicate()
    return proc, out, marker


def test_sigterm_stops_the_script_and_saves_the_profile(tmp_path: Path) -> None:
    proc, out, _ = _start(
        tmp_path,
        """
        import pathlib, time, torch
        x = torch.ones(4)
        pathlib.Path(MARKER).write_text("go")
        while True:
            x = x + 1
            time.sleep(0.001)
        """,
    )
    proc.send_signal(signal.SIGTERM)  # what `timeout` or a batch scheduler sends
    _, err = proc.communicate(timeout=120)
    # once (a fresh clone's suite, 2026-12-07) 137: killed STOP_GRACE_S after the SIGTERM, not reproduced in
    # twelve runs since, alone or beside four busy processes; what tenprof said is kept for the next time
    assert proc.returncode == 143, (proc.returncode, err[-3000:])
    profile = load_profile(out)
    assert "SIGTERM" in profile.meta.run.cut_short_reason
    assert profile.meta.passes["timeline"].state == "partial" and profile.table("ops").num_rows > 0


@pytest.mark.xdist_group("interrupted_twice")
def test_each_ctrl_c_reaches_a_script_that_catches_keyboard_interrupt(interrupted_twice: Interrupted) -> None:
    assert interrupted_twice.caught  # the first Ctrl-C reached the script, which went on
    assert interrupted_twice.code == 130  # the second cut its shutdown
    assert load_profile(interrupted_twice.profile).meta.run.cut_short


@pytest.mark.xdist_group("scopes_run")
def test_scopes_entered_close_together_keep_their_own_lines(scopes_run: Recorded) -> None:
    profile = load_profile(scopes_run.profile)
    frames = profile.table("frames")
    scopes = profile.table("scopes")
    named = zip(scopes.column("frame_id").to_pylist(), scopes.column("name").to_pylist(), strict=True)
    lines = [frames.column("line")[f].as_py() for f, name in named if name == "proj"]
    assert lines == [5, 7] * 20
