"""Ranks from real captures under a launcher: each rank's own directory, the merged report, an existing output
refused or cleared with --force (the merged report of recordings is in tests/unit/test_ranks.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tenprof.cli.main import main
from tenprof.store.directory import rank_dirs
from tests.conftest import DATA

RANKS = DATA / "ranks"


def test_each_rank_writes_its_own_directory_and_the_report_merges(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # rank 1 keeps each step's output at the module's level and dies of a (stand-in) out-of-memory error
    script = tmp_path / "job.py"
    script.write_text(
        "import os, torch\nimport tenprof\nkept = []\n"
        "for i in range(8):\n    kept.append(torch.ones(256, 64) @ torch.ones(64, 1024))\n"
        "    if os.environ['RANK'] == '1' and i == 6:\n"
        "        raise torch.OutOfMemoryError('a stand-in: Tried to allocate 1.00 MiB')\n"
        "    tenprof.step()\n"
    )
    out = tmp_path / "out"
    for rank in (0, 1):
        monkeypatch.setenv("RANK", str(rank))
        monkeypatch.setenv("LOCAL_RANK", str(rank))
        monkeypatch.setenv("WORLD_SIZE", "2")
        assert main(["run", "-o", str(out), str(script)]) == rank  # rank 1's script exits with 1
    assert [p.name for p in rank_dirs(out)] == ["rank00000", "rank00001"]
    assert not (out / "meta.json").exists()  # no file shared by the ranks
    capsys.readouterr()
    assert main(["report", str(out)]) == 0
    merged = capsys.readouterr().out
    assert "2 ranks: 1 host(s)" in merged and "min" in merged and "max" in merged
    # the rank that died is said, and judged: what held its memory, kept alive until the recording stopped
    assert "Rank 1 was cut short: the script raised OutOfMemoryError" in merged
    assert main(["report", str(out), "--json"]) == 0
    ranks = json.loads(capsys.readouterr().out)["ranks"]
    first = ranks[1]["findings"][0]
    assert first["id"] == "out-of-memory" and first["urgent"]
    # step 6, where it failed, ran with the capture off (settling before the loop is timed un-profiled): its
    # block is not seen, steps 0-5's are
    assert first["title"] == f"Out of memory at {script}:7: 1.0MiB asked for; 6 blocks from {script}:5 hold 6.0MiB"
    assert main(["report", str(out), "--rank", "1"]) == 0
    assert main(["report", str(out), "--rank", "7"]) == 2
    assert "no rank 7" in capsys.readouterr().err


def test_launcher_refuses_an_existing_output_and_force_clears_old_ranks(tmp_path: Path) -> None:
    from tenprof.cli.launch import run_under_launcher
    from tenprof.errors import UsageError
    from tenprof.store.directory import claim

    out = tmp_path / "out"
    shutil.copytree(RANKS / "balanced", out)
    for marker in out.rglob(".tenprof-profile"):  # as recordings made before tenprof kept a marker
        marker.unlink()
    with pytest.raises(UsageError, match="already exists"):
        run_under_launcher("true", ["run", "t.py"], ["t.py"], out, True, 5)
    # The recordings predate the marker: --force cannot tell they are tenprof's, so it refuses.
    with pytest.raises(UsageError, match="no marker"):
        run_under_launcher("true", ["run", "t.py"], ["t.py"], out, True, 5, force=True)
    assert len(rank_dirs(out)) == 2
    for rank in rank_dirs(out):
        claim(rank, *(p.name for p in rank.iterdir()))
    (out / "notes.txt").write_text("mine")
    (out / "rank00001" / "my-plot.png").write_bytes(b"png")
    assert run_under_launcher("true", ["run", "t.py"], ["t.py"], out, True, 5, force=True) == 0
    # `true` started no rank: both old ranks are stale and go, but not the user's files.
    assert [p.name for p in rank_dirs(out)] == []
    assert (out / "notes.txt").read_text() == "mine"
    assert sorted(p.name for p in (out / "rank00001").iterdir()) == ["my-plot.png"]
