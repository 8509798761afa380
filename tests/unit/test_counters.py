"""The counters pass on real GPU recordings (tests/data/counters/*: timeline + counters made by tenprof
with Nsight Compute on an H200; the report already read into plain columns), rebuilt with this tenprof;
and the rules (kernel names, verdicts, errors) on their own."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tenprof.analyses.kernels.counters import OperatorsReport, operators_report
from tenprof.analyses.kernels.replays import judged_replays
from tenprof.analyses.kernels.roofline import RooflineLimits, occupancy_limiter, verdict
from tenprof.cli.main import main
from tenprof.core.kernel_names import base_name
from tenprof.importers.counters_import import build_counters_pass
from tenprof.store.profile import Profile, load_profile
from tenprof.store.writer import PassWriter
from tests.conftest import DATA
from tests.helpers import findings_of, recording

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


# Recordings imported before verdicts were judged at report time: their kernel_metrics still hold the
# `verdict` and `occupancy_limiter` the importer stored then, with the default limits.
STORED_VERDICTS = ("counters/matmul", "counters/mlp", "stalls/mlp", "stalls/imported", "compiled/mlp_stalls")


@pytest.mark.parametrize("case", STORED_VERDICTS)
def test_judged_verdicts_equal_the_ones_old_imports_stored(case: str) -> None:
    profile = recording(DATA / case)  # read as recorded, not imported again
    path = DATA / case / "counters" / "kernel_metrics.parquet"
    stored = pq.read_table(path, columns=["replay_id", "verdict", "occupancy_limiter"]).to_pylist()
    assert stored and "verdict" not in profile.table("kernel_metrics").schema.names  # the old column is not read
    # The old import took an occupancy ncu did not measure (a report made without the Occupancy section,
    # stalls/imported) as 0% and called the kernel occupancy-bound; unmeasured, it is "below peak" now.
    unmeasured = {
        r["replay_id"]
        for r in pq.read_table(path, columns=["replay_id", "achieved_occupancy_pct"]).to_pylist()
        if r["achieved_occupancy_pct"] is None or math.isnan(r["achieved_occupancy_pct"])
    }
    for r in stored:
        if r["replay_id"] in unmeasured and r["verdict"] == "occupancy-bound":
            r["verdict"] = "below peak"
    judged = judged_replays(profile)
    assert {r["replay_id"]: (r["verdict"], r["occupancy_limiter"]) for r in stored} == {
        rid: (row["verdict"], row["occupancy_limiter"]) for rid, row in judged.items()
    }
    assert bool(unmeasured) == (case == "stalls/imported")
    report = operators_report(profile)
    assert report is not None
    old = {r["replay_id"]: r for r in stored}
    for kernel in (k for o in report.operators for k in o.kernels):
        assert (kernel.verdict, kernel.occupancy_limiter) == (
            old[kernel.replay_id]["verdict"],
            old[kernel.replay_id]["occupancy_limiter"],
        )


def test_a_new_import_stores_no_verdict(recorded: dict[str, Profile]) -> None:
    for profile in recorded.values():
        names = pq.read_schema(profile.directory / "counters" / "kernel_metrics.parquet").names
        assert "verdict" not in names and "occupancy_limiter" not in names
        assert all(row["verdict"] for row in judged_replays(profile).values())


def test_changed_limits_change_the_verdicts_without_importing_again() -> None:
    profile = recording(DATA / "counters" / "mlp")
    before = judged_replays(profile)
    launch_bound = {rid for rid, row in before.items() if row["verdict"] == "launch-bound"}
    assert launch_bound and len(launch_bound) < len(before)
    # No kernel is too short to judge: the short ones get the verdict of the other rules.
    after = judged_replays(profile, RooflineLimits(launch_ns=0.0))
    assert not any(row["verdict"] == "launch-bound" for row in after.values())
    assert all(after[rid]["verdict"] == before[rid]["verdict"] for rid in set(before) - launch_bound)
    # The operators report (and what reads it: the section, the export, the findings) follows.
    default = operators_report(profile)
    relaxed = operators_report(profile, RooflineLimits(launch_ns=0.0, low_occupancy_pct=0.0))
    assert default is not None and relaxed is not None
    verdicts = {o.aggregated.verdict for o in default.operators}
    assert {"launch-bound", "occupancy-bound"} <= verdicts
    assert {o.aggregated.verdict for o in relaxed.operators}.isdisjoint({"launch-bound", "occupancy-bound"})
    kernels = {k.verdict for o in relaxed.operators for k in o.kernels}
    assert kernels.isdisjoint({"launch-bound", "occupancy-bound"})


def test_kernel_names_compare_by_function_name() -> None:
    assert base_name(
        "void at::native::vectorized_elementwise_kernel<4, add<float>, std::array<char*, 3ul> >(int, add)"
    ) == ("vectorized_elementwise_kernel")
    assert base_name("void at::native::(anonymous namespace)::reduce_kernel<512, 1>(at::native::ReduceOp)") == (
        "reduce_kernel"
    )
    assert base_name("nvjet_sm90_tst_64x48_64x15_2x4_h_bz_NNT") == "nvjet_sm90_tst_64x48_64x15_2x4_h_bz_NNT"


def test_roofline_verdicts() -> None:
    # Hand-made metric rows at and on either side of each threshold, with the verdict written out (the
    # thresholds as documented in analyses/kernels/roofline.py: shorter than 5 us is launch-bound; 60% of peak
    # is near peak; fewer than 30% of warp slots active is low occupancy), not read from the module.
    rows = [
        # duration_ns, sm %, memory %, tensor pipe %, achieved occupancy %, verdict
        (4_999, 90, 10, 0, 90, "launch-bound"),  # just under 5 us: launching costs as much as running
        (5_000, 90, 10, 0, 90, "compute-bound"),  # at 5 us it is judged on its throughput
        (4_999, 10, 10, 0, 10, "launch-bound"),  # the first rule wins over low occupancy
        (50_000, 60, 10, 0, 90, "compute-bound"),  # SM exactly at 60%
        (50_000, 59.9, 10, 0, 90, "latency-bound"),  # just under: nothing near peak, warps available
        (50_000, 10, 10, 60, 90, "compute-bound"),  # the tensor-core pipe at 60% counts as the SM
        (50_000, 10, 10, 59.9, 90, "latency-bound"),
        (50_000, 70, 70, 0, 90, "compute-bound"),  # both near peak and equal: compute wins the tie
        (50_000, 70, 70.1, 0, 90, "memory-bound"),  # memory busier than the SM
        (50_000, 10, 60, 0, 90, "memory-bound"),  # memory exactly at 60%
        (50_000, 10, 59.9, 0, 90, "latency-bound"),
        (50_000, 80, 10, 0, 10, "compute-bound"),  # near peak despite low occupancy
        (50_000, 10, 10, 0, 29.9, "occupancy-bound"),  # just under 30% of warp slots
        (50_000, 10, 10, 0, 30, "latency-bound"),  # at 30% occupancy is not the limit
        (50_000, math.nan, 70, math.nan, 90, "memory-bound"),  # SM metrics missing: judged on memory
    ]
    for duration_ns, sm, memory, tensor, occupancy, expected in rows:
        got = verdict(duration_ns, sm, memory, tensor, occupancy)
        assert got == expected, (duration_ns, sm, memory, tensor, occupancy)
    # The limits are parameters: the same metrics judged under others.
    assert verdict(4_999, 90, 10, 0, 90, RooflineLimits(launch_ns=1_000)) == "compute-bound"
    assert verdict(50_000, 50, 10, 0, 90, RooflineLimits(bound_pct=50)) == "compute-bound"
    assert verdict(50_000, 10, 10, 0, 35, RooflineLimits(low_occupancy_pct=40)) == "occupancy-bound"
    assert occupancy_limiter({"registers": 2, "shared_mem": 8, "warps": 4, "blocks": 32}) == "registers"
    assert occupancy_limiter({}) == ""


def test_hardware_findings(recorded: dict[str, Profile]) -> None:

    found = findings_of(recorded["mlp"])
    # fp32 GEMMs of the MLP run on the FMA pipes (sm80_xmma_gemm_f32f32): each op named, with the line
    gemms = [f for f in found if f.id == "gemm-without-tensor-cores"]
    assert {f.title.split()[0] for f in gemms} == {"aten::mm", "aten::addmm"}
    assert all(f.where == ["examples/small_mlp.py:36"] and f.numbers["tensor_pipe_pct"] < 5 for f in gemms)
    # tiny launch-bound kernels are not blamed on registers
    assert "register-limited" not in {f.id for f in found}
    matmul = {f.id for f in findings_of(recorded["matmul"])}
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


def test_a_metric_the_report_did_not_measure_raises_no_finding() -> None:
    # counters/mlp (fp32 MLP): cuBLAS runs mm and addmm on the FMA pipes, so the counters check finds GEMMs
    # without tensor cores. With the tensor-pipe and DRAM metrics not measured (NaN, as a report made
    # without those sections reads), no finding may stand on them, and none may print them as 0%.
    import pyarrow as pa
    import pyarrow.compute as pc

    from tenprof.store.profile import with_tables

    profile = recording(DATA / "counters" / "mlp")
    ids = [f.id for f in findings_of(profile)]
    assert ids.count("gemm-without-tensor-cores") == 2
    metrics = profile.table("kernel_metrics")
    for column in ("tensor_pipe_pct", "dram_throughput_pct", "sm_throughput_pct"):
        nan = pa.array([float("nan")] * metrics.num_rows, type=metrics.schema.field(column).type)
        metrics = metrics.set_column(metrics.schema.get_field_index(column), column, nan)
    assert pc.all(pc.is_nan(metrics.column("tensor_pipe_pct"))).as_py()
    blind = with_tables(profile, {"kernel_metrics": metrics})
    found = findings_of(blind)
    assert not {"gemm-without-tensor-cores", "memory-bound-slow"} & {f.id for f in found}
    assert not any("SM 0%" in s or "DRAM 0%" in s for f in found for s in f.seen)
