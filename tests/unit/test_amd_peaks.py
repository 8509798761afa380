"""AMD Instinct cards in the peaks table (analyses.perf_model.gpu_peaks): their memory bandwidth and FP32 vector
rate, not their datasheets' matrix rates, which well-shaped bf16 GEMMs in public MI300X traces reached only 37-40%
of (489 TFLOP/s against 1307.4): judged against them every GEMM would read "far below its speed of light". So an
MI300X's bandwidth-bound ops are judged, its matrix products are not, and where a finding sends the user to a
kernel profiler it names AMD's, Nsight Compute profiling NVIDIA GPUs only."""

from __future__ import annotations

from tenprof.analyses.findings.speed_of_light import _fix
from tenprof.analyses.perf_model.gpu_peaks import is_amd, peaks_for


def test_an_mi300x_has_its_bandwidth_and_no_matrix_rates() -> None:
    peaks = peaks_for("AMD Instinct MI300X")
    assert peaks is not None and peaks.bytes_per_s() == (5.3e12, "datasheet")
    assert peaks.flops_per_s("bf16") is None and peaks.flops_per_s("tf32") is None
    assert peaks_for("AMD Instinct MI355X") is None  # not listed: no peaks rather than a guess
    # an MI250X is two dies, each its own device: half the package's bandwidth
    mi250x = peaks_for("AMD Instinct MI250X / MI250")
    assert mi250x is not None and mi250x.bytes_per_s() == (1.6384e12, "datasheet")


def test_the_kernel_profiler_named_is_the_vendors() -> None:
    assert is_amd("AMD Instinct MI300X") and not is_amd("NVIDIA H100 80GB HBM3")
    assert "rocprof" in _fix([], amd=True) and "--passes counters` reads NVIDIA GPUs only" in _fix([], amd=True)
    assert "--passes counters" in _fix([], amd=False) and "rocprof" not in _fix([], amd=False)
