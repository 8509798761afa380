"""On the GPU machine: the performance model's GEMM FLOPs against what Nsight Compute counts.

The formula (2*M*N*K, analyses/perf_model/op_cost) is checked against the tensor pipe's op counters for bf16 and TF32
GEMMs and against the FMA/ADD/MUL thread instruction counts for an fp32 GEMM on the FMA pipes; the
shapes are multiples of the kernels' tiles, so the hardware does no padded work. Numbers go to
$TENPROF_EVIDENCE (when set) for docs/PERF_MODEL.md.
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tenprof.analyses.perf_model import perf_model
from tenprof.cli.main import main
from tenprof.store.profile import load_profile

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.gpu

TENSOR = {
    "bf16": "sm__ops_path_tensor_src_bf16_dst_fp32.sum",
    "tf32": "sm__ops_path_tensor_src_tf32_dst_fp32.sum",
}
SIMT = (
    "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum",
)


def _ncu_counts(script: Path) -> list[dict[str, str]]:
    """One row per GEMM kernel of the script's first step: its name and the counters."""
    metrics = ",".join([*TENSOR.values(), *SIMT])
    command = ["ncu", "--csv", "--page", "raw", "--metrics", metrics, "-k", "regex:gemm|nvjet|xmma|cutlass", "-c", "3"]
    done = subprocess.run([*command, sys.executable, str(script), "--steps", "1"], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    lines = done.stdout.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith('"ID"'))
    rows = csv.DictReader(io.StringIO("\n".join(line for line in lines[header:] if line.startswith('"'))))
    return [r for r in rows if r["ID"]]  # the row after the header gives units, with no ID


def _number(value: str) -> float:
    return float(value.replace(",", "")) if value not in ("", "n/a") else 0.0


@pytest.mark.skipif(shutil.which("ncu") is None, reason="Nsight Compute (ncu) is not on PATH")
def test_gemm_flops_match_nsight_compute_counts(tmp_path: Path) -> None:
    script = ROOT / "examples" / "gemms.py"
    out = tmp_path / "prof"
    assert main(["run", "--quiet", "--overhead-steps", "0", "-o", str(out), str(script), "--steps", "1"]) == 0
    model = perf_model(load_profile(out))
    assert model is not None
    formula = {r.pipe: r.speed.flops for r in model.ops if r.name == "aten::mm"}
    assert set(formula) == {"bf16", "tf32", "fp32"}, [(r.name, r.pipe, r.kernels) for r in model.ops]
    rows = _ncu_counts(script)
    assert len(rows) == 3, rows
    measured = {}
    for row, kind in zip(rows, ("bf16", "tf32", "fp32"), strict=True):
        if kind == "fp32":
            ffma, fadd, fmul = (_number(row[m]) for m in SIMT)
            measured[kind] = 2 * ffma + fadd + fmul
        else:
            measured[kind] = _number(row[TENSOR[kind]])
    evidence = {
        k: {"formula": formula[k], "ncu": measured[k], "kernel": r["Kernel Name"][:120]}
        for k, r in zip(("bf16", "tf32", "fp32"), rows, strict=True)
    }
    if os.environ.get("TENPROF_EVIDENCE"):
        Path(os.environ["TENPROF_EVIDENCE"]).write_text(json.dumps(evidence, indent=1))
    for kind in ("bf16", "tf32"):
        assert measured[kind] == pytest.approx(formula[kind], rel=0.02), evidence
    # the FMA kernel's epilogue (alpha/beta) adds a few MULs and ADDs per output element
    assert formula["fp32"] <= measured["fp32"] <= formula["fp32"] * 1.05, evidence
