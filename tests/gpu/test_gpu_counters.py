"""On the GPU machine: the counters pass under Nsight Compute, end to end.

python -m pytest -m gpu tests/gpu
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tenprof.analyses.kernels.counters import operators_report
from tenprof.cli.main import main
from tenprof.store.profile import load_profile

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.gpu


@pytest.mark.skipif(shutil.which("ncu") is None, reason="Nsight Compute (ncu) is not on PATH")
def test_counters_pass_replays_each_signature_once(tmp_path: Path) -> None:
    out = tmp_path / "prof"
    example = ROOT / "examples" / "matmul_add.py"
    # every step recorded (--overhead-steps 0), so that each of the 4 steps' mm is there
    args = ["run", "--quiet", "--overhead-steps", "0", "--passes", "timeline,counters", "-o", str(out), str(example)]
    args += ["--size", "512"]
    assert main([*args, "--steps", "4"]) == 0
    profile = load_profile(out)
    assert profile.meta.passes["counters"].state == "complete", profile.meta.passes["counters"].reason
    replays = profile.table("kernel_metrics").num_rows
    launches = profile.table("kernels").num_rows
    assert 0 < replays < launches
    report = operators_report(profile)
    assert report is not None
    mm = next(o for o in report.operators if o.op == "aten::mm")
    assert mm.calls == 4 and mm.kernels[0].launches == 4 and mm.kernels[0].method == "signature"
    assert mm.aggregated.sm_throughput_pct is not None and mm.aggregated.sm_throughput_pct > 0
