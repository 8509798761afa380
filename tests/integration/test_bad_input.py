"""Bad input to tenprof run, with real child processes: a missing module, a script that raises, a reader of the
output that stops early (the rest is in tests/unit/test_bad_input.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tenprof.cli.main import main
from tests.conftest import DATA
from tests.helpers import line_of, one_error_line
from tests.integration.conftest import RAISING_SCRIPT, Recorded

ROOT = Path(__file__).resolve().parents[2]


def test_a_reader_that_stops_early_is_not_an_error() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tenprof", "report", str(DATA / "gpt2"), "--limit", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=ROOT,
    )
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline()
    proc.stdout.close()  # as `head -1` does after its line
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0, err
    assert "BrokenPipe" not in err and "Exception ignored" not in err, err


def test_run_of_a_missing_module_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--quiet", "-o", "prof", "-m", "no_such_module"]) == 2
    err = capfd.readouterr().err
    assert "Traceback" not in err and "runpy" not in err, err
    # the error is all there is, said before anything runs: no report, no profile to block the next run
    one_error_line(err, "no module named no_such_module")
    assert not (tmp_path / "prof").exists()


@pytest.mark.xdist_group("raising_run")
def test_traceback_of_the_script_starts_at_the_script(raising_run: Recorded) -> None:
    job, err = raising_run.script, raising_run.ran.err
    assert raising_run.ran.code == 1
    trace = err[err.index("Traceback (most recent call last):") :]
    frames = [line for line in trace.splitlines() if line.startswith('  File "')]
    called, raised = (line_of(RAISING_SCRIPT, text) for text in ("explode((", "raise ValueError"))
    expected = [f'  File "{job}", line {called}, in <module>', f'  File "{job}", line {raised}, in explode']
    assert frames == expected, trace
    assert "ValueError: boom 16.0" in trace
    assert "runpy" not in err and "tenprof/capture" not in err, err
