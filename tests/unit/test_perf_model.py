"""The performance model on GPU recordings (tests/data): FLOPs counted once per op, GPT-2's FLOPs per step
against the 6 x parameters x tokens estimate, the speed-of-light finding on GPT-2's odd vocabulary and
silent on clean controls, unknown ops reported as unknown, and cards without peaks."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tenprof.analyses.findings import find_all
from tenprof.analyses.perf_model import perf_model
from tenprof.analyses.perf_model.gpu_peaks import peaks_for
from tenprof.store.profile import Profile, load_profile
from tests.conftest import DATA
from tests.helpers import findings_of, recording

# GPT-2 small (transformers.GPT2Config(): 12 layers, width 768, vocabulary 50257, 1024 positions), the
# output layer tied to the token embedding: 124,439,808 parameters. examples/gpt2_train.py: batch 8 x 256.
GPT2_PARAMETERS = 124_439_808
LAYERS, WIDTH, BATCH, SEQ = 12, 768, 8, 256


def _gpt2_step_flops() -> float:
    """6 x parameters x tokens (forward and backward of every weight), plus attention's two matrix
    products per layer, (QK^T and AV: 2 x 2 x B x S^2 x d forward), three times over for the backward."""
    tokens = BATCH * SEQ
    attention = 3 * LAYERS * 4 * BATCH * SEQ * SEQ * WIDTH
    return 6 * GPT2_PARAMETERS * tokens + attention


@pytest.fixture(scope="module")
def gpt2() -> Profile:
    return recording(DATA / "gpt2")


def test_gpt2_flops_per_step_match_six_n_t_plus_attention(gpt2: Profile) -> None:
    model = perf_model(gpt2)
    assert model is not None and model.mfu_pipe == "bf16"
    expected = _gpt2_step_flops()
    steady = model.steps[1:]
    assert len(steady) == 2
    for step in steady:
        assert step.flops == pytest.approx(expected, rel=0.10), (step.flops, expected)
    # the estimate leaves out the elementwise work and the embeddings' lookups: the count is a bit above
    assert all((step.flops or 0.0) >= expected * 0.99 for step in steady)
    assert model.mfu_percent is not None and 0 < model.mfu_percent < 100


def test_gpt2_bf16_recorded_with_tokens_clocks_and_values() -> None:
    """The H100 recording made with this version's capture (tests/data/gpt2_bf16): the tokens each step
    held (tenprof.step(tokens=...)), NVML's clock samples and the ops' recorded values; FLOPs per step
    within 1% of the estimate (the issue asks 10%), judged against the H100's measured peaks."""
    profile = recording(DATA / "gpt2_bf16")
    model = perf_model(profile)
    assert model is not None and model.peaks.startswith("H100 SXM: measured bf16")
    assert model.mfu_peak_tflops == pytest.approx(989.4)  # MFU: the datasheet's dense peak; SOL: the measured
    steady = [s for s in model.steps if s.step > 0]
    assert [s.tokens for s in steady] == [BATCH * SEQ] * len(steady) and len(steady) == 3
    for step in steady:
        assert step.flops == pytest.approx(_gpt2_step_flops(), rel=0.01)
        assert step.tokens_per_s == pytest.approx(BATCH * SEQ / step.duration_ns * 1e9)
        assert step.mfu_percent == pytest.approx(100 * (step.flops or 0) / (step.duration_ns * 1e-9 * 989.4e12))
    top = model.ops[0]  # the output layer's GEMM, judged against the measured bf16 peak
    assert top.speed.ideal_ns == pytest.approx((top.speed.flops or 0) / 776.1e12 * 1e9)
    assert model.tokens_per_s == pytest.approx(float(np.median([s.tokens_per_s for s in steady])))
    samples = profile.table("gpu_samples")
    assert samples.num_rows > 100 and max(samples.column("max_sm_clock_mhz").to_pylist()) == 1980.0
    values = profile.table("ops").column("input_values").to_pylist()
    assert sum(1 for v in values if v) > len(values) // 2
    # the steps run with the capture off have kernels but no ops: left out, not read as unmodelled
    assert model.modelled_percent > 75


def test_each_matrix_product_is_counted_once(gpt2: Profile) -> None:
    """Autocast records addmm twice (as called with fp32 inputs, and inside it as run in bf16): one owns
    the work. Per step, the linear layers' FLOPs are exactly 2 x M x N x K each."""
    model = perf_model(gpt2)
    assert model is not None
    addmm = [r for r in model.ops if r.name == "aten::addmm"]
    assert addmm and all(r.dtype == "bfloat16" and r.pipe == "bf16" for r in addmm)
    tokens = BATCH * SEQ
    # per layer, forward: c_attn 768x2304, attn c_proj 768x768, c_fc 768x3072, mlp c_proj 3072x768
    per_step = LAYERS * 2 * tokens * WIDTH * (3 * WIDTH + WIDTH + 4 * WIDTH + 4 * WIDTH)
    steps = len(model.steps)
    assert sum(r.speed.flops or 0.0 for r in addmm) == per_step * steps


def test_ops_without_a_formula_are_unknown_not_zero(gpt2: Profile) -> None:
    model = perf_model(gpt2)
    assert model is not None
    unknown = {u.name: u for u in model.unknown}
    # AdamW's foreach kernels have no formula: their kernel time is reported as not modelled
    assert "aten::_foreach_addcdiv_" in unknown and unknown["aten::_foreach_addcdiv_"].gpu_ns > 0
    assert not any(r.name == "aten::_foreach_addcdiv_" for r in model.ops)
    assert 0 < model.modelled_percent < 100
    total = sum(u.gpu_ns for u in model.unknown) + model.total.gpu_ns
    assert total == model.kernel_ns


def test_rates_and_speed_of_light_are_consistent(gpt2: Profile) -> None:
    model = perf_model(gpt2)
    assert model is not None
    peaks = peaks_for("NVIDIA H200")
    assert peaks is not None
    for row in model.ops[:10]:
        s = row.speed
        assert s.flops is not None and s.gpu_ns > 0
        assert s.tflops_per_s == pytest.approx(s.flops / s.gpu_ns / 1e3)
        if s.ideal_ns is not None and row.pipe:
            peak = peaks.flops_per_s(row.pipe)
            assert peak is not None
            assert s.ideal_ns >= s.flops / peak[0] * 1e9 * (1 - 1e-9)
            assert s.sol_percent == pytest.approx(100 * s.ideal_ns / s.gpu_ns)


def test_odd_vocabulary_gemms_are_far_below_their_speed_of_light(gpt2: Profile) -> None:
    found = [f for f in findings_of(gpt2) if f.id == "far-below-speed-of-light"]
    assert len(found) == 1, [f.title for f in found]
    f = found[0]
    assert "aten::mm" in f.title and f.numbers["sol_percent"] < 40
    assert any("50257 not a multiple of 8" in line for line in f.seen)
    assert "multiples of 8" in f.fix
    # the recording is launch-bound: the GPU time the fix saves shortens no step until the host is faster
    assert 0 < f.numbers["gpu_time_saved_ns"] < f.numbers["time_ns"] and f.cost_ns < f.numbers["gpu_time_saved_ns"]


@pytest.mark.parametrize("case", ["finding_fp32_gemm", "finding_fp32_gemm_fixed", "mlp", "matmul64_warm"])
def test_speed_of_light_is_silent_on_clean_controls(case: str) -> None:
    profile = recording(DATA / case)
    assert not [f.title for f in findings_of(profile) if f.id == "far-below-speed-of-light"]


def test_a_card_without_peaks_gets_rates_but_no_efficiency(gpt2: Profile) -> None:
    unknown_card = load_profile(DATA / "gpt2")
    unknown_card.meta.gpus[0].name = "Some Future GPU"
    model = perf_model(unknown_card)
    assert model is not None and "no peaks known" in model.peaks
    assert model.ops[0].speed.tflops_per_s is not None and model.ops[0].speed.sol_percent is None
    assert model.mfu_percent is None
    assert not [f for f in find_all(unknown_card) if f.id == "far-below-speed-of-light"]


def test_peaks_are_matched_by_the_name_torch_gives() -> None:
    h100 = peaks_for("NVIDIA H100 80GB HBM3")
    assert h100 is not None and h100.model == "H100 SXM" and h100.tflops["bf16"] == 989.4
    pcie = peaks_for("NVIDIA H100 PCIe")
    assert pcie is not None and pcie.model == "H100 PCIe"
    a100 = peaks_for("NVIDIA A100-SXM4-80GB")
    assert a100 is not None and a100.bandwidth_tbs == 2.039
    assert peaks_for("NVIDIA GeForce GT 710") is None


def test_the_report_shows_the_model_in_text_and_json(gpt2: Profile, capsys: pytest.CaptureFixture[str]) -> None:
    from tenprof.cli.main import main

    assert main(["report", str(DATA / "gpt2"), "--limit", "3"]) == 0
    text = capsys.readouterr().out
    assert "Performance model" in text and "MFU" in text and "not modelled" in text
    assert main(["report", str(DATA / "gpt2"), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)["perf_model"]
    assert data["mfu_pipe"] == "bf16" and data["ops"][0]["speed"]["tflops_per_s"] > 0
    assert np.isclose(data["modelled_percent"], perf_model(gpt2).modelled_percent)  # type: ignore[union-attr]


def test_a_trace_recorded_without_shapes_says_so(tmp_path: Path) -> None:
    """torch.profiler without record_shapes: the matmuls have a formula but nothing to apply it to; they are
    reported as not modelled for that reason, not as having no formula, and not as 0 FLOPs."""
    from tenprof.cli.main import main

    out = tmp_path / "imported"
    assert main(["import", str(DATA / "torch_traces" / "fp32_gemm.json.gz"), "-o", str(out), "--quiet"]) == 0
    model = perf_model(load_profile(out))
    assert model is not None and not model.ops and model.total.gpu_ns == 0 and model.mfu_percent is None
    mm = next(u for u in model.unknown if u.name == "aten::mm")
    assert mm.why == "shapes or values not recorded" and mm.gpu_ns > 0.9 * model.kernel_ns
