"""tenprof never deletes what it did not write, and replaces a profile only once the new one is complete.

Profiles here are made by importing a real recorded trace (fast, no torch); one test goes through
`tenprof run` itself. CI runs as root, where permissions do not stop a delete, so a directory that
cannot be changed is simulated by making the rename fail.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import textwrap
from pathlib import Path

import pytest

from tenprof.cli.main import main
from tenprof.errors import ProfileError
from tenprof.importers.trace_import import import_trace
from tenprof.store import directory
from tenprof.store.directory import MARKER_FILE, is_profile_dir, open_output_dir, owned_entries
from tenprof.store.profile import load_profile
from tests.conftest import DATA

TRACE = DATA / "matmul64" / "timeline" / "raw" / "kineto_trace.json.gz"


def _profile(path: Path) -> Path:
    import_trace(TRACE, path, force=False)
    return path


def _snapshot(path: Path) -> dict[str, bytes]:
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def _siblings(path: Path) -> list[str]:
    return sorted(p.name for p in path.parent.iterdir() if p.name != path.name)


def test_a_meta_json_alone_is_not_a_profile_and_force_touches_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fake = tmp_path / "fake"
    fake.mkdir()
    (fake / "meta.json").write_text('{"my": "config"}')
    (fake / "important.txt").write_text("keep")
    script = tmp_path / "s.py"
    script.write_text("open('ran', 'w').close()\n")
    before = _snapshot(fake)
    assert main(["run", "--force", "-o", str(fake), str(script)]) == 2
    assert main(["import", "--force", "-o", str(fake), str(TRACE)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all("marker" in line for line in err)
    assert _snapshot(fake) == before
    assert not (tmp_path / "ran").exists()  # refused before the script ran
    assert _siblings(fake) == ["s.py"]  # no staging directory left behind


def test_force_replaces_only_what_tenprof_wrote(tmp_path: Path) -> None:
    out = _profile(tmp_path / "prof")
    assert is_profile_dir(out)
    assert {"meta.json", "timeline", MARKER_FILE} <= set(owned_entries(out))
    (out / "notes.txt").write_text("my notes")
    (out / "plots").mkdir()
    (out / "plots" / "a.png").write_bytes(b"png")
    (out / "timeline" / "kernels.parquet").write_bytes(b"old and damaged")
    import_trace(TRACE, out, force=True)
    assert (out / "notes.txt").read_text() == "my notes"
    assert (out / "plots" / "a.png").read_bytes() == b"png"
    assert load_profile(out).table("kernels").num_rows > 0  # the new tables are in place
    assert "notes.txt" not in owned_entries(out) and "plots" not in owned_entries(out)
    assert _siblings(out) == []  # neither the staging nor the old files are left next to it


def test_a_failed_replacement_keeps_the_old_profile(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = _profile(tmp_path / "prof")
    before = _snapshot(out)
    bad = tmp_path / "bad.json.gz"
    bad.write_bytes(gzip.compress(TRACE.read_bytes()[:100]))  # not even valid gzip of a trace
    assert main(["import", "--force", "--quiet", "-o", str(out), str(bad)]) != 0
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    assert _snapshot(out) == before
    assert _siblings(out) == ["bad.json.gz"]


def test_a_failed_import_leaves_nothing_that_blocks_the_retry(tmp_path: Path) -> None:
    out = tmp_path / "new"
    bad = tmp_path / "bad.json"
    bad.write_text('{"traceEvents": [')
    assert main(["import", "--quiet", "-o", str(out), str(bad)]) != 0
    assert not out.exists()
    assert main(["import", "--quiet", "-o", str(out), str(TRACE)]) == 0
    assert load_profile(out).table("kernels").num_rows > 0


def test_a_directory_that_cannot_be_changed_is_left_as_it_was(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = _profile(tmp_path / "prof")
    before = _snapshot(out)
    real_rename = os.rename

    def rename(src: str | Path, dst: str | Path) -> None:
        if Path(src).parent == out.resolve() and Path(src).name == "timeline":
            raise PermissionError(13, "Permission denied")
        real_rename(src, dst)

    monkeypatch.setattr(directory.os, "rename", rename)
    with pytest.raises(ProfileError, match="Permission denied; it is unchanged and the new one is in") as caught:
        import_trace(TRACE, out, force=True)
    assert "\n" not in str(caught.value)
    assert _snapshot(out) == before
    staged = [tmp_path / n for n in _siblings(out)]
    assert len(staged) == 1 and is_profile_dir(staged[0])  # the new profile is kept, as the message says


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


def test_a_name_that_escapes_the_directory_is_never_removed(tmp_path: Path) -> None:
    out = _profile(tmp_path / "prof")
    (tmp_path / "precious").write_text("keep")
    marker = json.loads((out / MARKER_FILE).read_text())
    marker["entries"] += ["../precious", "/etc", ".."]
    (out / MARKER_FILE).write_text(json.dumps(marker))
    assert "../precious" not in owned_entries(out)
    import_trace(TRACE, out, force=True)
    assert (tmp_path / "precious").read_text() == "keep"


def test_an_empty_existing_directory_is_used_in_place(tmp_path: Path) -> None:
    out = tmp_path / "empty"
    out.mkdir()
    output = open_output_dir(out, force=False)
    assert output.path == out and not output.staged and not output.created
    output.discard()
    assert out.is_dir() and not any(out.iterdir())  # tenprof did not make it, so it stays


def test_run_force_replaces_a_profile_and_keeps_the_users_files(tmp_path: Path) -> None:
    script = tmp_path / "job.py"
    script.write_text(
        textwrap.dedent(
            """
            import sys, torch
            x = torch.ones(8, 8)
            (x @ x).sum()
            sys.exit(int(sys.argv[1]))
            """
        )
    )
    out = tmp_path / "prof"
    assert main(["run", "--quiet", "-o", str(out), str(script), "0"]) == 0
    first_pid = load_profile(out).meta.pid
    (out / "notes.txt").write_text("mine")
    shutil.copy(script, out / "job_copy.py")
    # The new run's script fails: what it recorded still replaces the old profile, as asked.
    assert main(["run", "--quiet", "--force", "-o", str(out), str(script), "3"]) == 3
    meta = load_profile(out).meta
    assert meta.pid != first_pid and meta.run.exit_code == 3
    assert (out / "notes.txt").read_text() == "mine" and (out / "job_copy.py").exists()
    assert _siblings(out) == ["job.py"]


def test_in_process_force_replaces_the_profile_only_when_the_block_ends(tmp_path: Path) -> None:
    import torch

    import tenprof

    out = _profile(tmp_path / "prof")
    (out / "notes.txt").write_text("mine")
    with tenprof.profile(str(out), force=True) as p:
        (torch.ones(4, 4) @ torch.ones(4, 4)).sum()
        p.step()
        assert load_profile(out).meta.source == "import"  # the old profile is intact while recording
    meta = load_profile(out).meta
    assert meta.source == "in-process" and meta.passes["timeline"].state == "complete"
    assert (out / "notes.txt").read_text() == "mine"
    assert _siblings(out) == []


def test_the_forest_drawings_are_tenprofs_and_never_replace_a_users_file(tmp_path: Path) -> None:
    # `tenprof run` draws forest.txt/.dot once the passes are written (cli.drawings): they are listed in
    # the marker like the tables (so a later --force replaces or removes them), and a user's file of that
    # name is left alone, with a note in the tensors pass's status.
    from tenprof.cli.drawings import write_drawings

    out = tmp_path / "prof"
    shutil.copytree(DATA / "tensors" / "conv", out)
    for name in ("forest.txt", "forest.dot", "forest.svg"):
        (out / name).unlink(missing_ok=True)
    directory.claim(out, *(p.name for p in out.iterdir()))
    assert write_drawings(out) == []
    assert {"forest.txt", "forest.dot"} <= set(owned_entries(out))
    directory.remove_profile(out, remove_folder=False)
    assert not (out / "forest.txt").exists() and not (out / "forest.dot").exists()  # removed as tenprof's
    shutil.copytree(DATA / "tensors" / "conv", out, dirs_exist_ok=True)
    (out / "forest.txt").write_text("my notes on the forest")
    (out / MARKER_FILE).unlink(missing_ok=True)
    directory.claim(out, "meta.json", "tensors")
    problems = write_drawings(out)
    assert (out / "forest.txt").read_text() == "my notes on the forest"
    assert (out / "forest.dot").exists() and "forest.txt" not in owned_entries(out)
    assert len(problems) == 1 and "forest.txt" in problems[0] and "not tenprof's" in problems[0]
    assert "not tenprof's" in load_profile(out).meta.passes["tensors"].reason
    assert not [p for p in out.iterdir() if p.name.startswith(".drawing-")]
