"""On the GPU machine: kernels of code built before the run, which the capture cannot watch being built:
a CUDA extension module the script imports from its own folder, and a shared library it loads with ctypes
by bare name (found through LD_LIBRARY_PATH). Each launch is an op "(user kernel) NAME" at the line
that called it, and every kernel of the run has a line.

python -m pytest -m gpu tests/gpu/test_gpu_prebuilt_launches.py
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tenprof.analyses.timeline.summary import OpLines, attribution
from tenprof.cli.main import main
from tenprof.store.profile import load_profile

pytestmark = pytest.mark.gpu

BUILD = """\
import sys
from torch.utils.cpp_extension import load_inline

source = r'''
__global__ void twice_kernel(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= 2.0f;
}
void twice(torch::Tensor x) {
    int n = (int)x.numel();
    twice_kernel<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), n);
}
'''
load_inline("tenprof_prebuilt_twice", cpp_sources="void twice(torch::Tensor x);", cuda_sources=source,
            functions=["twice"], build_directory=sys.argv[1])
"""

LIBRARY = r"""
#include <cuda_runtime.h>
__global__ void negate(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = -x[i];
}
extern "C" void launch_negate(float* x, int n) { negate<<<(n + 255) / 256, 256>>>(x, n); }
"""

SCRIPT = """\
import ctypes
import sys

import torch

import tenprof

sys.path.insert(0, sys.argv[1])
import tenprof_prebuilt_twice  # noqa: E402  (built before the run)

library = ctypes.CDLL("libtenprof_negate.so")  # by bare name, through LD_LIBRARY_PATH
library.launch_negate.argtypes = [ctypes.c_void_p, ctypes.c_int]
x = torch.ones(1 << 20, device="cuda")
for _ in range(6):
    tenprof_prebuilt_twice.twice(x)  # the extension's line
    library.launch_negate(ctypes.c_void_p(x.data_ptr()), x.numel())  # the library's line
    y = x + 1
    tenprof.step()
torch.cuda.synchronize()
"""


def test_prebuilt_extension_and_bare_name_library_launches_have_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built = tmp_path / "built"
    built.mkdir()
    subprocess.run([sys.executable, "-c", BUILD, str(built)], check=True, capture_output=True)
    (built / "negate.cu").write_text(LIBRARY)
    subprocess.run(
        ["nvcc", "-shared", "-Xcompiler", "-fPIC", "-o", str(built / "libtenprof_negate.so"), str(built / "negate.cu")],
        check=True,
        capture_output=True,
    )
    script = tmp_path / "prebuilt.py"
    script.write_text(SCRIPT)
    monkeypatch.setenv("LD_LIBRARY_PATH", f"{built}:{os.environ.get('LD_LIBRARY_PATH', '')}")
    out = tmp_path / "prof"
    assert main(["run", "--quiet", "--overhead-steps", "0", "-o", str(out), str(script), str(built)]) == 0
    profile = load_profile(out)
    lines_of = OpLines(profile)
    names = profile.table("ops").column("name").to_pylist()
    seen: dict[str, set[str]] = {}
    for op, name in enumerate(names):
        if name.startswith("(user kernel) "):
            seen.setdefault(name, set()).add(lines_of(op))
    script_lines = SCRIPT.splitlines()
    extension_line = next(i + 1 for i, t in enumerate(script_lines) if "the extension's line" in t)
    library_line = next(i + 1 for i, t in enumerate(script_lines) if "the library's line" in t)
    assert seen == {
        "(user kernel) twice": {f"{script}:{extension_line}"},
        "(user kernel) launch_negate": {f"{script}:{library_line}"},
    }
    shares = attribution(profile)
    assert shares.op_percent == 100.0 and shares.user_line_percent == 100.0, shares
