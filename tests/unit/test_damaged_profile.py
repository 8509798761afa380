"""A damaged profile must not read as an empty one (issue 15).

A table that meta.json says a pass wrote must be there, hold the rows meta.json recorded and read as that
table; otherwise reading it raises one `ProfileError` line that names the file, what is wrong and what
to do. Each case damages a copy of a real recording; tables whose pass is absent or failed still read as
empty tables of the right schema.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tenprof.cli.main import main
from tenprof.errors import ProfileError
from tenprof.store.profile import load_profile
from tenprof.store.schema import PASS_TABLES, TABLES
from tests.conftest import DATA


def _copy(tmp_path: Path, case: str = "matmul64") -> Path:
    target = tmp_path / case.replace("/", "_")
    shutil.copytree(DATA / case, target)
    return target


def _edit_meta(profile: Path, edit: dict[str, object]) -> None:
    """Set keys of meta.json given as dotted paths (passes.timeline.rows)."""
    meta = json.loads((profile / "meta.json").read_text())
    for dotted, value in edit.items():
        *parents, last = dotted.split(".")
        node = meta
        for key in parents:
            node = node[key]
        if value is None:
            del node[last]
        else:
            node[last] = value
    (profile / "meta.json").write_text(json.dumps(meta))


def _report_error(profile: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """Run `tenprof report`, check it fails as a ProfileError with one line and no traceback; the line."""
    code = main(["report", str(profile)])
    captured = capsys.readouterr()
    assert code == ProfileError.exit_code != 0
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    assert "Traceback" not in captured.err + captured.out
    assert lines[0].startswith("tenprof: error: ")
    return lines[0]


def test_an_untouched_copy_reports(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    profile = _copy(tmp_path)
    assert main(["report", str(profile)]) == 0
    captured = capsys.readouterr()
    assert captured.err == "" and "launches" in captured.out
    load_profile(profile).check()


def test_a_deleted_kernels_table_is_damage_not_zero_launches(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    profile = _copy(tmp_path)
    (profile / "timeline" / "kernels.parquet").unlink()
    line = _report_error(profile, capsys)
    assert f"{profile}/timeline/kernels.parquet is missing" in line
    assert "meta.json says the timeline pass wrote 15 rows to it" in line and "damaged" in line
    assert f"`tenprof run --force -o {profile} examples/matmul_add.py --size 64 --steps 5`" in line
    assert f"`tenprof import -o {profile}-reimported {profile}/timeline/raw/kineto_trace.json.gz`" in line


@pytest.mark.parametrize("table", ["kernels", "ops", "steps"])
def test_a_truncated_table_is_one_line(tmp_path: Path, capfd: pytest.CaptureFixture[str], table: str) -> None:
    profile = _copy(tmp_path)
    path = profile / "timeline" / f"{table}.parquet"
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    code = main(["report", str(profile)])
    captured = capfd.readouterr()  # at the file descriptors: nothing from pyarrow's C++ either
    assert code == ProfileError.exit_code
    assert captured.err.count("\n") == 1 and "Traceback" not in captured.err
    assert f"{path} is not a readable Parquet file (Parquet magic bytes not found in footer." in captured.err
    assert "the profile is damaged; record it again" in captured.err and "tenprof import -o" in captured.err


def test_a_missing_timeline_folder_is_damage(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    profile = _copy(tmp_path)
    shutil.rmtree(profile / "timeline")
    line = _report_error(profile, capsys)
    assert f"{profile}/timeline is missing, but meta.json says the timeline pass is complete" in line
    assert "tenprof run --force" in line and "tenprof import" not in line  # the kept trace went with it
    with pytest.raises(ProfileError, match="timeline is missing"):
        load_profile(profile).has_pass("timeline")


def test_a_table_with_fewer_rows_than_recorded_is_damage(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    profile = _copy(tmp_path)
    path = profile / "timeline" / "kernels.parquet"
    pq.write_table(pq.read_table(path).slice(0, 7), path)
    line = _report_error(profile, capsys)
    assert f"{path} has 7 rows, but meta.json says the timeline pass wrote 15" in line


def test_another_tables_file_is_damage(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    profile = _copy(tmp_path)
    timeline = profile / "timeline"
    pq.write_table(pq.read_table(timeline / "ops.parquet").slice(0, 15), timeline / "kernels.parquet")
    line = _report_error(profile, capsys)
    assert f"{timeline}/kernels.parquet is not a kernels table (it has no kernel_id column)" in line


def test_a_column_of_the_wrong_type_is_damage(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    profile = _copy(tmp_path)
    path = profile / "timeline" / "kernels.parquet"
    table = pq.read_table(path)
    i = table.schema.get_field_index("stream")
    pq.write_table(table.set_column(i, "stream", pa.array(["x"] * table.num_rows)), path)
    line = _report_error(profile, capsys)
    assert f"{path} does not read as the kernels table (Failed to parse string: 'x'" in line


def test_check_finds_the_damage_without_reading_the_tables(tmp_path: Path) -> None:
    profile = _copy(tmp_path, "tensor_cost/transposed")
    path = profile / "stalls" / "sass.parquet"
    path.write_bytes(path.read_bytes()[:100])
    loaded = load_profile(profile)
    with pytest.raises(ProfileError, match=r"sass\.parquet is not a readable Parquet file"):
        loaded.check()
    assert loaded.table("kernels").num_rows > 0  # the undamaged passes still read
    with pytest.raises(ProfileError, match=r"damaged; record it again: `tenprof run --passes timeline,tensors,"):
        loaded.table("sass")


def test_a_failed_tensors_pass_still_reports_with_empty_tables(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    profile = _copy(tmp_path, "tensor_cost/transposed")
    shutil.rmtree(profile / "tensors")
    _edit_meta(profile, {"passes.tensors.state": "failed", "passes.tensors.reason": "the script crashed"})
    assert main(["report", str(profile)]) == 0
    captured = capsys.readouterr()
    assert captured.err == "" and "launches" in captured.out
    loaded = load_profile(profile)
    assert not loaded.has_pass("tensors") and loaded.has_pass("stalls")
    assert "tensors: failed (the script crashed)" in loaded.missing()
    for name in PASS_TABLES["tensors"]:
        assert loaded.table(name).num_rows == 0 and loaded.table(name).schema == TABLES[name]


def test_a_table_meta_json_has_no_rows_for_is_not_damage(tmp_path: Path) -> None:
    """Profiles of older tenprof versions: a table without a rows entry may be absent (compiled_kernels in
    every fixture here) or hold any number of rows, and may lack columns added since."""
    profile = _copy(tmp_path)
    (profile / "timeline" / "kernels.parquet").unlink()
    _edit_meta(profile, {"passes.timeline.rows.kernels": None, "passes.timeline.rows.ops": None})
    ops = profile / "timeline" / "ops.parquet"
    pq.write_table(pq.read_table(ops).slice(0, 5), ops)
    steps = profile / "timeline" / "steps.parquet"
    pq.write_table(pq.read_table(steps).drop_columns(["complete"]), steps)
    loaded = load_profile(profile)
    loaded.check()
    assert loaded.table("kernels").num_rows == 0 and loaded.table("compiled_kernels").num_rows == 0
    assert loaded.table("ops").num_rows == 5
    assert loaded.table("steps").column("complete").null_count == 6


def test_a_damaged_imported_profile_says_to_import_it_again(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = DATA / "matmul64" / "timeline" / "raw" / "kineto_trace.json.gz"
    profile = tmp_path / "imported"
    assert main(["import", "--quiet", "-o", str(profile), str(trace)]) == 0
    capsys.readouterr()
    (profile / "timeline" / "api_calls.parquet").unlink()
    line = _report_error(profile, capsys)
    assert "api_calls.parquet is missing, but meta.json says the timeline pass wrote 96 rows" in line
    assert line.endswith(f"import the trace again: `tenprof import --force -o {profile} {trace}`")


def test_a_damaged_rank_fails_the_merged_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    job = _copy(tmp_path, "ranks/balanced")
    (job / "rank00001" / "timeline" / "kernels.parquet").unlink()
    line = _report_error(job, capsys)
    assert f"{job}/rank00001/timeline/kernels.parquet is missing" in line
    assert line.endswith("the profile is damaged; record it again with `tenprof run`")  # no trace kept here


def test_a_damaged_later_section_fails_before_the_report_prints_anything(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    copy = tmp_path / "conv"
    shutil.copytree(DATA / "tensors" / "conv", copy)
    (copy / "tensors" / "tensor_uses.parquet").unlink()
    assert main(["report", str(copy)]) == 3
    captured = capsys.readouterr()
    assert captured.out == ""
    assert len(captured.err.strip().splitlines()) == 1 and "tensor_uses.parquet" in captured.err
