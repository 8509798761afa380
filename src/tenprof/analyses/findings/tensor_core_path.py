"""Which tensor-core path a float32 GEMM can move to on the recorded GPU, and how much faster it runs there
(pure; no I/O).

The dense peaks over the FP32 FMA peak, from the vendor's data sheets (dense, no sparsity):
- the big datacenter dies (A100, A30: compute capability 8.0; H100, H200: 9.0; B200: 10.0): TF32 at 7.4-8x
  FP32 (A100 156 against 19.5 TFLOP/s, H100 SXM 495 against 67). Allowing TF32 is the fix: float32 storage
  stays, and the GEMM keeps about 1/7.5 of its time.
- the other Ampere, Ada and Blackwell dies (8.6, 8.7, 8.9, 12.x): TF32 at 2x FP32 on the professional cards
  (A10 62.5 against 31.2, L4 60 against 30.3, L40S 183 against 91.6) and at FP32's own rate on GeForce cards
  (RTX 4090 82.6 against 82.6, RTX 3090 35.6 against 35.6), where TF32 saves nothing; bf16 with float32
  accumulation (what torch's autocast runs) at 4x on the professional cards, 2x on GeForce (RTX 4090 165
  against 82.6). bf16 autocast is the fix.
- Volta and Turing (7.x): no TF32 nor bf16; fp16 at 8x on a V100 (125 against 15.7) and a T4 (65 against
  8.1), at 4x on GeForce RTX 20 cards, which accumulate fp16 in float32 at half rate (RTX 2080 Ti 53.8
  against 13.4). fp16 autocast (with a GradScaler for training) is the fix.
- Pascal and older (compute capability below 7.0: a P100, a GTX 1080, a K80): no tensor cores. Half-precision
  GEMMs with float32 accumulation (what autocast runs) go at the FP32 rate on them (the P100's 2x fp16 rate is
  for fp16 accumulation), so no faster path is claimed: speedup 1, no finding (a public P100 ResNet-18 trace
  was told that TF32 runs at 2x and bf16 at 4x there).
- AMD Instinct cards (ROCm traces, whose compute capability is the gfx architecture: an MI300X reads 9.4):
  bf16 at about 8x the FP32 vector rate (MI300X 1307.4 against 163.4 TFLOP/s; TF32 653.7, where the card has
  it); bf16 autocast is the fix.
Where the profile names no GPU (Kineto's traces before torch 1.10), the newest architecture among its library
kernels' names tells the generation, and the big-die or V100 figures are taken. These rules pick the path; a
card that analyses.perf_model.gpu_peaks lists with both rates then gets its own ratio from that table
(measured where both were measured on the card, else the datasheet's): an H100 SXM 7.97x (403.9 against 50.7
measured), an H200 7.38x, a B200 14.7x (1100 against 75), an L40S 3.95x.
"""

from __future__ import annotations

from dataclasses import dataclass

from tenprof.analyses.perf_model.gpu_peaks import is_amd, is_cdna_matrix_card, peaks_for
from tenprof.store.meta import GpuInfo


@dataclass(frozen=True)
class TensorCorePath:
    precision: str  # tf32 | bf16 | fp16: what the GEMMs would run in
    speedup: float  # its dense peak over FP32's on this GPU: the GEMM keeps 1/speedup of its time
    basis: str  # the peaks the speedup comes from, for the finding's evidence
    fix: str


def tensor_core_path(gpus: list[GpuInfo], newest_arch: int | None) -> TensorCorePath:
    """The path for the first GPU the profile names with a compute capability (an AMD card by its name alone);
    else from `newest_arch` (the newest sm_XX among the library kernels' names, None where none tells)."""
    for gpu in gpus:
        if is_amd(gpu.name):
            return _on_amd(gpu.name)
    for gpu in gpus:
        major, _, minor = gpu.compute_capability.partition(".")
        if major.isdigit() and minor.isdigit():
            return _with_listed_peaks(_for(int(major), int(minor), gpu.name), gpu.name)
    if newest_arch is not None and newest_arch < 70:  # cuBLAS's maxwell_ kernels: Maxwell or Pascal
        return _for(6, 0, "", "a Maxwell or Pascal GPU, by its library kernels' names")
    if newest_arch is not None and newest_arch < 80:
        return _for(7, 0, "", "a Volta or Turing, by its library kernels' names")
    return _for(8, 0, "")


def _on_amd(name: str) -> TensorCorePath:
    """An AMD card: ROCm reports the gfx architecture as the compute capability (an MI300X's gfx942 reads 9.4),
    no NVIDIA generation. The Instinct MI200 and MI300 run bf16 on their matrix cores at about 8x the FP32
    vector rate (TF32, where the card has it, at half bf16's); for other AMD cards no ratio is known here, so
    no time is claimed (a speedup of 1)."""
    if is_cdna_matrix_card(name):
        return TensorCorePath(
            "bf16",
            8.0,
            "bf16 on the matrix cores would leave about 1/8 of that time (AMD Instinct MI200 and MI300: MI300X "
            "1307.4 against 163.4 TFLOP/s FP32): the cost is the rest",
            "Run the model under torch.autocast('cuda', dtype=torch.bfloat16): on this AMD Instinct card the "
            "matrix cores run bf16 at about 8x the FP32 rate (TF32, where the card has it, at half bf16's).",
        )
    return TensorCorePath(
        "bf16",
        1.0,
        "no bf16 rate is known here for this AMD card: no time is claimed",
        "Try torch.autocast('cuda', dtype=torch.bfloat16) and measure: whether this AMD card runs bf16 faster "
        "than FP32 depends on its matrix cores.",
    )


def _with_listed_peaks(path: TensorCorePath, name: str) -> TensorCorePath:
    """`path` with the card's own ratio where the peaks table lists both its rates (the rule's otherwise)."""
    peaks = peaks_for(name)
    if peaks is None:
        return path
    measured = all(pipe in peaks.measured_tflops for pipe in ("fp32", path.precision))
    rates = peaks.measured_tflops if measured else peaks.tflops
    if "fp32" not in rates or path.precision not in rates:
        return path
    speedup = round(rates[path.precision] / rates["fp32"], 2)
    kind = f"measured on {peaks.measured_on}" if measured else "datasheet"
    basis = (
        f"{path.precision.upper()} would leave about 1/{speedup:g} of that time ({peaks.model}: "
        f"{rates[path.precision]:g} against {rates['fp32']:g} TFLOP/s FP32, {kind}): the cost is the rest"
    )
    return TensorCorePath(path.precision, speedup, basis, path.fix)


def _for(major: int, minor: int, name: str, described: str = "") -> TensorCorePath:
    geforce = any(word in name for word in ("GeForce", "TITAN"))
    capability = described or f"compute capability {major}.{minor}"
    if major < 7:
        return TensorCorePath(
            "fp32",
            1.0,
            f"this GPU ({capability}) has no tensor cores, and half precision with float32 accumulation runs at "
            "its FP32 rate: no time is claimed",
            f"This GPU ({capability}) has no tensor cores: float32 GEMMs already run on its fastest path; a GPU of "
            "compute capability 7.0 or later runs them on tensor cores.",
        )
    if major == 7:
        speedup = 4.0 if geforce and minor == 5 else 8.0
        basis = (
            "GeForce RTX 20 cards accumulate fp16 in float32 at half rate: about 4x FP32"
            if speedup == 4.0
            else "V100: 125 against 15.7 TFLOP/s; T4: 65 against 8.1"
        )
        return TensorCorePath(
            "fp16",
            speedup,
            f"fp16 on the tensor cores would leave about 1/{speedup:g} of that time ({basis}): the cost is the rest",
            "Run the model under torch.autocast('cuda', dtype=torch.float16) with a torch.amp.GradScaler for "
            f"training: this GPU ({capability}) has fp16 tensor cores but neither TF32 nor bf16.",
        )
    if (major, minor) in ((8, 0), (9, 0), (10, 0)) or (major == 10 and not geforce):
        return TensorCorePath(
            "tf32",
            7.5,
            "TF32 would leave about 1/7.5 of that time (its tensor-core peak over FP32's: A100 156 against 19.5 "
            "TFLOP/s, H100 495 against 67): the cost is the rest",
            "Allow TF32 (torch.set_float32_matmul_precision('high'), or torch.backends.cuda.matmul.allow_tf32 = "
            "True), which keeps float32 storage and rounds the multiply inputs to 10 mantissa bits, or run the "
            "model under torch.autocast(dtype=torch.bfloat16).",
        )
    speedup = 2.0 if geforce else 4.0
    tf32 = "TF32 runs at FP32's own rate" if geforce else "TF32 at 2x FP32"
    return TensorCorePath(
        "bf16",
        speedup,
        f"bf16 with float32 accumulation would leave about 1/{speedup:g} of that time (on this GPU, "
        f"{capability}, {tf32}, bf16 at {speedup:g}x): the cost is the rest",
        "Run the model under torch.autocast('cuda', dtype=torch.bfloat16): on this GPU "
        f"({capability}{', a GeForce card' if geforce else ''}) {tf32}, so allowing TF32 "
        f"{'saves nothing' if geforce else 'saves at most half'}; bf16 runs the GEMMs about {speedup:g}x as fast.",
    )
