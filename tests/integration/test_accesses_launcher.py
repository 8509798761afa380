"""The accesses pass from `tenprof run` on a machine without the CUDA toolkit: a clear reason, and the
other passes still run; asked for without the tensors pass: a usage error before anything runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tenprof.capture import accesses_build
from tenprof.cli.main import main
from tests.integration.conftest import Recorded


@pytest.mark.xdist_group("accesses_without_toolkit_run")
def test_missing_toolkit_fails_only_the_accesses_pass(accesses_without_toolkit_run: Recorded) -> None:
    run = accesses_without_toolkit_run
    assert run.ran.code == 0
    meta = json.loads((run.profile / "meta.json").read_text())
    assert meta["passes"]["tensors"]["state"] == "complete"
    assert meta["passes"]["accesses"]["state"] == "failed"
    assert "nvcc" in meta["passes"]["accesses"]["reason"]
    assert "the accesses pass will not run" in run.ran.err


def test_accesses_without_tensors_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "job.py"
    script.write_text("print('ran')\n")
    assert main(["run", "--passes", "timeline,accesses", "-o", str(tmp_path / "p"), str(script)]) == 2
    err = capsys.readouterr()
    assert "add tensors" in err.err and "ran" not in err.out
    assert not (tmp_path / "p").exists()


def test_build_commands_name_the_sanitizer_and_the_architecture(tmp_path: Path) -> None:
    kit = accesses_build.Toolkit(Path("/cuda/bin/nvcc"), Path("/cuda/compute-sanitizer"))
    patch, library = accesses_build.build_commands(kit, "sm_90", tmp_path)
    assert "--compile-as-tools-patch" in patch and "-arch=sm_90" in patch and "--fatbin" in patch
    assert "-lsanitizer-public" in library and "-Xlinker=-rpath,/cuda/compute-sanitizer" in library


def test_a_tool_that_does_not_start_fails_only_the_accesses_pass(tmp_path: Path) -> None:
    """The library cannot be loaded in the child: the tensors recorder still records, and says why."""
    from tenprof.capture.tensors import TensorsSession

    session = TensorsSession(tmp_path, None, access_library=str(tmp_path / "missing.so"))
    session.start()
    try:
        import torch

        torch.ones(3) + 1
    finally:
        session.stop()
    assert "could not be loaded" in session.access_error
    assert session.recorder.access is None and session.recorder.seq > 0
