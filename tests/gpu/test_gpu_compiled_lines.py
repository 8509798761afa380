"""On the GPU machine: a compiled model's kernels get their source lines without tenprof changing the compiled
program. By default (no `--compiled-lines`) Inductor merges identical kernels as in a plain run, and each kernel's
lines come from its provenance tracking, kept beside the wrapper; with the option, from the origin comments, which
keep identical kernels of different lines apart (more distinct kernels).

python -m pytest -m gpu tests/gpu/test_gpu_compiled_lines.py
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tenprof.analyses.kernels.compiled import compiled_report
from tenprof.cli.main import main
from tenprof.core.rawfiles import COMPILED_CODE_FILE
from tenprof.store.compiled_code import read_compiled_code
from tenprof.store.profile import Profile, load_profile

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.gpu

MLP = (str(ROOT / "examples" / "compiled_train.py"), "--model", "mlp", "--steps", "3")


def _run(out: Path, *options: str) -> Profile:
    assert main(["run", "--quiet", "--overhead-steps", "0", *options, "-o", str(out), *MLP]) == 0
    return load_profile(out)


def _distinct_triton_kernels(profile: Profile) -> int:
    return len({n for n in profile.table("kernels").column("name").to_pylist() if n.startswith("triton_")})


def test_kernel_lines_come_without_changing_what_inductor_generates(tmp_path: Path) -> None:
    plain = _run(tmp_path / "default")
    rows = read_compiled_code(tmp_path / "default" / "timeline" / "raw" / COMPILED_CODE_FILE)
    assert rows and any(row.get("stack_traces") for row in rows), "provenance tracking kept no stack traces"
    report = compiled_report(plain)
    assert report is not None and not report.origin_comments
    assert report.lines_share >= 0.9, report.lines_share  # the MLP blocks' lines, from provenance tracking
    commented = _run(tmp_path / "lines", "--compiled-lines")
    # the origin comments keep identical kernels of different lines apart: more distinct kernels (13-14 against
    # 44 on these blocks, docs/COMPILE.md)
    assert _distinct_triton_kernels(commented) > _distinct_triton_kernels(plain)
