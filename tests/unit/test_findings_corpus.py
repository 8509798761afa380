"""Every recording in tests/data, and torch.profiler traces imported here, through every check: the
properties that must hold whatever the workload (issue 17's corpus test).

- no finding costs nothing (a cost of zero is not worth reading);
- the per-step costs of all findings never add up to more than the analysed window (from the first
  analysed step's start to the later of its last step's end and the end of the GPU work it launched);
- the findings that charge GPU idle time never charge more than the steps had (one budget, the most
  specific cause first), and no two findings say the same thing.
Also the specific checks on real recordings: fp32 GEMMs without tensor cores on fp32 GPT-2 and never on
bf16 GPT-2; the final synchronize of a recording is not a sync in a loop.
"""

from __future__ import annotations

import pytest

from tenprof.analyses.findings.causes import GPU_TIME_FINDINGS, IDLE_CHARGERS, idle_budget_ns
from tenprof.analyses.findings.context import Context
from tenprof.analyses.findings.thresholds import Thresholds
from tenprof.cli.main import main
from tenprof.renderers.finding_text import rendered
from tenprof.store.profile import Profile, load_profile
from tests.conftest import DATA
from tests.helpers import findings_of, recording

MEMORY_FINDINGS = ("out-of-memory", "memory-growth", "memory-fragmentation")

RECORDINGS = sorted(
    str(p.parent.relative_to(DATA))
    for p in DATA.rglob("meta.json")
    if (p.parent / "timeline" / "kernels.parquet").exists()
)
TORCH_TRACES = sorted(p.name.removesuffix(".json.gz") for p in (DATA / "torch_traces").glob("*.json.gz"))


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Profile]:
    out = tmp_path_factory.mktemp("torch_traces")
    profiles = {}
    for name in TORCH_TRACES:
        assert main(["import", str(DATA / "torch_traces" / f"{name}.json.gz"), "-o", str(out / name)]) == 0
        profiles[name] = load_profile(out / name)
    return profiles


def _check_properties(profile: Profile) -> None:
    found = findings_of(profile)
    ctx = Context(profile, Thresholds())
    # every finding costs time, but one that saves GPU time in a step the host bounds (kept, last, for what it
    # would save once the host is faster) and the memory findings (urgent, or what they would free)
    assert all(
        f.cost_ns > 0
        or (f.id in GPU_TIME_FINDINGS and f.numbers["gpu_time_saved_ns"] > 0)
        or (f.id in MEMORY_FINDINGS and (f.urgent or f.numbers.get("bytes_saved", 0) > 0))
        for f in found
    ), [(f.id, f.cost_ns) for f in found]
    _, hi = ctx.gpu_window
    start = int(ctx.step_start[0])
    end = max(int(ctx.step_end[-1]), hi)
    window = end - start
    recurring = sum(f.cost_ns for f in found if not f.once)
    assert recurring <= window * 1.01, [(f.id, f.cost_ns) for f in found] + [("window", window)]
    idle = sum(f.cost_ns for f in found if f.id in IDLE_CHARGERS and not f.once)
    assert idle <= idle_budget_ns(ctx) + 1
    said = [(f.id, f.title) for f in found]
    assert len(said) == len(set(said))
    # Findings carry their values as numbers (core.quantities) in the title and evidence only, and the
    # renderer writes every one of them out.
    for f in found:
        assert not any("⟦" in s for s in (f.why, f.fix, *f.where)), f.id
        shown = rendered(f)
        assert not any("⟦" in s for s in (shown.title, *shown.seen)), f.id


@pytest.mark.parametrize("case", RECORDINGS)
def test_findings_hold_on_every_recording(case: str) -> None:
    _check_properties(recording(DATA / case))


@pytest.mark.xdist_group("findings_corpus_imported")
def test_findings_hold_on_imported_torch_profiler_traces(imported: dict[str, Profile]) -> None:
    assert len(imported) >= 4
    for profile in imported.values():
        _check_properties(profile)


def test_fp32_gemms_named_from_kernel_names_on_gpt2() -> None:
    ids = {f.id: f for f in findings_of(recording(DATA / "overhead" / "gpt2_fp32"))}
    f = ids["gemm-without-tensor-cores"]
    assert f.numbers["share_of_gpu"] > 0.5 and "TF32" in f.fix and f.where
    assert "gemm-without-tensor-cores" not in {x.id for x in findings_of(recording(DATA / "gpt2"))}  # bf16


def test_fp32_gemm_cost_is_what_tf32_saved(rebuilt: dict[str, Profile]) -> None:
    # The trigger and its fix differ only in TF32: the check's cost is what TF32 would save (the GEMMs'
    # time less 1/7.5 of it); the fix took that much less GPU time per step, within 10%.
    bad = next(f for f in findings_of(rebuilt["finding_fp32_gemm"]) if f.id == "gemm-without-tensor-cores")
    per_step = {}
    for case in ("finding_fp32_gemm", "finding_fp32_gemm_fixed"):
        ctx = Context(rebuilt[case], Thresholds())
        k = rebuilt[case].table("kernels")
        inside = ctx.in_steps(ctx.kernel_launch_ns)
        per_step[case] = k.column("duration_ns").to_numpy()[inside].sum() / ctx.step_count
    saved = per_step["finding_fp32_gemm"] - per_step["finding_fp32_gemm_fixed"]
    cost = bad.cost_ns / Context(rebuilt["finding_fp32_gemm"], Thresholds()).step_count
    assert abs(cost - saved) <= 0.1 * saved


@pytest.mark.xdist_group("findings_corpus_imported")
def test_the_final_synchronize_of_a_recording_is_not_a_sync_in_the_loop(imported: dict[str, Profile]) -> None:
    # A torch.profiler trace of fp32_gemm.py without steps: its only synchronize is the one after the loop.
    for name in ("fp32_gemm", "fp32_gemm_stack"):
        assert "sync-in-loop" not in {f.id for f in findings_of(imported[name])}, name


def test_nested_compiled_regions_are_counted_once() -> None:
    # GPT-2 compiled with graph breaks: regions run inside regions; only the outermost are summed.
    f = next(x for x in findings_of(recording(DATA / "compiled" / "gpt2_default")) if x.id == "torch-compile")
    assert f.numbers["recorded_region_cpu_ns"] < 75e6  # 2 steps; the nested sum was 136.5 ms


@pytest.mark.xdist_group("findings_corpus_imported")
def test_steps_are_inferred_where_none_were_marked(imported: dict[str, Profile]) -> None:
    # conv_block.py under plain torch.profiler: 6 iterations (1 warm-up, 5 steps), none marked. Judged as
    # one step, start-up (building the block, cuDNN's first calls) read as GPU idle "in every step" and
    # the parameters' copies to the GPU as syncs in the loop; judged per inferred iteration, neither.
    from tenprof.analyses.findings import not_judged
    from tenprof.analyses.timeline.summary import summarize

    for name in ("conv_block", "conv_block_stack"):
        profile = imported[name]
        ctx = Context(profile, Thresholds())
        assert ctx.inferred is not None and len(ctx.inferred.starts) == 6
        assert ctx.inferred.marker.startswith("aten::conv2d")
        ids = [f.id for f in findings_of(profile)]
        assert "idle-gaps" not in ids and "sync-in-loop" not in ids
        assert ids[-1] == "cold-start"  # judged on the first iteration, as the one-off it is
        assert any("iterations of the loop were inferred" in n for n in not_judged(profile))
        assert summarize(profile).inferred_steps == 6


@pytest.mark.xdist_group("findings_corpus_imported")
def test_a_call_made_twice_per_iteration_does_not_halve_the_iterations(imported: dict[str, Profile]) -> None:
    # fp32_gemm.py: `(x @ w @ w).relu_()` 5 times; both matmuls are one key (one line, or no stack), the
    # only once-per-iteration call comes last, and the first (cold) matmul spans most of the recording.
    # Read per matmul, the loop had 10 half-iterations, the first 75 ms long.
    for name in ("fp32_gemm", "fp32_gemm_stack"):
        inferred = Context(imported[name], Thresholds()).inferred
        assert inferred is not None and len(inferred.starts) == 5, name
        assert inferred.marker.startswith("aten::matmul")
        assert inferred.keys == 2  # relu_ once, the matmul pair once


@pytest.mark.xdist_group("findings_corpus_imported")
def test_a_one_off_stall_is_one_off_without_marked_steps(imported: dict[str, Profile]) -> None:
    # slow_step.py under plain torch.profiler: no steps marked and no call once per step (8 x matmul,
    # relu_), so each matmul and relu_ reads as an iteration; the one holding torch.fft's first call is
    # far slower than the rest and is reported as such, not as a per-step cost.
    profile = imported["slow_step"]
    found = {f.id: f for f in findings_of(profile)}
    assert "slow-step" in found and not {"idle-gaps", "launch-bound", "sync-in-loop"} & set(found)
    assert any("aten::_fft_r2c" in s or "aten::abs" in s or "aten::mean" in s for s in found["slow-step"].seen)
    assert found["slow-step"].cost_ns > 10e6


@pytest.mark.xdist_group("findings_corpus_imported")
def test_the_memory_peak_is_reported_for_imported_traces(imported: dict[str, Profile]) -> None:
    from tenprof.analyses.timeline.summary import memory_peak

    profile = imported["conv_block_stack"]
    peak = memory_peak(profile)
    assert peak is not None and peak.device == "cuda:0"
    m = profile.table("memory")
    assert peak.allocated_bytes == max(m.column("total_allocated_bytes").to_pylist())
    assert peak.op and "conv_block.py" in peak.line and "starting at" in peak.line  # with_stack: a def line
    assert memory_peak(imported["conv_block"]) is None  # recorded without profile_memory
