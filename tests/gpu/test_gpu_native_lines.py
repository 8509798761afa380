"""On the GPU machine: the native call-site recorder (the default) against the Python one on CUDA, on
compiled code and on a script whose second Python thread launches kernels.

python -m pytest -m gpu tests/gpu
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tenprof.analyses.timeline.summary import attribution
from tenprof.cli.main import main
from tenprof.store.profile import load_profile

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.gpu

THREADED = """\
import threading

import torch

import tenprof

a = torch.randn(256, 256, device="cuda")


def worker():
    for _ in range(20):
        torch.mm(a, a).relu_()


for step in range(3):
    thread = threading.Thread(target=worker)
    thread.start()
    for _ in range(20):
        (a + 1).sum()
    thread.join()
    tenprof.step()
"""


def _run(tmp_path: Path, recorder: str, monkeypatch: pytest.MonkeyPatch, *argv: str) -> Path:
    """A run with the lines recorder `recorder`: the Python one exists only beside Kineto (pinned); the
    native one runs under the default capture, or the one TENPROF_CAPTURE names (the GPU tests run on both)."""
    monkeypatch.setenv("TENPROF_LINES_RECORDER", recorder)
    out = tmp_path / recorder
    capture = ["--capture", "kineto"] if recorder == "python" else []
    assert main(["run", "--quiet", "--overhead-steps", "0", *capture, "-o", str(out), *argv]) == 0
    return out


@pytest.mark.parametrize(
    "argv",
    [
        ("examples/compiled_train.py", "--model", "mlp", "--steps", "3"),
        ("examples/compiled_train.py", "--model", "mlp", "--mode", "reduce-overhead", "--steps", "3"),
        ("examples/small_mlp.py", "--steps", "5"),
    ],
    ids=["compiled", "cudagraphs", "eager"],
)
def test_native_recorder_attributes_kernels_as_the_python_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, argv: tuple[str, ...]
) -> None:
    # One tenprof run first: Inductor's caches then hold the compiled code, so neither compared run records
    # autotuning's benchmark launches (a cold compile launches thousands of kernels).
    assert main(["run", "--quiet", "--no-lines", "-o", str(tmp_path / "warm"), str(ROOT / argv[0]), *argv[1:]]) == 0
    seen = {}
    for recorder in ("native", "python"):
        out = _run(tmp_path, recorder, monkeypatch, str(ROOT / argv[0]), *argv[1:])
        profile = load_profile(out)
        a = attribution(profile)
        seen[recorder] = (profile.table("kernels").num_rows, a.op_percent, a.user_line_percent)
    print(argv, seen)
    (kernels_n, op_n, line_n), (kernels_p, op_p, line_p) = seen["native"], seen["python"]
    assert kernels_n > 0 and abs(kernels_n - kernels_p) <= 0.02 * kernels_p
    assert op_n >= op_p - 1.0
    assert line_n >= line_p - 1.0


def test_threads_on_cuda(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = tmp_path / "threads.py"
    script.write_text(THREADED)
    out = _run(tmp_path, "native", monkeypatch, str(script))
    profile = load_profile(out)
    a = attribution(profile)
    print("threads: kernels", profile.table("kernels").num_rows, "op %", a.op_percent, "line %", a.user_line_percent)
    ops = set(profile.table("ops").column("name").to_pylist())
    assert {"aten::add", "aten::sum"} <= ops
