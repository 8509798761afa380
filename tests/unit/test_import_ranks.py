"""`tenprof import FOLDER`: a folder of torch.profiler traces, one per rank, imported in parallel
processes into FOLDER.tenprof/rankNNNNN (or -o), then reported merged."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest

from tenprof.cli.main import main
from tenprof.store.profile import load_profile
from tests.conftest import DATA


def _tiny_trace(rank: int, op: str) -> bytes:
    """A minimal Kineto trace of one CPU op, saying which rank wrote it."""
    return orjson.dumps(
        {
            "schemaVersion": 1,
            "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": 2},
            "traceEvents": [
                {"ph": "X", "cat": "cpu_op", "name": op, "pid": 1, "tid": 1, "ts": 10.0, "dur": 5.0, "args": {}}
            ],
            "baseTimeNanoseconds": 0,
        }
    )


def test_each_trace_becomes_a_rank_profile_and_the_report_merges(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "traces"
    folder.mkdir()
    for name in ("fp32_gemm", "slow_step"):  # no distributedInfo: ranks in name order
        shutil.copy(DATA / "torch_traces" / f"{name}.json.gz", folder / f"{name}.json.gz")
    assert main(["import", str(folder)]) == 0
    out = tmp_path / "traces.tenprof"
    assert sorted(p.name for p in out.iterdir()) == ["rank00000", "rank00001"]
    assert "fp32_gemm" in " ".join(load_profile(out / "rank00000").meta.command)
    capsys.readouterr()
    assert main(["report", str(out), "--json"]) == 0
    assert len(orjson.loads(capsys.readouterr().out)["ranks"]) == 2
    # a second import into the same folder is refused without --force, and replaces it with
    assert main(["import", str(folder), "--quiet"]) == 2
    (folder / "slow_step.json.gz").unlink()  # one rank fewer this time: its old profile must not stay
    (out / "rank00001" / "notes.txt").write_text("mine")  # a file of the user's in it stays
    assert main(["import", str(folder), "--quiet", "--force"]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["rank00000", "rank00001"]
    assert [p.name for p in (out / "rank00001").iterdir()] == ["notes.txt"]


def test_the_rank_a_trace_names_wins_over_its_name(tmp_path: Path) -> None:
    folder = tmp_path / "traces"
    folder.mkdir()
    (folder / "a.json").write_bytes(_tiny_trace(1, "aten::from_rank_one"))
    (folder / "b.json").write_bytes(_tiny_trace(0, "aten::from_rank_zero"))
    assert main(["import", str(folder), "-o", str(tmp_path / "out"), "--quiet"]) == 0
    first = load_profile(tmp_path / "out" / "rank00000").table("ops").column("name").to_pylist()
    assert first == ["aten::from_rank_zero"]


def test_a_broken_trace_fails_alone(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "traces"
    folder.mkdir()
    (folder / "a.json").write_bytes(_tiny_trace(0, "aten::fine"))
    (folder / "b.json").write_bytes(_tiny_trace(1, "aten::cut")[:60])  # cut off while being written
    assert main(["import", str(folder), "-o", str(tmp_path / "out"), "--quiet"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "b.json" in err[0] and "not a complete JSON trace" in err[0]
    assert load_profile(tmp_path / "out" / "rank00000").table("ops").num_rows == 1
