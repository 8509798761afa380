"""Mangled kernel names are read as C++ (core.demangle): 22 of 132 public traces held some (all of a Blackwell
laptop's kernels), and findings quoted `_Z20magma_sgemmEx_kernelIfffLb1ELb0E...` as it was."""

from __future__ import annotations

from pathlib import Path

from tenprof.core.demangle import demangled, demangled_all
from tests.helpers import imported_events

SGEMM = "_Z20magma_sgemmEx_kernelIfffLb1ELb0ELi6ELi4ELi6ELi3ELi4EEviii6TensoriS0_iS0_iS0_iiiPKT_S3_"
ADD = "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_15CUDAFunctor_addIfEESt5arrayIPcLy3EEEEviT0_T1_"


def test_a_mangled_name_reads_as_cxx() -> None:
    assert demangled(SGEMM).startswith("void magma_sgemmEx_kernel<float, float, float, true, false, 6, 4, 6, 3, 4>(")
    assert demangled(ADD).startswith("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add")
    # what is not a mangled symbol stays as it is
    assert demangled("ampere_sgemm_128x64_nn") == "ampere_sgemm_128x64_nn"
    assert demangled("_Znot a symbol") == "_Znot a symbol"
    names = ["triton_poi_fused_0", SGEMM, SGEMM]
    assert demangled_all(names) == ["triton_poi_fused_0", demangled(SGEMM), demangled(SGEMM)]


def test_an_imported_traces_kernels_and_their_launch_ops_are_demangled(tmp_path: Path) -> None:
    # two launches outside any op (a trace without CPU activity): the kernels and the ops given to them
    events = [
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 10.0 + 100 * i,
         "dur": 5.0, "args": {"correlation": i + 1}}
        for i in range(2)
    ] + [
        {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": 20.0 + 100 * i, "dur": 30.0,
         "args": {"correlation": i + 1, "device": 0, "stream": 7}}
        for i, name in enumerate((SGEMM, ADD))
    ]  # fmt: skip
    profile = imported_events(tmp_path, events)
    kernels = profile.table("kernels").column("name").to_pylist()
    assert kernels == [demangled(SGEMM), demangled(ADD)]
    ops = profile.table("ops").column("name").to_pylist()
    assert all("magma_sgemmEx_kernel" in op or "vectorized_elementwise_kernel" in op for op in ops)
    assert not any("_Z" in op for op in ops)
