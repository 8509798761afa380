"""torch.compile attribution: the generated wrapper's comments parsed into kernel -> aten ops and source
lines, checked on a hand-written wrapper and on compiled workloads recorded on an H200
(tests/data/compiled: a small MLP with torch.compile's default mode, GPT-2 small with reduce-overhead)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tenprof.analyses.kernels.compiled import compiled_report
from tenprof.core.inductor import from_kernel_name
from tenprof.importers.compiled_import import build_compiled_table, parse_wrapper
from tenprof.store.compiled_code import read_compiled_code
from tenprof.store.profile import Profile, load_profile
from tenprof.store.writer import PassWriter
from tests.conftest import DATA
from tests.helpers import findings_of, recording

WRAPPER = """
async_compile = AsyncCompile()


# kernel path: /tmp/torchinductor_u/ab/cabc.py
# Topologically Sorted Source Nodes: [h], Original ATen: [aten.gelu]
# Source node to ATen node mapping:
#   h => add, erf, mul
triton_poi_fused_gelu_0 = async_compile.triton('triton_poi_fused_gelu_0', '''
@triton.jit
def triton_poi_fused_gelu_0(in_ptr0, out_ptr0, xnumel, XBLOCK : tl.constexpr):
    # ORIGIN:
    # call_function aten.mul.Tensor seq_nr:16
    #   File "/home/u/model.py", line 10, in forward\\\\    h = gelu(x)\\\\
    # END ORIGIN
    # ORIGIN:
    # call_function aten.erf.default seq_nr:16
    #   File "/site-packages/tenprof/capture/callsites.py", line 186, in __torch_function__
    # END ORIGIN
    x0 = xindex
''', device_str='cuda')
"""


def test_wrapper_comments_give_ops_lines_and_the_generated_file() -> None:
    (kernel,) = parse_wrapper(WRAPPER, "/tmp/wrapper.py")
    assert kernel.kernel == "triton_poi_fused_gelu_0"
    assert kernel.aten_ops == ("aten::gelu", "aten::mul", "aten::erf")  # Original ATen first
    assert kernel.lines == ("/home/u/model.py:10",)  # tenprof's own recorder frame is dropped
    assert kernel.generated_file == "/tmp/torchinductor_u/ab/cabc.py"
    assert (kernel.source, kernel.confidence) == ("inductor-comments", "high")
    assert kernel.counts == (-1, -1, -1)  # no inductor_meta in this snippet


def test_without_origin_blocks_the_kept_stack_traces_give_each_uses_line() -> None:
    # a run without --compiled-lines: no ORIGIN blocks; Inductor's provenance tracking kept the kernel's
    # stack traces, one per place the merged kernel is used (capture/compiled_code.py)
    plain = "\n".join(line for line in WRAPPER.splitlines() if "ORIGIN" not in line and "File " not in line)
    plain = plain.replace("    # call_function aten.mul.Tensor seq_nr:16\n", "").replace(
        "    # call_function aten.erf.default seq_nr:16\n", ""
    )
    traces = {
        "triton_poi_fused_gelu_0": [
            ["/home/u/train.py:40", "/home/u/model.py:10"],
            ["/home/u/train.py:40", "/home/u/model.py:14", "/site-packages/tenprof/capture/callsites.py:186"],
        ]
    }
    (kernel,) = parse_wrapper(plain, "/tmp/wrapper.py", traces)
    assert kernel.aten_ops == ("aten::gelu",)  # the wrapper's comment still names the ops
    assert kernel.lines == ("/home/u/model.py:10", "/home/u/model.py:14")  # innermost, tenprof's dropped
    assert parse_wrapper(plain, "/tmp/wrapper.py")[0].lines == ()  # nothing kept: no lines
    rows = [{"path": "/tmp/wrapper.py", "source": plain, "stack_traces": traces}]
    table = build_compiled_table(rows, ["triton_poi_fused_gelu_0"])
    assert table.column("lines").to_pylist() == ["/home/u/model.py:10;/home/u/model.py:14"]


def test_only_the_debug_handles_a_wrapper_names_give_its_kernels_lines() -> None:
    # Inductor keys the traces by debug handle, and a lazily compiled backward graph's text also holds the
    # kernels earlier backward graphs made (seen on torch 2.13 with a graph break): a kernel of the same name
    # there is another graph's, which the wrapper's "[Provenance debug handles]" comments tell apart
    plain = "\n".join(line for line in WRAPPER.splitlines() if "ORIGIN" not in line and "File " not in line)
    plain += "\n    # [Provenance debug handles] triton_poi_fused_gelu_0:4\n"
    traces = {
        "triton_poi_fused_gelu_0:1": [["/home/u/train.py:40", "/home/u/block_a.py:7"]],  # an earlier graph's
        "triton_poi_fused_gelu_0:4": [["/home/u/train.py:40", "/home/u/block_b.py:21"]],
    }
    (kernel,) = parse_wrapper(plain, "/tmp/wrapper.py", traces)
    assert kernel.lines == ("/home/u/block_b.py:21",)
    # a wrapper that names handles of other kernels only: this kernel keeps every trace of its name
    others = plain.replace("triton_poi_fused_gelu_0:4", "triton_poi_fused_mul_1:5")
    assert parse_wrapper(others, "/tmp/wrapper.py", traces)[0].lines == (
        "/home/u/block_a.py:7",
        "/home/u/block_b.py:21",
    )
    # a wrapper that names no handles (no such comments): every trace of that kernel name
    unnamed = plain.replace("[Provenance debug handles]", "")
    assert parse_wrapper(unnamed, "/tmp/wrapper.py", traces)[0].lines == (
        "/home/u/block_a.py:7",
        "/home/u/block_b.py:21",
    )


def test_kernel_name_fallback() -> None:
    guess = from_kernel_name("triton_poi_fused_add_gelu_mul_3")
    assert guess is not None and guess.aten_ops == ("aten::add", "aten::gelu", "aten::mul")
    assert guess.confidence == "low"
    assert from_kernel_name("void at::native::vectorized_elementwise_kernel<4>") is None


def _rebuilt(tmp: Path, name: str) -> Profile:
    """The recording with its compiled_kernels table rebuilt from the kept generated code."""
    target = tmp / name
    shutil.copytree(DATA / "compiled" / name, target)
    timeline = target / "timeline"
    names = pq.read_table(timeline / "kernels.parquet", columns=["name"]).column("name").to_pylist()
    writer = PassWriter(target, "timeline")
    for table in timeline.glob("*.parquet"):
        shutil.copy(table, writer.tmp_dir / table.name)
    shutil.copytree(timeline / "raw", writer.tmp_dir / "raw")
    code = read_compiled_code(timeline / "raw" / "compiled_code.json.gz")
    assert code, "the recording keeps the generated wrappers"
    writer.write_table("compiled_kernels", build_compiled_table(code, names))
    writer.commit()
    return load_profile(target)


@pytest.mark.parametrize("name", ["mlp_default", "gpt2_reduce_overhead"])
def test_at_least_95_percent_of_kernel_time_is_attributed(tmp_path: Path, name: str) -> None:
    report = compiled_report(_rebuilt(tmp_path, name))
    assert report is not None and report.compiled_ns > 0.5 * report.kernel_ns
    assert report.all_with_ops_ns >= 0.95 * report.kernel_ns
    assert report.all_with_lines_ns >= 0.95 * report.kernel_ns
    triton = [r for r in report.rows if r.kernel.startswith("triton_")]
    assert triton and all(r.source == "inductor-comments" and r.aten_ops and r.lines for r in triton)


def test_mlp_kernels_point_at_the_lines_of_the_block(tmp_path: Path) -> None:
    report = compiled_report(_rebuilt(tmp_path, "mlp_default"))
    assert report is not None
    source = (DATA.parents[1] / "examples" / "compiled_train.py").read_text().splitlines()
    forward = {
        f"examples/compiled_train.py:{i}" for i, text in enumerate(source, 1) if "gelu" in text or "norm(x" in text
    }
    lines = {line[line.find("examples/") :] for r in report.rows for line in r.lines.split(";") if "examples/" in line}
    assert lines & forward
    gelu = [r for r in report.rows if "gelu" in r.kernel]
    assert gelu and all("aten::gelu" in r.aten_ops for r in gelu)
    for r in (r for r in report.rows if r.kernel.startswith("triton_")):  # launch metadata
        assert r.kind in ("pointwise", "reduction", "persistent_reduction") and "load(s)" in r.memory_ops
        assert "warps" in r.launch and "grid" in r.launch


def test_cuda_graph_replays_get_the_op_they_ran_under_when_captured(tmp_path: Path) -> None:
    report = compiled_report(_rebuilt(tmp_path, "gpt2_reduce_overhead"))
    assert report is not None
    replayed = [r for r in report.rows if r.source == "capture"]
    assert replayed and any(
        r.kernel.startswith("nvjet") and r.aten_ops in ("aten::mm", "aten::addmm") for r in replayed
    )
    attention = [r for r in report.rows if "sdpa" in r.kernel]
    assert attention and all("attention" in r.aten_ops for r in attention)


def test_compile_finding_does_not_advise_cuda_graphs_to_a_run_that_replays_them() -> None:

    profile = recording(DATA / "compiled" / "gpt2_reduce_overhead")
    finding = next(f for f in findings_of(profile) if f.id == "torch-compile")
    assert finding.numbers["replays_cuda_graphs"] == 1.0
    assert "already replay CUDA graphs" in finding.fix and "mode='reduce-overhead'" not in finding.fix


def test_generated_code_can_be_exported_from_the_profile(tmp_path: Path) -> None:
    from tenprof.cli.main import main

    out = tmp_path / "gen"
    assert main(["export", str(DATA / "compiled" / "mlp_default"), "--format", "generated-code", "-o", str(out)]) == 0
    written = {p.name: p.read_text() for p in out.glob("*.py")}
    assert written and any("triton_poi_fused_gelu" in text for text in written.values())
    assert main(["export", str(DATA / "gpt2"), "--format", "generated-code", "-o", str(tmp_path / "none")]) == 2


def test_compile_time_against_the_steady_step() -> None:

    profile = recording(DATA / "compiled" / "gpt2_reduce_overhead")
    finding = next(f for f in findings_of(profile) if f.id == "torch-compile-time")
    compile_ns = profile.sql("select sum(duration_ns) from ops where name = 'entire_frame_compile'").column(0)[0]
    assert finding.numbers["compile_ns"] == pytest.approx(float(compile_ns.as_py()))
    assert finding.numbers["steps_worth"] > 100 and finding.once
    # the step that compiled and recorded its CUDA graphs is left out of the steady-state checks, and said so
    from tenprof.analyses.findings import not_judged

    assert any("torch.compile compiled or CUDA graphs were recorded" in note for note in not_judged(profile))
    mlp = recording(DATA / "compiled" / "mlp_default")
    assert any(f.id == "torch-compile-time" for f in findings_of(mlp)) == (
        mlp.sql("select sum(duration_ns) from ops where name = 'entire_frame_compile'").column(0)[0].as_py() > 0
    )


def test_embedded_kernel_source_and_extern_gemm_calls() -> None:
    from tenprof.core.generated_code import embedded_kernels, extern_calls

    start, end = embedded_kernels(WRAPPER)["triton_poi_fused_gelu_0"]
    lines = WRAPPER[start:end].split("\n")
    assert lines[0] == "" and lines[2].startswith("def triton_poi_fused_gelu_0(")  # the file starts with a newline
    calls = "extern_kernels.mm(buf9, x)\n        extern_kernels.bias_addmm(b, buf1, w)\nextern_kernels.bmm(a, b)"
    assert extern_calls(calls) == ["aten::mm", "aten::addmm", "aten::bmm"]


def test_damaged_kept_code_degrades_the_report_and_fails_the_export_clearly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tenprof.cli.main import main
    from tenprof.importers.compiled_import import write_compiled_kernels

    target = tmp_path / "mlp"
    shutil.copytree(DATA / "compiled" / "mlp_default", target)
    code = target / "timeline" / "raw" / "compiled_code.json.gz"
    code.write_bytes(code.read_bytes()[:100])  # cut short
    from tenprof.analyses.kernels.generated_source import GeneratedSource

    profile = load_profile(target)
    report = compiled_report(profile)  # built from the tables: the damaged raw file is not needed
    assert report is not None and report.ops_share == 1.0
    assert (
        GeneratedSource(profile).line("/tmp/torchinductor_u/o3/c" + "a" * 51 + ".py", 2, "triton_poi_fused_gelu_0")
        == ""
    )
    assert main(["export", str(target), "--format", "generated-code", "-o", str(tmp_path / "gen")]) != 0
    assert "damaged" in capsys.readouterr().err
    writer = PassWriter(target, "timeline")
    shutil.copy(target / "timeline" / "kernels.parquet", writer.tmp_dir / "kernels.parquet")
    warning = write_compiled_kernels(writer, code, {})
    writer.abandon()
    assert "kept code is not used" in warning and "damaged" in warning


def test_compiled_time_says_what_inductor_generated_and_what_is_a_library_call() -> None:
    # GPT-2's compiled regions call cuBLAS for their GEMMs: those are not generated code.
    report = compiled_report(recording(DATA / "compiled" / "gpt2_default"))
    assert report is not None and 0 < report.generated_ns < report.compiled_ns
    library = {r.kernel for r in report.rows if r.source in ("timeline (aten op)", "capture", "wrapper GEMM calls")}
    assert any("gemm" in k.lower() or "nvjet" in k.lower() for k in library)
    assert all(r.kernel.startswith("triton") for r in report.rows if r.source == "inductor-comments")


def test_launch_bound_does_not_advise_cuda_graphs_to_a_run_that_replays_them() -> None:
    # The advice launch-bound gives (its `fix`) for each recording: on the one that replays CUDA graphs
    # (mode="reduce-overhead") launch-bound itself does not fire any more (torch-compile's dispatch takes the
    # GPU's idle time first), so the advice is asked of the check directly.
    from tenprof.analyses.findings import launch_bound
    from tenprof.analyses.findings.context import Context
    from tenprof.analyses.findings.thresholds import Thresholds

    replaying = launch_bound.advice(Context(recording(DATA / "compiled" / "gpt2_reduce_overhead"), Thresholds()))
    assert "already replay CUDA graphs" in replaying and "reduce-overhead" not in replaying
    eager = next(f for f in findings_of(recording(DATA / "compiled" / "gpt2_default")) if f.id == "launch-bound")
    assert "mode='reduce-overhead'" in eager.fix
