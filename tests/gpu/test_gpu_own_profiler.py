"""On the GPU machine: a script's own torch.profiler (CPU and CUDA activity) started while tenprof records
(capture.profiler_guard): tenprof steps aside and keeps what came before, the script's profiler records
its kernels as it would alone, and the process lives on (on the CPU it died of a segmentation fault).

python -m pytest -m gpu tests/gpu/test_gpu_own_profiler.py
"""

from __future__ import annotations

from pathlib import Path

import pytest

import tenprof

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.gpu


def test_the_scripts_profiler_records_its_kernels_and_tenprof_keeps_what_came_before(tmp_path: Path) -> None:
    from torch.profiler import ProfilerActivity, profile

    w = torch.randn(1024, 1024, device="cuda")
    with tenprof.profile(str(tmp_path / "p"), overhead_steps=0) as p:
        for _ in range(3):
            w @ w
            p.step()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as own:
            for _ in range(4):
                torch.relu(w @ w)
                own.step()
                p.step()
        torch.cuda.synchronize()
    kernels = [e for e in own.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    assert len(kernels) >= 8  # a GEMM and a relu a step, as without tenprof
    assert p.profile.meta.passes["timeline"].state == "partial"
    ops = p.profile.table("ops").column("name").to_pylist()
    assert ops.count("aten::mm") == 3 and "aten::relu" not in ops
    assert p.profile.table("kernels").num_rows >= 3  # the GEMMs before it
