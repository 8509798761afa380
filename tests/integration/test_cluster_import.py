"""`tenprof import FOLDER --scheduler ADDRESS`: a folder's ranks imported as tasks of a Dask cluster started
here on localhost (its workers threads of this process, over TCP), a broken trace failing alone."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from tenprof.cli.main import main
from tenprof.store.directory import rank_dirs
from tenprof.store.profile import load_profile
from tests.conftest import DATA

distributed = pytest.importorskip("distributed")
DDP = DATA / "corpus_traces" / "ddp_no_sync.json.gz"  # rank 0 of a 2-GPU DDP job (H100)


def _ranks(folder: Path, count: int, shift_us: float) -> Path:
    """`count` copies of the DDP trace as ranks 0.., rank r's clock r * `shift_us` ahead, and a broken one."""
    trace = json.loads(gzip.decompress(DDP.read_bytes()))
    folder.mkdir()
    for rank in range(count):
        copy = dict(trace, distributedInfo=dict(trace["distributedInfo"], rank=rank, world_size=count))
        copy["traceEvents"] = [
            dict(e, ts=e["ts"] + rank * shift_us) if isinstance(e.get("ts"), int | float) else e
            for e in trace["traceEvents"]
        ]
        (folder / f"rank{rank}.json.gz").write_bytes(gzip.compress(json.dumps(copy).encode(), 1))
    (folder / "rank9.json").write_text("{not a trace")
    return folder


def test_each_rank_is_a_task_and_a_broken_trace_fails_alone(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = _ranks(tmp_path / "traces", 3, 700.0)
    out = tmp_path / "out"
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, protocol="tcp://", dashboard_address=None
    ) as cluster:
        code = main(["import", str(folder), "-o", str(out), "--scheduler", cluster.scheduler_address, "--quiet"])
        assert code == 1  # one trace failed
        err = capsys.readouterr().err
        assert err.count("tenprof: error:") == 1 and "rank9.json" in err
        # the merged report with each rank's part made on the cluster: the same as made here
        assert main(["report", str(out), "--json", "--scheduler", cluster.scheduler_address]) == 0
        on_cluster = json.loads(capsys.readouterr().out)
    assert [load_profile(d).meta.rank for d in rank_dirs(out)] == [0, 1, 2]
    assert main(["report", str(out), "--json"]) == 0
    merged = json.loads(capsys.readouterr().out)
    assert on_cluster == merged
    # the copies' clocks 0.7 ms apart, found from their collectives' ends (one host: larger than its 50 us)
    shifts = [r["clock_shift_ns"] for r in merged["ranks"]]
    assert shifts == [0, pytest.approx(-700_000, abs=1_000), pytest.approx(-1_400_000, abs=1_000)]
    (group,) = merged["arrivals"]
    # the 173 of its 192 collectives in its steady steps (3-9; step 2, a cold one, is left out), together
    assert group["group"] == "0" and group["compared"] == 173 and group["most_often_last"] == -1


def test_a_scheduler_that_cannot_be_reached_is_one_line_and_leaves_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from tenprof.core import cluster

    monkeypatch.setattr(cluster, "CONNECT_TIMEOUT_S", 1)
    folder = _ranks(tmp_path / "traces", 1, 0.0)
    assert main(["import", str(folder), "-o", str(tmp_path / "out"), "--scheduler", "tcp://127.0.0.1:9"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("tenprof: error: cannot reach the Dask scheduler at tcp://127.0.0.1:9")
    assert not (tmp_path / "out").exists()
