"""torch.compile beyond the timeline: generated Triton kernels in the stalls pass (with the text of their
generated source lines), Inductor's launch metadata, a plain torch.profiler trace of a compiled model read
by `tenprof import`, and mode="max-autotune". All recorded on an H200 (tests/data/compiled, README)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tenprof.analyses.kernels.compiled import compiled_report
from tenprof.analyses.kernels.stalls import kernel_stalls, stall_rollup
from tenprof.store.profile import Profile, load_profile
from tests.conftest import DATA
from tests.helpers import recording

COMPILED = DATA / "compiled"


@pytest.fixture(scope="module")
def stalls() -> Profile:
    return recording(COMPILED / "mlp_stalls")


def test_every_generated_kernel_is_sampled_under_the_name_the_timeline_knows(stalls: Profile) -> None:
    kernels = stalls.table("stall_kernels").to_pylist()
    compiled = [k for k in kernels if k["compiled_kernel"]]
    described = {r["kernel"] for r in stalls.table("compiled_kernels").to_pylist()}
    assert len(described) == 44 and {k["name"] for k in compiled} == described
    assert all(not k["op"] and k["samples"] > 0 for k in compiled)


def test_hot_instructions_of_generated_kernels_quote_their_generated_line(stalls: Profile) -> None:
    rows = [k for k in kernel_stalls(stalls, limit=5) if k.name.startswith("triton_")]
    assert len(rows) == 44 and all(k.where.startswith("compiled: aten::") for k in rows)
    generated = [h for k in rows for h in k.hot if "torchinductor" in h.source]
    quoted = [h for h in generated if h.source_text]
    assert len(generated) >= 150 and len(quoted) == len(generated)
    # ncu's line of a global load is a tl.load of the generated source
    loads = [h for h in quoted if "LDG" in h.text]
    assert loads and all("tl.load" in h.source_text for h in loads)
    gelu = next(k for k in rows if k.name.startswith("triton_poi_fused_gelu_gelu_backward"))
    assert "aten::gelu_backward" in gelu.where and any("erf" in h.source_text for h in gelu.hot)


def test_rollup_puts_generated_kernels_at_their_fused_ops_and_user_lines(stalls: Profile) -> None:
    source = (DATA.parents[1] / "examples" / "compiled_train.py").read_text().splitlines()
    gelu_line = next(i for i, text in enumerate(source, 1) if "gelu(" in text)
    rows = [r for r in stall_rollup(stalls) if r.op.startswith("compiled: aten::gelu,aten::gelu_backward")]
    assert len(rows) == 1 and rows[0].line.endswith(f"compiled_train.py:{gelu_line}")
    # each backward GELU kernel counts once per launch of the run (3 steps), not per autotuning benchmark
    sampled = [
        k for k in stalls.table("stall_kernels").to_pylist() if k["name"].startswith("triton_poi_fused_gelu_gelu_")
    ]
    assert len(sampled) == 4
    assert rows[0].weighted_samples == pytest.approx(3 * sum(k["samples"] for k in sampled))


def test_exported_kernel_sources_have_the_line_numbers_ncu_gave(stalls: Profile, tmp_path: Path) -> None:
    from tenprof.cli.main import main

    assert main(["export", str(stalls.directory), "--format", "generated-code", "-o", str(tmp_path)]) == 0
    checked = 0
    for r in stalls.sql(
        "select k.name, s.line, s.text from sass s join stall_kernels k using (replay_id) "
        "where k.compiled_kernel and s.text like '%LDG%' and s.line > 0"
    ).to_pylist():
        lines = (tmp_path / f"{r['name']}.py").read_text().split("\n")
        assert "tl.load" in lines[r["line"] - 1]
        checked += 1
    assert checked >= 44


def test_launch_metadata_of_the_chosen_config(stalls: Profile) -> None:
    rows = stalls.table("compiled_kernels").to_pylist()
    assert all(r["launches"] > 0 and r["num_warps"] in (1, 2, 4, 8, 16, 32) and r["num_stages"] >= 1 for r in rows)
    assert all("XBLOCK=" in r["block_sizes"] for r in rows)
    report = compiled_report(stalls)
    assert report is not None
    assert all("warps" in r.config and "stage(s)" in r.config for r in report.rows if r.kernel.startswith("triton_"))


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Profile:
    from tenprof.importers.timeline_import import import_trace

    out = tmp_path_factory.mktemp("imported") / "prof"
    import_trace(COMPILED / "torch_profiler_mlp.json.gz", out, force=False)
    return load_profile(out)


def test_a_torch_profiler_trace_of_a_compiled_model_is_attributed_as_far_as_it_allows(imported: Profile) -> None:
    rows = {r["kernel"]: r for r in imported.table("compiled_kernels").to_pylist()}
    assert len(rows) == 14
    # the trace names no aten ops for generated kernels: they come from the names, with low confidence
    assert all(r["source"] == "kernel-name" and r["confidence"] == "low" for r in rows.values())
    assert rows["triton_poi_fused_gelu_0"]["aten_ops"] == "aten::gelu"
    # what Inductor's launcher passed to the profiler: the chosen config and, with
    # TORCHINDUCTOR_BENCHMARK_KERNEL=1, the bytes a kernel declares
    assert all(r["num_warps"] and r["num_stages"] and r["launches"] > 0 for r in rows.values())
    assert rows["triton_poi_fused_gelu_0"]["block_sizes"] == "XBLOCK=1024"
    gelu_bytes = rows["triton_poi_fused_gelu_0"]["bytes"]
    assert gelu_bytes == pytest.approx(2 * 256 * 4096 * 4, rel=0.01)  # reads and writes one fp32 [256, 4096]
    report = compiled_report(imported)
    assert report is not None and report.ops_share >= 0.95
    assert 0 < report.low_confidence_ns < report.compiled_ns and not report.has_generated_code


def test_the_import_report_says_what_it_could_not_attribute(imported: Profile) -> None:
    import io

    from rich.console import Console

    from tenprof.renderers.compiled_text import render_compiled

    report = compiled_report(imported)
    assert report is not None
    out = io.StringIO()
    render_compiled(report, Console(file=out, width=200), 20)
    text = out.getvalue()
    assert "low confidence" in text and "no Inductor provenance" in text
    assert "declares" in text and "B/s" in text


def test_max_autotune_templates_and_cuda_graph_gemms() -> None:
    profile = recording(COMPILED / "mlp_max_autotune")
    report = compiled_report(profile)
    assert report is not None and report.ops_share >= 0.95 and report.lines_share >= 0.95
    templates = [r for r in report.rows if r.kernel.startswith("triton_tem_")]
    assert templates and all(r.source == "inductor-comments" and "aten::mm" in r.aten_ops for r in templates)
    # the recorded steps only replay CUDA graphs: the library GEMMs get the wrapper's GEMM calls, marked low
    library = [r for r in report.rows if r.source == "wrapper GEMM calls"]
    assert library and all(r.confidence == "low" and "aten::mm" in r.aten_ops for r in library)
    assert {r.source for r in report.rows if r.confidence == "low"} == {"wrapper GEMM calls"}
    assert report.low_confidence_ns > 0.5 * report.compiled_ns  # the cuBLAS GEMMs are most of the time


def test_gpt2_default_mode_is_attributed() -> None:
    report = compiled_report(recording(COMPILED / "gpt2_default"))
    assert report is not None and report.compiled_ns >= 0.5 * report.kernel_ns
    assert report.all_with_ops_ns >= 0.95 * report.kernel_ns and report.all_with_lines_ns >= 0.95 * report.kernel_ns
    triton = [r for r in report.rows if r.kernel.startswith("triton_")]
    assert triton and all(r.source == "inductor-comments" and r.aten_ops and r.lines for r in triton)


def test_counters_report_places_generated_kernels_at_their_fused_ops(stalls: Profile) -> None:
    from tenprof.analyses.kernels.counters import operators_report
    from tenprof.importers.counters_import import build_counter_tables, read_gz_json

    source = (DATA.parents[1] / "examples" / "compiled_train.py").read_text().splitlines()
    gelu_line = next(i for i, text in enumerate(source, 1) if "gelu(" in text)
    report = operators_report(stalls)
    assert report is not None
    fused = [o for o in report.operators if o.op.startswith("compiled: aten::gelu")]
    assert fused and all(o.line.endswith(f"compiled_train.py:{gelu_line}") for o in fused)
    # four GELU kernels (one per block) x 3 steps: autotuning's benchmark launches, even of the winning
    # config, are not the program's launches
    assert [o.aggregated.launches for o in fused] == [12, 12]
    assert not any(o.op.startswith("triton_") for o in report.operators)
    # the launches without metrics are all autotuning's benchmarks, and say so
    assert report.unattributed_kernels and all("autotuning" in u.reason for u in report.unattributed_kernels)
    raw = stalls.directory / "counters" / "raw"
    timeline = {name: stalls.table(name) for name in ("kernels", "ops")}
    _, built = build_counter_tables(
        read_gz_json(raw / "counters.json.gz"), read_gz_json(raw / "counters_ops.json.gz"), timeline
    )
    assert built.matched_kernels == built.timeline_kernels - 4992
    assert not any("matched no replay" in w for w in built.warnings)


def test_each_kernel_names_its_compiled_region_and_the_line_that_called_it() -> None:
    source = (DATA.parents[1] / "examples" / "compiled_train.py").read_text().splitlines()
    call = next(i for i, text in enumerate(source, 1) if "compiled(batch)" in text)
    for name in ("mlp_default", "gpt2_reduce_overhead"):
        report = compiled_report(recording(COMPILED / name))
        assert report is not None
        triton = [r for r in report.rows if r.kernel.startswith("triton_")]
        regions = {r.region for r in triton}
        assert "backward" in regions and all(re.fullmatch(r"frame \d+/\d+, forward|backward", x) for x in regions)
        assert len(regions) == (2 if name == "mlp_default" else 3)  # GPT-2 runs in compiled frames 1/0 and 3/0
        assert all(r.called_from.endswith(f"compiled_train.py:{call}") for r in triton)


def test_a_generated_file_named_by_a_trace_is_read_when_it_still_exists(tmp_path: Path) -> None:
    from tenprof.core.inductor import is_generated_file
    from tenprof.importers.compiled_import import build_compiled_table

    generated = tmp_path / "o3" / ("c" + "a" * 51 + ".py")
    generated.parent.mkdir()
    generated.write_text(
        "@triton_heuristics.pointwise(inductor_meta={'num_load': 2, 'num_store': 1, 'num_reduction': 0})\n"
        "def triton_poi_fused_add_mul_0(in_ptr0, out_ptr0):\n"
        "    # ORIGIN:\n    # call_function aten.mul.Tensor\n"
        '    #   File "/home/u/model.py", line 12, in forward\n    # END ORIGIN\n'
    )
    other = tmp_path / "notes.py"
    other.write_text('# call_function aten.sin.default\n#   File "/x.py", line 1, in f\n')
    assert is_generated_file(str(generated)) and not is_generated_file(str(other))
    launches = {
        "triton_poi_fused_add_mul_0": {"kernel_file": str(generated), "launches": 2},
        "triton_poi_fused_sin_1": {"kernel_file": str(other), "launches": 1},  # not Inductor's: not read
        "triton_poi_fused_cos_2": {"kernel_file": str(tmp_path / "gone" / ("c" + "b" * 51 + ".py"))},
    }
    rows = {r["kernel"]: r for r in build_compiled_table([], [], launches).to_pylist()}
    read = rows["triton_poi_fused_add_mul_0"]
    assert (read["aten_ops"], read["lines"], read["confidence"]) == ("aten::mul", "/home/u/model.py:12", "high")
    assert (read["num_load"], read["num_store"], read["generated_file"]) == (2, 1, str(generated))
    assert (rows["triton_poi_fused_sin_1"]["aten_ops"], rows["triton_poi_fused_sin_1"]["confidence"]) == (
        "aten::sin",
        "low",
    )
    assert rows["triton_poi_fused_cos_2"]["source"] == "kernel-name"


def test_json_report_carries_the_compiled_counters_and_stalls_sections(stalls: Profile) -> None:
    import orjson

    from tenprof.report.sections import report_json

    data = orjson.loads(report_json(stalls))
    compiled = {r["kernel"]: r for r in data["compiled"]["rows"]}
    assert (
        data["compiled"]["ops_share"] == 1.0 and compiled["triton_poi_fused_gelu_0"]["region"] == "frame 0/0, forward"
    )
    assert any(o["op"].startswith("compiled: aten::gelu") for o in data["counters"]["operators"])
    assert any(r["op"].startswith("compiled: aten::gelu") for r in data["stalls"]["by_op_and_line"])
    eager = recording(DATA / "mlp")
    plain = orjson.loads(report_json(eager))
    assert plain["compiled"] is None and plain["counters"] is None and plain["stalls"] is None


def test_perfetto_kernels_of_compiled_code_name_what_they_fuse(stalls: Profile) -> None:
    from tenprof.renderers.perfetto import perfetto_events

    gelu = [e for e in perfetto_events(stalls) if e.get("cat") == "kernel" and e["name"] == "triton_poi_fused_gelu_0"]
    assert gelu and all(e["args"]["fuses"].startswith("aten::gelu") for e in gelu)
    assert all("compiled_train.py" in e["args"]["fused lines"] and e["args"]["attribution"] == "high" for e in gelu)


def test_launch_counts_leave_out_autotuning_benchmarks(stalls: Profile) -> None:
    from tenprof.importers.compiled_import import _program_launches

    names = [r["kernel"] for r in stalls.table("compiled_kernels").to_pylist()]
    all_records = {n: n for n in stalls.table("ops").column("name").to_pylist() if n in names}
    counted = _program_launches(stalls.table("ops"), {n: {"launches": -1} for n in all_records})
    # three steps, one launch of each generated kernel per step; the 215 launch records of a pointwise
    # kernel include its autotuning benchmarks
    assert {v["launches"] for v in counted.values()} == {3}
    records = stalls.sql("select count(*) as n from ops where name = 'triton_poi_fused_gelu_0'").column(0)[0].as_py()
    assert records == 215
