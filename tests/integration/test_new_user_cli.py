"""A new user's first commands that start captures: a module that is not there, --passes all, profiling in-
process (the rest is in tests/unit/test_new_user_cli.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tenprof.cli.main import main
from tests.conftest import DATA


def _one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "tenprof" in err[0] and "error" in err[0] and "Traceback" not in err[0], err
    return err[0]


def test_module_that_is_not_there_is_one_line_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("raise SystemExit('a package imported by the check')\n")
    (tmp_path / "pkg" / "job.py").write_text("print('ran')\n")
    for module, said in (
        ("no_such_module", "no module named no_such_module"),
        ("pkg.nope", "no module named pkg.nope"),
        ("pkg", "package without a __main__ module"),  # pkg's own code is not run to tell
        ("not-a-name", "not a module name"),
    ):
        assert main(["run", "-m", module]) == 2
        line = _one_error_line(capsys)
        assert said in line, line
        assert not (tmp_path / "tenprof-out").exists()
    from tenprof.capture.module_lookup import module_problem

    assert module_problem("pkg.job", [str(tmp_path)]) == ""  # there: left for the run
    assert module_problem("os.path", [str(tmp_path)]) == ""  # a module that makes another when imported


def test_passes_all_says_what_it_leaves_out(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tenprof.cli import run_command
    from tenprof.record import launcher

    monkeypatch.setattr(launcher, "gpu_present", lambda: False)
    passes, left_out = launcher.all_passes()
    assert passes == ("timeline", "tensors") and set(left_out) == {"counters", "stalls", "accesses"}
    asked: list[tuple[str, ...]] = []

    def no_run(request: launcher.RunRequest) -> None:
        asked.append(request.passes)
        raise SystemExit(0)

    monkeypatch.setattr(run_command, "run_profile", no_run)
    with pytest.raises(SystemExit):
        main(["run", "--passes", "all", str(DATA.parent.parent / "examples" / "matmul_add.py")])
    assert asked == [("timeline", "tensors")]
    said = capsys.readouterr().err
    assert "--passes all runs timeline,tensors here, without counters, stalls, accesses (no NVIDIA GPU here)" in said


def test_profiling_in_process_keeps_the_profilers_own_lines_out_of_stderr(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    import sys

    import torch

    import tenprof

    x = torch.ones(32, 32)
    with tenprof.profile(str(tmp_path / "p")) as p:
        for i in range(6):  # step 3 runs with the capture off: the profiler toggles twice
            x = torch.tanh(x @ x)
            print(f"the script's own line {i}", file=sys.stderr)
            p.step()
    err = capfd.readouterr().err
    assert "USDT" not in err and "profiler_start" not in err and "Toggling" not in err, err
    assert all(f"the script's own line {i}" in err for i in range(6))
    kept = (tmp_path / "p" / "timeline" / "raw" / "profiler.log").read_text()
    assert "profiler_start" in kept and "profiler_stop" in kept
