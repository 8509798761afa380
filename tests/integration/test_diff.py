"""tenprof diff on pairs of real CPU captures: a line moved and doing more work, and two torch versions (the diff
of recordings is in tests/unit/test_diff.py)."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from tenprof.analyses.compare import line_keys
from tenprof.analyses.compare.diff import diff, read_side
from tenprof.cli.main import main
from tenprof.store.directory import owned_entries
from tenprof.store.profile import load_profile
from tests.conftest import DATA
from tests.helpers import line_of
from tests.integration.conftest import Recorded

BEFORE = """\
import torch
import tenprof

torch.set_num_threads(1)  # each matmul a few ms on one core: a busy neighbour cannot outweigh five of them
x, w, k = torch.randn(384, 384), torch.randn(384, 384), 1
for _ in range(8):
    y = [x @ w for _ in range(k)]
    tenprof.step()
"""


AFTER = """\
import torch
import tenprof

torch.set_num_threads(1)  # each matmul a few ms on one core: a busy neighbour cannot outweigh five of them
x, w, k = torch.randn(384, 384), torch.randn(384, 384), 6
for _ in range(8):
    # the same line, moved down by this comment, now running six matmuls
    y = [x @ w for _ in range(k)]
    tenprof.step()
"""


def test_a_cpu_pair_matches_a_moved_line_by_its_text_and_finds_the_added_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sides = []
    for name, source in (("before", BEFORE), ("after", AFTER)):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "job.py").write_text(source)
        page = ["--html"] if name == "after" else []  # and the report page, which is the profile's own file
        argv = ["run", "--quiet", "--overhead-steps", "0", *page, "-o", str(folder / "prof"), str(folder / "job.py")]
        assert main(argv) == 0
        sides.append(folder / "prof")
    assert "report.html" in owned_entries(sides[1]) and b'"tallies"' in (sides[1] / "report.html").read_bytes()
    capsys.readouterr()
    assert main(["diff", str(sides[0]), str(sides[1]), "--json"]) == 0
    data = orjson.loads(capsys.readouterr().out)
    top = data["lines"][0]
    assert top["what"] == f"{tmp_path}/before/job.py:7 -> {tmp_path}/after/job.py:8"  # matched by its text
    # six matmuls where there was one: about 6x the CPU time on a quiet machine, still well above 1x with
    # the two runs loaded unevenly (1.9x seen with three heavy processes on two cores)
    assert top["after_cpu_ns"] > 1.2 * top["before_cpu_ns"] > 0
    assert data["step"]["after_ns"] > data["step"]["before_ns"]
    assert data["basis"] == "CPU" and data["other_remainder_ns"] is None  # no GPU: split by the host's time
    # BEFORE's file edited in place after its run (line 7 is now the comment): its profile kept the text
    (tmp_path / "before" / "job.py").write_text(AFTER.replace("k = ", "k0 = "))
    assert main(["diff", str(sides[0]), str(sides[1]), "--json"]) == 0
    assert orjson.loads(capsys.readouterr().out)["lines"][0]["what"] == top["what"]
    assert main(["diff", str(sides[0]), str(tmp_path / "nowhere")]) == 2
    assert main(["diff", str(sides[0]), str(DATA / "ranks" / "slow_loader")]) == 2  # one rank's, please
    assert main(["diff", str(sides[0]), str(DATA / "tensors" / "conv")]) == 2  # no timeline to compare


@pytest.mark.xdist_group("matmul_add_run")
def test_two_torch_versions_are_named_and_the_lines_meet(
    matmul_add_run: Recorded, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # examples/matmul_add.py on the CPU (--size 256 --steps 6): recorded on the GPU machine under its torch
    # 2.11 (no GPU visible; tests/data/diff/matmul_cpu_torch211), and here under this machine's torch
    import torch

    out = matmul_add_run.profile
    assert matmul_add_run.ran.code == 0
    assert main(["diff", str(DATA / "diff" / "matmul_cpu_torch211"), str(out)]) == 0
    text = capsys.readouterr().out
    assert "torch 2.11.0+cu130" in text and f"torch {torch.__version__}" in text
    assert ("two torch versions" in text) == (torch.__version__ != "2.11.0+cu130")
    d = diff(
        read_side(load_profile(DATA / "diff" / "matmul_cpu_torch211"), "2.11"), read_side(load_profile(out), "here")
    )
    line = line_of(matmul_add_run.script.read_text(), "c = a @ b")
    matmul = next(c for c in d.lines if c.what.endswith(f"examples/matmul_add.py:{line}"))
    assert matmul.before_cpu_ns > 0 and matmul.after_cpu_ns > 0  # the same line in both runs
    # the recording on the GPU machine predates frames keeping their text: where its file reads as changed
    # since (a fresh checkout), its lines are known by number and meet the other run's at that number
    monkeypatch.setattr(line_keys, "_unchanged_text", lambda file, line, made: None)
    old = read_side(load_profile(DATA / "diff" / "matmul_cpu_torch211"), "2.11")
    assert all(key[1].startswith("line ") for key in old.lines)
    again = next(c for c in diff(old, read_side(load_profile(out), "here")).lines if c.what.endswith(f":{line}"))
    assert again.before_cpu_ns > 0 and again.after_cpu_ns > 0
