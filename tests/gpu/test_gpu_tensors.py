"""On the GPU machine: the tensors pass on CUDA, its peak against the caching allocator's own.

python -m pytest -m gpu tests/gpu
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tenprof.analyses.tensors.memory import memory_report
from tenprof.cli.main import main
from tenprof.store.profile import load_profile

pytestmark = pytest.mark.gpu


def test_cuda_peak_equals_the_allocators_when_every_allocation_is_a_tensor(tmp_path: Path) -> None:
    script = tmp_path / "mem.py"
    script.write_text(
        textwrap.dedent(
            """\
            import torch
            a = torch.empty(1000, device="cuda")           # 4000 B, a 4096 B block
            b = torch.empty(3 << 20, device="cuda")        # 12 MiB
            del a
            c = torch.ones(5 << 20, device="cuda")         # 20 MiB
            d = (b + 1).relu_()                            # 12 MiB: the peak, b + c + d
            del b, c, d
            e = torch.empty(777, device="cuda")
            """
        )
    )
    out = tmp_path / "prof"
    assert main(["run", "--quiet", "--passes", "tensors", "-o", str(out), str(script)]) == 0
    profile = load_profile(out)
    report = memory_report(profile)
    assert report is not None and report.device == "cuda"
    assert report.peak_rounded_bytes == (3 << 20) * 4 * 2 + (5 << 20) * 4
    assert report.allocator_peak_bytes == report.peak_rounded_bytes
    assert report.peak_op == "aten::add"


def test_gemm_workspace_is_the_only_difference_from_the_allocators_peak(tmp_path: Path) -> None:
    script = tmp_path / "mm.py"
    script.write_text(
        textwrap.dedent(
            """\
            import torch
            x = torch.randn(1024, 1024, device="cuda")
            for _ in range(3):
                y = x @ x
                z = y.t().contiguous()
            """
        )
    )
    out = tmp_path / "prof"
    assert main(["run", "--quiet", "--passes", "tensors", "-o", str(out), str(script)]) == 0
    report = memory_report(load_profile(out))
    assert report is not None
    gap = report.allocator_peak_bytes - report.peak_rounded_bytes
    # What no tensor owns is still held at the end (cuBLAS's workspace), and explains the whole gap.
    assert gap >= 0 and gap == report.untracked_at_end_bytes
