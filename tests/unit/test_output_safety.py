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
from pathlib import Path

import pytest

from tenprof.cli.main import main
from tenprof.errors import ProfileError
from tenprof.importers.timeline_import import import_trace
from tenprof.store import directory
from tenprof.store.directory import MARKER_FILE, is_profile_dir, open_output_dir, owned_entries
from tenprof.store.profile import load_profile
from tests.conftest import DATA
from tests.helpers import MATMUL64_TRACE, imported_profile, siblings, snapshot


def test_force_replaces_only_what_tenprof_wrote(tmp_path: Path) -> None:
    out = imported_profile(tmp_path / "prof")
    assert is_profile_dir(out)
    assert {"meta.json", "timeline", MARKER_FILE} <= set(owned_entries(out))
    (out / "notes.txt").write_text("my notes")
    (out / "plots").mkdir()
    (out / "plots" / "a.png").write_bytes(b"png")
    (out / "timeline" / "kernels.parquet").write_bytes(b"old and damaged")
    import_trace(MATMUL64_TRACE, out, force=True)
    assert (out / "notes.txt").read_text() == "my notes"
    assert (out / "plots" / "a.png").read_bytes() == b"png"
    assert load_profile(out).table("kernels").num_rows > 0  # the new tables are in place
    assert "notes.txt" not in owned_entries(out) and "plots" not in owned_entries(out)
    assert siblings(out) == []  # neither the staging nor the old files are left next to it


def test_a_failed_replacement_keeps_the_old_profile(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = imported_profile(tmp_path / "prof")
    before = snapshot(out)
    bad = tmp_path / "bad.json.gz"
    bad.write_bytes(gzip.compress(MATMUL64_TRACE.read_bytes()[:100]))  # not even valid gzip of a trace
    assert main(["import", "--force", "--quiet", "-o", str(out), str(bad)]) != 0
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    assert snapshot(out) == before
    assert siblings(out) == ["bad.json.gz"]


def test_a_failed_import_leaves_nothing_that_blocks_the_retry(tmp_path: Path) -> None:
    out = tmp_path / "new"
    bad = tmp_path / "bad.json"
    bad.write_text('{"traceEvents": [')
    assert main(["import", "--quiet", "-o", str(out), str(bad)]) != 0
    assert not out.exists()
    assert main(["import", "--quiet", "-o", str(out), str(MATMUL64_TRACE)]) == 0
    assert load_profile(out).table("kernels").num_rows > 0


def test_a_directory_that_cannot_be_changed_is_left_as_it_was(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = imported_profile(tmp_path / "prof")
    before = snapshot(out)
    real_rename = os.rename

    def rename(src: str | Path, dst: str | Path) -> None:
        if Path(src).parent == out.resolve() and Path(src).name == "timeline":
            raise PermissionError(13, "Permission denied")
        real_rename(src, dst)

    monkeypatch.setattr(directory.os, "rename", rename)
    with pytest.raises(ProfileError, match="Permission denied; it is unchanged and the new one is in") as caught:
        import_trace(MATMUL64_TRACE, out, force=True)
    assert "\n" not in str(caught.value)
    assert snapshot(out) == before
    staged = [tmp_path / n for n in siblings(out)]
    assert len(staged) == 1 and is_profile_dir(staged[0])  # the new profile is kept, as the message says


def test_a_name_that_escapes_the_directory_is_never_removed(tmp_path: Path) -> None:
    out = imported_profile(tmp_path / "prof")
    (tmp_path / "precious").write_text("keep")
    marker = json.loads((out / MARKER_FILE).read_text())
    marker["entries"] += ["../precious", "/etc", ".."]
    (out / MARKER_FILE).write_text(json.dumps(marker))
    assert "../precious" not in owned_entries(out)
    import_trace(MATMUL64_TRACE, out, force=True)
    assert (tmp_path / "precious").read_text() == "keep"


def test_an_empty_existing_directory_is_used_in_place(tmp_path: Path) -> None:
    out = tmp_path / "empty"
    out.mkdir()
    output = open_output_dir(out, force=False)
    assert output.path == out and not output.staged and not output.created
    output.discard()
    assert out.is_dir() and not any(out.iterdir())  # tenprof did not make it, so it stays


def test_the_forest_drawings_are_tenprofs_and_never_replace_a_users_file(tmp_path: Path) -> None:
    # `tenprof run` draws forest.txt/.dot once the passes are written (report.drawings): they are listed in
    # the marker like the tables (so a later --force replaces or removes them), and a user's file of that
    # name is left alone, with a note in the tensors pass's status.
    from tenprof.report.drawings import write_drawings

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
