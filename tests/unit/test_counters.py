"""The counters pass on real GPU recordings (tests/data/counters/*: timeline + counters made by tenprof
with Nsight Compute on an H200; the report already read into plain columns), rebuilt with this tenprof;
and the rules (kernel names, verdicts, errors) on their own."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import pytest

from tenprof.analyses.counters import OperatorsReport, operators_report
from tenprof.analyses.roofline import occupancy_limiter, verdict
from tenprof.cli.main import main
from tenprof.importers.counters_import import base_name, build_counters_pass
from tenprof.store.profile import Profile, load_profile
from tenprof.store.writer import PassWriter
from tests.conftest import DATA

CASES = ("matmul", "mlp")


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Profile]:
    root = tmp_path_factory.mktemp("counters")
    out = {}
    for case in CASES:
        target = root / case
        shutil.copytree(DATA / "counters" / case, target)
        timeline = load_profile(target)
        raw = target / "counters" / "raw"
        writer = PassWriter(target, "counters")
        shutil.copytree(raw, writer.tmp_dir / "raw")
        build_counters_pass(
            writer,
            raw / "counters.json.gz",
            raw / "counters_ops.json.gz",
            {"kernels": timeline.table("kernels"), "ops": timeline.table("ops")},
        )
        writer.commit()
        out[case] = load_profile(target)
    return out


def test_every_replay_ran_inside_a_marked_op(recorded: dict[str, Profile]) -> None:
    for profile in recorded.values():
        metrics = profile.table("kernel_metrics").to_pylist()
        sigs = {r["signature_id"]: r for r in profile.table("counter_signatures").to_pylist()}
        assert metrics
        for row in metrics:
            assert row["signature_id"] in sigs and row["op"] == sigs[row["signature_id"]]["op"]
            assert row["duration_ns"] > 0 and row["grid_size"] > 0 and row["block_size"] > 0
        # one replay per kernel of a signature's first op instance: far fewer replays than launches
        assert len(metrics) < profile.table("kernels").num_rows


def test_duplicates_get_the_representatives_metrics(recorded: dict[str, Profile]) -> None:
    mlp = recorded["mlp"]
    links = mlp.table("kernel_counters")
    assert links.num_rows == mlp.table("kernels").num_rows
    matched = links.column("replay_id").to_numpy() >= 0
    assert matched.all()  # 533 launches, 16 replays
    methods = set(links.column("method").to_pylist())
    assert "signature" in methods
    # the 64 clamp_min launches (relu) all carry one replay's metrics
    report = operators_report(mlp)
    assert isinstance(report, OperatorsReport)
    relu = next(o for o in report.operators if o.op == "aten::clamp_min")
    assert relu.calls == 64 and relu.aggregated.launches == 64 and len(relu.kernels) == 1


def test_operator_aggregation_sums_per_launch_metrics(recorded: dict[str, Profile]) -> None:
    profile = recorded["matmul"]
    report = operators_report(profile)
    assert report is not None
    mm = next(o for o in report.operators if o.op == "aten::mm")
    assert mm.calls == 3 and mm.line.endswith("matmul_add.py:35")
    (kernel,) = mm.kernels
    assert kernel.launches == 3 and kernel.method == "signature"
    dram = kernel.metrics["dram_read_bytes"] + kernel.metrics["dram_write_bytes"]
    assert math.isclose(mm.aggregated.dram_bytes, 3 * dram)
    kernel_time = (
        profile.sql(
            "select sum(k.duration_ns) as t from kernels k join ops o on k.op_id = o.op_id where o.name = 'aten::mm'"
        )
        .column(0)[0]
        .as_py()
    )
    assert mm.aggregated.time_ns == kernel_time
    assert mm.aggregated.sm_throughput_pct == pytest.approx(kernel.metrics["sm_throughput_pct"])
    # what matched nothing is listed with its reason, never dropped
    launches = sum(o.aggregated.launches for o in report.operators) + sum(
        u.launches for u in report.unattributed_kernels
    )
    assert launches == profile.table("kernels").num_rows


def test_export_operators_json_validates(recorded: dict[str, Profile], tmp_path: Path) -> None:
    target = tmp_path / "operators.json"
    assert main(["export", str(recorded["mlp"].directory), "-o", str(target)]) == 0
    report = OperatorsReport.model_validate_json(target.read_text())
    assert report.operators[0].kernels and report.operators[0].aggregated.verdict


def test_report_prints_the_counters_section(recorded: dict[str, Profile], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(recorded["matmul"].directory)]) == 0
    out = capsys.readouterr().out
    assert "Hardware metrics per operator" in out and "aten::mm" in out and "got no metrics" in out


def test_kernel_names_compare_by_function_name() -> None:
    assert base_name(
        "void at::native::vectorized_elementwise_kernel<4, add<float>, std::array<char*, 3ul> >(int, add)"
    ) == ("vectorized_elementwise_kernel")
    assert base_name("void at::native::(anonymous namespace)::reduce_kernel<512, 1>(at::native::ReduceOp)") == (
        "reduce_kernel"
    )
    assert base_name("nvjet_sm90_tst_64x48_64x15_2x4_h_bz_NNT") == "nvjet_sm90_tst_64x48_64x15_2x4_h_bz_NNT"


def test_roofline_verdicts() -> None:
    assert verdict(2_000, 90, 90, 0, 90) == "launch-bound"
    assert verdict(50_000, 80, 30, 0, 50) == "compute-bound"
    assert verdict(50_000, 10, 5, 85, 50) == "compute-bound"  # tensor cores near peak
    assert verdict(50_000, 20, 85, 0, 50) == "memory-bound"
    assert verdict(50_000, 20, 30, 0, 12) == "occupancy-bound"
    assert verdict(50_000, 20, 30, 0, 70) == "latency-bound"
    assert occupancy_limiter({"registers": 2, "shared_mem": 8, "warps": 4, "blocks": 32}) == "registers"
    assert occupancy_limiter({}) == ""


def test_missing_ncu_and_missing_reader_are_clear(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "s.py"
    script.write_text("print('hi')\n")
    assert main(["run", "--passes", "timeline,counters", "--ncu", str(tmp_path / "nope"), str(script)]) == 2
    assert "--ncu" in capsys.readouterr().err
    report = tmp_path / "r.ncu-rep"
    report.write_bytes(b"not a report")
    code = main(["import-ncu", str(report), "-o", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and "pip install ncu-report" in err


def test_hardware_findings(recorded: dict[str, Profile]) -> None:
    from tenprof.analyses.findings import find_all

    found = find_all(recorded["mlp"])
    # fp32 GEMMs of the MLP run on the FMA pipes (sm80_xmma_gemm_f32f32): each op named, with the line
    gemms = [f for f in found if f.id == "gemm-without-tensor-cores"]
    assert {f.title.split()[0] for f in gemms} == {"aten::mm", "aten::addmm"}
    assert all(f.where == ["examples/small_mlp.py:36"] and f.numbers["tensor_pipe_pct"] < 5 for f in gemms)
    # tiny launch-bound kernels are not blamed on registers
    assert "register-limited" not in {f.id for f in found}
    matmul = {f.id for f in find_all(recorded["matmul"])}
    assert "gemm-without-tensor-cores" not in matmul  # bf16 GEMM on tensor cores (nvjet)


def test_a_report_made_without_tenprof_groups_by_kernel(tmp_path: Path) -> None:
    """What import-ncu builds from a user's report: no NVTX op ranges, so each kernel name is its own row."""
    from tenprof.importers.counters_import import build_counter_tables
    from tenprof.store.meta import Meta, PassStatus, write_meta

    columns = {
        "kernels": {
            "replay_id": [0, 1, 2],
            "name": ["gemm_kernel", "relu_kernel", "relu_kernel"],
            "demangled": ["", "", ""],
            "nvtx": [[], [], []],
            "metrics": [
                {"gpu__time_duration.sum": 40_000.0, "sm__throughput.avg.pct_of_peak_sustained_elapsed": 85.0},
                {
                    "gpu__time_duration.sum": 9_000.0,
                    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed": 90.0,
                },
                {
                    "gpu__time_duration.sum": 9_000.0,
                    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed": 88.0,
                },
            ],
        }
    }
    tables, result = build_counter_tables(columns, None, None)
    assert result.replays == 3 and not result.warnings
    writer = PassWriter(tmp_path, "counters")
    for name, table in tables.items():
        writer.write_table(name, table)
    writer.commit()
    meta = Meta(source="import-ncu")
    meta.passes["counters"] = PassStatus(state="complete")
    write_meta(tmp_path, meta)
    report = operators_report(load_profile(tmp_path))
    assert report is not None
    rows = {o.op: o for o in report.operators}
    assert set(rows) == {"(no op) gemm_kernel", "(no op) relu_kernel"}
    assert rows["(no op) relu_kernel"].calls == 2 and rows["(no op) relu_kernel"].aggregated.verdict == "memory-bound"
    assert rows["(no op) gemm_kernel"].aggregated.verdict == "compute-bound"
