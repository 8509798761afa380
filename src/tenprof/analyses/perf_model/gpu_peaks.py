"""What each GPU model can do at most: dense throughput per dtype and memory bandwidth, with sources.

The speed-of-light model (analyses.perf_model) judges an op against these: ideal time = max(FLOPs / peak
FLOP/s of the pipe it ran on, minimum bytes / peak bandwidth). Two kinds of peak are kept:
- `datasheet`: NVIDIA's published dense numbers (datasheets quote tensor-core rates with 2:4 sparsity;
  those are halved here), at the boost clock;
- `measured`: what a large cuBLAS GEMM and a device-to-device copy reached on that card, where measured
  (benchmarks/peaks.py, the card and date in docs/PERF_MODEL.md). Real kernels rarely pass these, so the
  model uses them where present and says which it used.

NVIDIA's and AMD's Instinct cards are listed.

Units: TFLOP/s (TOP/s for int8) and TB/s (10^12 bytes/s). Pipes: "fp32" is the non-tensor FMA rate
(also what elementwise work in any dtype is judged against), "tf32"/"bf16"/"fp16"/"fp8"/"int8"/"fp64"
are tensor-core rates (V100's "fp64" is its non-tensor rate: it has no FP64 tensor cores). A card not
listed here has no peaks: the model then reports TFLOP/s and GB/s but no efficiency, rather than guess.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

SOURCES = {
    "h100": "https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet",
    "h200": "https://www.nvidia.com/en-us/data-center/h200/",
    "a100": "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf",
    "l40s": "https://resources.nvidia.com/en-us-l40s/l40s-datasheet-28413",
    "l4": "https://resources.nvidia.com/en-us-data-center-overview/l4-gpu-datasheet",
    "a10": "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a10/pdf/a10-datasheet.pdf",
    "b200": "https://www.nvidia.com/en-us/data-center/hgx/",
    "v100": "https://images.nvidia.com/content/technologies/volta/pdf/volta-v100-datasheet-update-us-1165301-r5.pdf",
    "mi300x": "https://www.amd.com/en/products/accelerators/instinct/mi300/mi300x.html",
    "mi325x": "https://www.amd.com/en/products/accelerators/instinct/mi300/mi325x.html",
    "mi250x": "https://www.amd.com/en/products/accelerators/instinct/mi200/mi250x.html",
}


@dataclass(frozen=True)
class GpuPeaks:
    model: str  # e.g. "H100 SXM"
    tflops: dict[str, float]  # pipe -> dense datasheet TFLOP/s
    bandwidth_tbs: float  # datasheet memory bandwidth
    source: str  # where the datasheet numbers come from
    measured_tflops: dict[str, float] = field(default_factory=dict)  # pipe -> measured, where measured
    measured_bandwidth_tbs: float | None = None
    measured_on: str = ""  # card and date of the measured numbers

    def flops_per_s(self, pipe: str, measured: bool = True) -> tuple[float, str] | None:
        """The peak FLOP/s of `pipe` and which kind it is ("measured" or "datasheet"); None when unknown.
        `measured=False`: the datasheet's, which MFU is conventionally against."""
        if measured and pipe in self.measured_tflops:
            return self.measured_tflops[pipe] * 1e12, "measured"
        if pipe in self.tflops:
            return self.tflops[pipe] * 1e12, "datasheet"
        return None

    def bytes_per_s(self) -> tuple[float, str]:
        if self.measured_bandwidth_tbs is not None:
            return self.measured_bandwidth_tbs * 1e12, "measured"
        return self.bandwidth_tbs * 1e12, "datasheet"


def _rates(
    fp32: float, tf32: float, bf16: float, fp8: float | None, int8: float | None, fp64: float | None
) -> dict[str, float]:
    """Dense rates of one card; fp16 tensor cores run at the bf16 rate on every card listed."""
    rates = {"fp32": fp32, "tf32": tf32, "bf16": bf16, "fp16": bf16}
    rates.update({k: v for k, v in (("fp8", fp8), ("int8", int8), ("fp64", fp64)) if v is not None})
    return rates


_HOPPER_SXM = _rates(67.0, 494.7, 989.4, 1978.9, 1978.9, 67.0)
_A100 = _rates(19.5, 156.0, 312.0, None, 624.0, 19.5)

# (substring of the name torch and nvidia-smi give the card, lower case) -> peaks; the first match wins,
# so more specific names come first. Measured values: benchmarks/peaks.py (docs/PERF_MODEL.md).
PEAKS: tuple[tuple[str, GpuPeaks], ...] = (
    ("h200", GpuPeaks("H200 SXM", _HOPPER_SXM, 4.8, SOURCES["h200"])),
    ("h100 nvl", GpuPeaks("H100 NVL", _rates(60.0, 417.5, 835.5, 1670.5, 1670.5, 60.0), 3.9, SOURCES["h100"])),
    ("h100 pcie", GpuPeaks("H100 PCIe", _rates(51.0, 378.0, 756.0, 1513.0, 1513.0, 51.0), 2.0, SOURCES["h100"])),
    (
        "h100",
        GpuPeaks(
            "H100 SXM",
            _HOPPER_SXM,
            3.35,
            SOURCES["h100"],
            measured_tflops={"bf16": 776.1, "fp16": 747.9, "tf32": 403.9, "fp32": 50.7},
            measured_bandwidth_tbs=3.0,
            measured_on="NVIDIA H100 80GB HBM3, driver 580.159.04, torch 2.11.0+cu130, 2026-11-27",
        ),
    ),
    ("b200", GpuPeaks("B200", _rates(75.0, 1100.0, 2250.0, 4500.0, 4500.0, 37.0), 7.7, SOURCES["b200"])),
    ("a100-sxm4-80gb", GpuPeaks("A100 SXM4 80GB", _A100, 2.039, SOURCES["a100"])),
    ("a100 80gb pcie", GpuPeaks("A100 PCIe 80GB", _A100, 1.935, SOURCES["a100"])),
    ("a100", GpuPeaks("A100 40GB", _A100, 1.555, SOURCES["a100"])),
    ("l40s", GpuPeaks("L40S", _rates(91.6, 183.0, 362.0, 733.0, 733.0, None), 0.864, SOURCES["l40s"])),
    ("l4", GpuPeaks("L4", _rates(30.3, 60.0, 121.0, 242.5, 242.5, None), 0.3, SOURCES["l4"])),
    ("a10", GpuPeaks("A10", _rates(31.2, 62.5, 125.0, None, 250.0, None), 0.6, SOURCES["a10"])),
    ("v100", GpuPeaks("V100 SXM2", {"fp32": 15.7, "fp16": 125.0, "fp64": 7.8}, 0.9, SOURCES["v100"])),
    # AMD Instinct (ROCm traces name them "AMD Instinct MI300X"): memory bandwidth and the FP32 vector rate only.
    # Their datasheets' dense matrix rates (MI300X bf16 1307.4 TFLOP/s) are 2.5-2.8 times what well-shaped bf16
    # GEMMs reached in public MI300X traces (489 TFLOP/s for 32768x2048x2048, 466-521 in a Qwen model's MLP),
    # which would read as 37% of the speed of light, "far below"; left out until measured on the card
    ("mi325x", GpuPeaks("MI325X", {"fp32": 163.4}, 6.0, SOURCES["mi325x"])),
    ("mi300x", GpuPeaks("MI300X", {"fp32": 163.4}, 5.3, SOURCES["mi300x"])),
    # an MI250X is two dies, each its own device to torch ("AMD Instinct MI250X / MI250"): half the package's
    ("mi250x", GpuPeaks("MI250X (one of its two dies)", {"fp32": 23.95}, 1.6384, SOURCES["mi250x"])),
)


# cards whose names contain a listed one's but which differ from it (an A10G has about half an A10's tensor
# rate; an H200 NVL runs lower clocks and power than the SXM; an L40 is not an L40S): no peaks, not wrong ones
_UNLISTED = ("a10g", "h200 nvl", "l40")


def is_amd(gpu_name: str) -> bool:
    """Whether torch named an AMD GPU ("AMD Instinct MI300X", "AMD Radeon RX 7900 XTX"; ROCm's compute
    capability is the gfx architecture, no NVIDIA generation, and NVIDIA's tools do not run on it)."""
    return "AMD" in gpu_name or "Instinct" in gpu_name or "Radeon" in gpu_name


def is_cdna_matrix_card(gpu_name: str) -> bool:
    """Whether an AMD card is an Instinct MI200 or MI300 (CDNA 2, 3): matrix cores running bf16 at about 8x
    the FP32 vector rate (MI300X 1307.4 against 163.4 TFLOP/s, MI250X 383 against 47.9). Older Instinct cards
    (MI100 about 4x, MI50 without matrix cores) and Radeon cards are not."""
    return re.search(r"\bMI[23]\d\d", gpu_name) is not None


def peaks_for(gpu_name: str) -> GpuPeaks | None:
    """The peaks of the card torch named `gpu_name` (e.g. "NVIDIA H100 80GB HBM3"); None when not listed.
    Names are matched as whole words ("l4" is not "l40s")."""
    lowered = gpu_name.lower()
    if any(_names(key, lowered) for key in _UNLISTED):
        return None
    return next((peaks for key, peaks in PEAKS if _names(key, lowered)), None)


def _names(key: str, name: str) -> bool:
    return re.search(rf"(?<![a-z0-9]){re.escape(key)}(?![a-z0-9])", name) is not None
