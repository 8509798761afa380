"""Output safety with real captures: --force replaces only tenprof's own profile, keeps the user's files, and
fails before the script runs where the output cannot be made (the rest is in
tests/unit/test_output_safety.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tenprof.cli.main import main
from tenprof.store.profile import load_profile
from tests.helpers import MATMUL64_TRACE, imported_profile, siblings, snapshot
from tests.integration.conftest import ForcedModuleRun


def test_a_meta_json_alone_is_not_a_profile_and_force_touches_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fake = tmp_path / "fake"
    fake.mkdir()
    (fake / "meta.json").write_text('{"my": "config"}')
    (fake / "important.txt").write_text("keep")
    script = tmp_path / "s.py"
    script.write_text("open('ran', 'w').close()\n")
    before = snapshot(fake)
    assert main(["run", "--force", "-o", str(fake), str(script)]) == 2
    assert main(["import", "--force", "-o", str(fake), str(MATMUL64_TRACE)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all("marker" in line for line in err)
    assert snapshot(fake) == before
    assert not (tmp_path / "ran").exists()  # refused before the script ran
    assert siblings(fake) == ["s.py"]  # no staging directory left behind


def test_an_output_that_cannot_be_made_fails_before_the_script_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("a file, not a folder")
    script = tmp_path / "s.py"
    script.write_text("open('ran', 'w').close()\n")
    assert main(["run", "-o", str(blocker / "prof"), str(script)]) == 3
    err = capsys.readouterr().err.strip()
    assert err.startswith("tenprof: error: cannot write the profile to") and "\n" not in err
    assert not (tmp_path / "ran").exists()


@pytest.mark.xdist_group("forced_module_run")
def test_run_force_replaces_a_profile_and_keeps_the_users_files(forced_module_run: ForcedModuleRun) -> None:
    # The output held an imported profile, the user's notes.txt and job_copy.py. The new run's script fails:
    # what it recorded still replaces the old profile, as asked.
    assert forced_module_run.ran.code == 3
    out = forced_module_run.profile
    meta = load_profile(out).meta
    assert meta.source == "run" and meta.pid > 0 and meta.run.exit_code == 3  # not the imported one
    assert (out / "notes.txt").read_text() == "mine" and (out / "job_copy.py").exists()
    assert siblings(out) == []  # no staging directory left behind


def test_in_process_force_replaces_the_profile_only_when_the_block_ends(tmp_path: Path) -> None:
    import torch

    import tenprof

    out = imported_profile(tmp_path / "prof")
    (out / "notes.txt").write_text("mine")
    with tenprof.profile(str(out), force=True) as p:
        (torch.ones(4, 4) @ torch.ones(4, 4)).sum()
        p.step()
        assert load_profile(out).meta.source == "import"  # the old profile is intact while recording
    meta = load_profile(out).meta
    assert meta.source == "in-process" and meta.passes["timeline"].state == "complete"
    assert (out / "notes.txt").read_text() == "mine"
    assert siblings(out) == []
