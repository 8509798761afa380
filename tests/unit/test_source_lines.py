"""A report is a pure function of the profile directory (issue 18): the stalls report quotes source lines
from the stalls pass's `source_lines` table, copied where the pass was built, never from this machine's
files; the GEMM fallback of the compiled-code report reads `compiled_extern_calls`, not the raw wrappers.

Checked on real recordings rebuilt from their kept raw files: tests/data/stalls/planted (a Triton kernel
whose line info names examples/stalls/planted.py, relative to where the program ran, and a CUDA
extension's .cu file) and tests/data/compiled/mlp_max_autotune (CUDA-graph replays of cuBLAS GEMMs).
"""

from __future__ import annotations

import io
import shutil
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from tenprof.analyses.kernels.compiled import compiled_report, extern_gemm_ops
from tenprof.analyses.kernels.stalls import kernel_stalls, stall_rollup
from tenprof.errors import ProfileError
from tenprof.importers.compiled_import import write_compiled_kernels
from tenprof.importers.stalls_import import build_stalls_pass
from tenprof.renderers.stalls_text import render_rollup, render_stalls
from tenprof.store.profile import Profile, load_profile
from tenprof.store.writer import PassWriter
from tests.conftest import DATA, rebuild_pass

REPO = DATA.parents[1]
PLANTED_SOURCE = "examples/stalls/planted.py"


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tests/data/stalls/planted with its stalls pass rebuilt from the kept raw report, in the directory
    the program ran in (its line info names planted.py relative to it), meta.json recording the rows."""
    target = tmp_path_factory.mktemp("source_lines") / "planted"
    shutil.copytree(DATA / "stalls" / "planted", target)
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(REPO)
        rebuild_pass(
            target,
            "stalls",
            lambda writer, raw: build_stalls_pass(writer, raw / "stalls.json.gz", raw / "counters_ops.json.gz"),
        )
    return target


def _rendered(profile: Profile) -> str:
    out = io.StringIO()
    console = Console(file=out, width=200)
    render_stalls(kernel_stalls(profile), console, None)
    render_rollup(stall_rollup(profile), console, None)
    return out.getvalue()


def test_the_stalls_import_copies_every_line_the_sass_maps_to(planted: Path) -> None:
    profile = load_profile(planted)
    rows = profile.table("source_lines").to_pylist()
    sass = {(r["file"], r["line"]) for r in profile.table("sass").to_pylist() if r["file"]}
    assert {(r["file"], r["line"]) for r in rows} == sass and len(rows) == len(sass)
    source = (REPO / PLANTED_SOURCE).read_text().split("\n")
    python = [r for r in rows if r["file"] == PLANTED_SOURCE]
    assert len(python) == 17 and all(r["text"] == source[r["line"] - 1] for r in python)
    assert any("tl.load" in r["text"] for r in python)
    # only Python sources are read: the CUDA extension's lines have no text
    assert {r["text"] for r in rows if r["file"].endswith(".cu")} == {""}
    assert profile.meta.passes["stalls"].rows["source_lines"] == len(rows)


def test_a_copied_profile_renders_the_same_stalls_report_without_the_source_files(
    planted: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    here = _rendered(load_profile(planted))
    assert "tl.load" in here  # the hot loads quote their planted.py line
    copy = tmp_path / "elsewhere" / "planted"
    shutil.copytree(planted, copy)
    profile = load_profile(copy)
    # another machine: no planted.py relative to the working directory, and no file outside the profile reads
    monkeypatch.chdir(tmp_path)
    for method in ("read_text", "read_bytes"):
        original = getattr(Path, method)

        def inside_only(path: Path, *args: Any, _original: Any = original, **kwargs: Any) -> Any:
            if not path.resolve().is_relative_to(copy.resolve()):
                raise PermissionError(f"the report read {path}, outside the profile")
            return _original(path, *args, **kwargs)

        monkeypatch.setattr(Path, method, inside_only)
    assert _rendered(profile) == here


def test_a_profile_recorded_before_source_lines_reads_as_without_them(tmp_path: Path) -> None:
    """The recording as kept (no table, no rows entry in meta.json) is not damaged; its lines outside
    generated code have no text even though planted.py is here: the report reads no local file."""
    profile = load_profile(DATA / "stalls" / "planted")
    profile.check()
    assert profile.table("source_lines").num_rows == 0
    hot = [h for k in kernel_stalls(profile) for h in k.hot]
    assert any(h.source.startswith(PLANTED_SOURCE) for h in hot) and not any(h.source_text for h in hot)


def test_a_missing_source_lines_table_that_meta_json_recorded_is_damage(planted: Path, tmp_path: Path) -> None:
    copy = tmp_path / "planted"
    shutil.copytree(planted, copy)
    (copy / "stalls" / "source_lines.parquet").unlink()
    with pytest.raises(ProfileError, match=r"source_lines\.parquet is missing.*damaged"):
        load_profile(copy).check()


def test_the_gemm_fallback_reads_the_table_not_the_kept_wrappers(tmp_path: Path) -> None:
    old = load_profile(DATA / "compiled" / "mlp_max_autotune")  # recorded before compiled_extern_calls
    assert old.table_path("compiled_extern_calls") is None and extern_gemm_ops(old) == "aten::addmm,aten::mm"
    target = tmp_path / "mlp"
    shutil.copytree(DATA / "compiled" / "mlp_max_autotune", target)
    timeline = target / "timeline"
    writer = PassWriter(target, "timeline")
    for table in timeline.glob("*.parquet"):
        shutil.copy(table, writer.tmp_dir / table.name)
    assert write_compiled_kernels(writer, timeline / "raw" / "compiled_code.json.gz", {}) == ""
    shutil.copy(timeline / "compiled_kernels.parquet", writer.tmp_dir)  # keep the recorded launch columns
    writer.commit()  # without raw/: the report must not need the kept wrappers
    assert writer.rows["compiled_extern_calls"] > 0 and not (timeline / "raw").exists()
    new = load_profile(target)
    calls = new.table("compiled_extern_calls").to_pylist()
    assert {r["aten_op"] for r in calls} >= {"aten::mm"} and all(r["calls"] > 0 and r["wrapper_file"] for r in calls)
    assert extern_gemm_ops(new) == extern_gemm_ops(old)
    before, after = compiled_report(old), compiled_report(new)
    assert before is not None and after is not None and after.rows == before.rows
    assert any(r.source == "wrapper GEMM calls" for r in after.rows)
