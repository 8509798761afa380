"""The tensor-core path a float32 GEMM can move to, by the recorded GPU (findings.tensor_core_path): TF32
where its peak is 7.4-8x FP32's (14.7x on a B200), bf16 where TF32 gains little or nothing (GeForce and
professional Ampere/Ada cards), fp16 on Volta and Turing; a card the peaks table lists gets its own ratio."""

from __future__ import annotations

import pytest

from tenprof.analyses.findings import find_all
from tenprof.analyses.findings.tensor_core_path import tensor_core_path
from tenprof.store.meta import GpuInfo
from tenprof.store.profile import Profile, load_profile
from tests.helpers import DATA


def _on(name: str, capability: str) -> tuple[str, float, str]:
    path = tensor_core_path([GpuInfo(index=0, name=name, compute_capability=capability)], None)
    return path.precision, path.speedup, path.fix


@pytest.mark.parametrize(
    ("name", "capability", "precision", "speedup"),
    [
        ("NVIDIA H100 80GB HBM3", "9.0", "tf32", 7.97),  # the peaks table's measured ratio, 403.9 / 50.7
        ("NVIDIA H200", "9.0", "tf32", 7.38),  # its datasheet's, 494.7 / 67
        ("NVIDIA A100-SXM4-80GB", "8.0", "tf32", 8.0),
        ("NVIDIA B200", "10.0", "tf32", 14.67),
        ("NVIDIA GB300", "10.3", "tf32", 7.5),  # not in the table: the rule's figure
        ("NVIDIA A10G", "8.6", "bf16", 4.0),
        ("NVIDIA L4", "8.9", "bf16", 3.99),
        ("NVIDIA L40S", "8.9", "bf16", 3.95),
        ("NVIDIA GeForce RTX 4090", "8.9", "bf16", 2.0),
        ("NVIDIA GeForce RTX 3090", "8.6", "bf16", 2.0),
        ("Tesla V100-SXM2-16GB", "7.0", "fp16", 7.96),
        ("Tesla T4", "7.5", "fp16", 8.0),
        ("NVIDIA GeForce RTX 2080 Ti", "7.5", "fp16", 4.0),
        # ROCm gives the gfx architecture as the capability (gfx942: 9.4), no NVIDIA generation
        ("AMD Instinct MI300X", "9.4", "bf16", 8.0),
        ("AMD Instinct MI250X / MI250", "9.0", "bf16", 8.0),
        ("AMD Instinct MI300X", "", "bf16", 8.0),  # no capability recorded: the name alone tells
        ("AMD Radeon RX 7900 XTX", "11.0", "bf16", 1.0),  # no known matrix-core ratio: no time claimed
        # no tensor cores before Volta: half precision accumulating in float32 runs at the FP32 rate there
        ("Tesla P100-PCIE-16GB", "6.0", "fp32", 1.0),
        ("NVIDIA GeForce GTX 1080 Ti", "6.1", "fp32", 1.0),
        ("Tesla K80", "3.7", "fp32", 1.0),
    ],
)
def test_each_card_gets_the_path_its_tensor_cores_run_fastest(
    name: str, capability: str, precision: str, speedup: float
) -> None:
    got = _on(name, capability)
    assert got[:2] == (precision, speedup)
    assert ("TF32" in got[2].split(",")[0]) == (precision == "tf32")  # the fix leads with what to do here


def test_a_listed_card_quotes_its_own_peaks() -> None:
    path = tensor_core_path([GpuInfo(index=0, name="NVIDIA H100 80GB HBM3", compute_capability="9.0")], None)
    assert "403.9 against 50.7" in path.basis and "measured" in path.basis
    b200 = tensor_core_path([GpuInfo(index=0, name="NVIDIA B200", compute_capability="10.0")], None)
    assert "1100 against 75" in b200.basis and "datasheet" in b200.basis


def test_a_geforce_card_is_told_that_tf32_saves_nothing() -> None:
    assert "saves nothing" in _on("NVIDIA GeForce RTX 4090", "8.9")[2]
    assert "saves at most half" in _on("NVIDIA L40S", "8.9")[2]


def test_without_a_named_gpu_the_library_kernels_tell_the_generation() -> None:
    assert tensor_core_path([], 70).precision == "fp16"  # Volta's kernels and none newer
    assert tensor_core_path([], 90).precision == "tf32"
    assert tensor_core_path([], None).precision == "tf32"
    # a GPU listed without a compute capability (an old trace) does not decide it, unless its name does (AMD's)
    assert tensor_core_path([GpuInfo(index=0, name="Tesla V100-SXM2-16GB")], 70).precision == "fp16"
    assert tensor_core_path([GpuInfo(index=0, name="AMD Instinct MI300X")], 70).precision == "bf16"


def test_an_amd_card_is_told_to_run_bf16_not_tf32() -> None:
    # an MI300X reads compute capability 9.4, which the NVIDIA rules would have taken for a Hopper (allow TF32)
    precision, _, fix = _on("AMD Instinct MI300X", "9.4")
    assert precision == "bf16" and fix.startswith("Run the model under torch.autocast('cuda', dtype=torch.bfloat16)")
    assert "AMD Instinct" in fix


def test_a_gpu_without_tensor_cores_gets_no_gemm_finding() -> None:
    # the fp32 GEMM recording (H100) read as if made on a P100: a public P100 ResNet-18 trace was told TF32 runs
    # at 2x and bf16 at 4x there; the H100 it was made on is the control
    recording = load_profile(DATA / "finding_fp32_gemm")
    assert "gemm-without-tensor-cores" in {f.id for f in find_all(recording)}
    meta = recording.meta.model_copy(deep=True)
    meta.gpus = [GpuInfo(index=0, name="Tesla P100-PCIE-16GB", compute_capability="6.0")]
    on_a_p100 = Profile(recording.directory, meta)
    assert "gemm-without-tensor-cores" not in {f.id for f in find_all(on_a_p100)}


def test_a_trace_naming_no_gpu_is_read_by_its_library_kernels() -> None:
    # Kineto before torch 1.10 names no GPU: cuBLAS's maxwell_ kernels (Maxwell and Pascal) have no tensor-core
    # path; volta_ ones take fp16, newer ones TF32
    assert tensor_core_path([], 50).speedup == 1.0
    assert tensor_core_path([], 70).precision == "fp16"
    assert tensor_core_path([], 80).precision == "tf32" and tensor_core_path([], None).precision == "tf32"
