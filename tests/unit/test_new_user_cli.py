"""What a new user meets on the command line (issue 35): every command works or says in one line why,
and what it prints agrees with itself. The tests that need a recorded profile of a CPU run share one
(conftest's `cpu_steps_run`: eleven steps whose first sleeps, a cold start on the CPU, no GPU work)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tenprof.cli.main import main
from tests.conftest import DATA


def _one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "tenprof" in err[0] and "error" in err[0] and "Traceback" not in err[0], err
    return err[0]


def test_a_bad_regex_is_one_line_not_a_traceback(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["view", str(DATA / "mlp"), "--exclude", "("])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "not a regular expression" in err and "Traceback" not in err


def test_list_columns_go_to_csv_as_json_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import csv
    import json

    out = tmp_path / "tensors.csv"
    assert (
        main(["export", str(DATA / "tensors" / "conv"), "--format", "csv", "--table", "tensors", "-o", str(out)]) == 0
    )
    rows = list(csv.DictReader(out.open()))
    assert rows and all(isinstance(json.loads(r["shape"]), list) for r in rows)
    assert json.loads(rows[0]["shape"]) == [64, 64, 3, 3]


def test_a_directory_of_ranks_names_its_ranks_in_view_export_and_diff(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ranks = DATA / "ranks" / "balanced"
    for argv in (["view", str(ranks)], ["export", str(ranks), "-o", str(tmp_path / "t.json")]):
        assert main(argv) == 2
        line = _one_error_line(capsys)
        assert "rank00000, rank00001" in line and "--rank 0" in line and f"tenprof report {ranks}" in line
    assert main(["diff", str(ranks), str(DATA / "ranks" / "slowed")]) == 2
    assert f"e.g. {ranks / 'rank00000'}" in _one_error_line(capsys)
    assert main(["view", str(ranks), "--rank", "1", "--depth", "1"]) == 0
    assert "all" in capsys.readouterr().out
    # the formats with a merged view write it, as report does
    assert main(["export", str(ranks), "-o", str(tmp_path / "report.json")]) == 0
    import json

    assert len(json.loads((tmp_path / "report.json").read_text())["ranks"]) == 2
    assert "2 ranks merged" in capsys.readouterr().err
    assert main(["view", str(DATA / "mlp"), "--rank", "1"]) == 2
    assert "single-process profile" in _one_error_line(capsys)


def test_exports_do_not_make_missing_folders(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "typo" / "trace.json"
    assert main(["export", str(DATA / "matmul64"), "-o", str(target)]) == 2
    assert "does not exist" in _one_error_line(capsys) and not target.parent.exists()


def test_a_missing_ncu_names_the_pass_that_needs_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from tenprof.capture import ncu_runner
    from tenprof.errors import UsageError

    monkeypatch.setattr(ncu_runner.shutil, "which", lambda name: None)
    monkeypatch.setattr(ncu_runner, "Path", lambda p: tmp_path / "nowhere" / p.lstrip("/"))
    with pytest.raises(UsageError, match="the stalls pass needs Nsight Compute for its warp stall samples"):
        ncu_runner.find_ncu("", "stalls")


@pytest.mark.xdist_group("cpu_steps_run")
def test_a_cpu_run_reads_as_one(cpu_steps_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tenprof.analyses.findings import find_all
    from tenprof.store.profile import load_profile

    cpu_run = cpu_steps_run / "prof"

    cold = next(f for f in find_all(load_profile(cpu_run)) if f.id == "cold-start")
    assert "CUDA" not in cold.why and "imports" in cold.why  # a CPU run's one-time costs
    assert main(["report", str(cpu_run)]) == 0
    printed = capsys.readouterr().out
    assert not [line for line in printed.splitlines() if line.endswith(" ")]  # no padding to 160 columns
    assert "From 3 steps run with the capture off" in printed
    assert "allocated on cpu (" in printed and "cpu:-1" not in printed  # the CPU has no device index
    assert main(["view", str(cpu_run), "-m", "gpu_time"]) == 2
    assert "no GPU work" in _one_error_line(capsys)
    assert main(["export", str(cpu_run), "--format", "csv", "-o", str(tmp_path / "kernels.csv")]) == 0
    assert "no rows (this profile recorded no GPU work): the CSV holds its header only" in capsys.readouterr().err
    from tenprof.report.html_page import embedded_data

    assert main(["export", str(cpu_run), "-o", str(tmp_path / "report.html")]) == 0  # its memory chart too
    page = embedded_data((tmp_path / "report.html").read_text())
    assert page["memory_timeline"]["device"] == "cpu" and page["memory_timeline"]["allocated"]


def test_the_merged_report_of_cpu_traces_without_steps_shows_what_they_hold(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    import torch
    from torch.profiler import ProfilerActivity, profile

    traces = tmp_path / "traces"
    traces.mkdir()
    for rank in (0, 1):
        x = torch.ones(64, 64)
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            for _ in range(5 * (rank + 1)):
                x = torch.tanh(x @ x)
        trace = traces / f"rank{rank}.json"
        prof.export_chrome_trace(str(trace))
        data = json.loads(trace.read_text())
        data["distributedInfo"] = {"rank": rank, "world_size": 2, "backend": "gloo"}
        trace.write_text(json.dumps(data))
    assert main(["import", "--quiet", str(traces), "-o", str(tmp_path / "out")]) == 0
    capsys.readouterr()
    assert main(["report", str(tmp_path / "out")]) == 0
    printed = capsys.readouterr().out
    assert "no steps were marked" in printed and "In torch ops" in printed and "Comm." not in printed
    rows = [line for line in printed.splitlines() if line.startswith("│") and "CPU" in line]
    # no time column of the rank's row reads zero (a cell, not a substring: a 50.00ms window once matched)
    cells = [[cell.strip() for cell in row.split("CPU", 1)[1].split("│")][:4] for row in rows]
    assert len(rows) == 2 and all("0.00ms" not in row_cells for row_cells in cells), rows


def test_ops_sampled_is_handed_to_the_run_through_its_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    # --ops sets TENPROF_OPS for the script's process (and a launcher's ranks, which inherit it); "every"
    # clears a TENPROF_OPS=sampled left in the shell, so the flag always wins
    from tenprof.cli.run_command import OPS_VAR, _set_ops
    from tenprof.errors import UsageError

    monkeypatch.setenv(OPS_VAR, "")
    _set_ops("sampled", "native-cupti")
    assert os.environ[OPS_VAR] == "sampled"
    _set_ops("every", "native")
    assert os.environ[OPS_VAR] == ""
    with pytest.raises(UsageError, match="--ops sampled needs a native capture"):
        _set_ops("sampled", "kineto")
