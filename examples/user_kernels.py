"""Kernels the script launches itself, outside any torch op, next to PyTorch's own: each step runs a
Triton gather kernel three times (a random index into a 256 MB table, beside coalesced reads of x and
the index), a CUDA extension's kernel (torch.utils.cpp_extension, through a pybind function: no aten op
around the launch), `a.t() + b`, and a kernel of a library built with nvcc, called through ctypes.

    tenprof run examples/user_kernels.py
    tenprof report <profile>      # "(user kernel) gather_kernel" at the line of its launch
"""

import argparse

import torch
import triton
import triton.language as tl

import tenprof


@triton.jit
def gather_kernel(x_ptr, idx_ptr, table_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)  # coalesced
    idx = tl.load(idx_ptr + offs, mask=mask)  # coalesced
    g = tl.load(table_ptr + idx, mask=mask)  # the random gather
    tl.store(out_ptr + offs, x + g, mask=mask)


SCALE_SOURCE = r"""
__global__ void scale_kernel(const float* in, float* out, float s, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i] * s;
}
void scale(torch::Tensor in, torch::Tensor out, double s) {
    int n = (int)in.numel();
    scale_kernel<<<(n + 255) / 256, 256>>>(in.data_ptr<float>(), out.data_ptr<float>(), (float)s, n);
}
"""


def scale_module():  # type: ignore[no-untyped-def]
    try:
        from torch.utils.cpp_extension import load_inline

        return load_inline(
            "tenprof_user_scale",
            cpp_sources="void scale(torch::Tensor in, torch::Tensor out, double s);",
            cuda_sources=SCALE_SOURCE,
            functions=["scale"],
            extra_cuda_cflags=["-O3", "-lineinfo"],
        )
    except Exception as exc:  # no compiler or build tools: the rest still runs
        print(f"the CUDA extension was skipped: {exc.__class__.__name__}: {str(exc)[:200]}")
        return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=6)
    args = parser.parse_args()
    torch.manual_seed(0)
    n = 1 << 22
    x = torch.randn(n, device="cuda")
    table = torch.randn(1 << 26, device="cuda")  # 256 MB: the gather misses every cache
    idx = torch.randint(0, table.numel(), (n,), device="cuda", dtype=torch.int32)
    out = torch.empty_like(x)
    scaled = torch.empty_like(x)
    a = torch.randn(4096, 4096, device="cuda")
    b = torch.randn(4096, 4096, device="cuda")
    grid = (triton.cdiv(n, 1024),)
    module = scale_module()
    for _ in range(args.steps):
        for _ in range(3):
            gather_kernel[grid](x, idx, table, out, n, BLOCK=1024)  # the user's Triton kernel
        if module is not None:
            module.scale(out, scaled, 0.5)  # the extension's kernel
        c = a.t() + b
        add_one_through_ctypes(scaled)  # a raw ctypes launch
        tenprof.step()
    torch.cuda.synchronize()
    print(f"user kernels ran: {float(c[0, 0]):.3f}")


from typing import Any  # noqa: E402  (kept below main: the lines above are those of the recordings)

ADD_ONE_SOURCE = r"""
#include <cuda_runtime.h>
__global__ void add_one(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += 1.0f;
}
extern "C" void launch_add_one(float* x, int n, cudaStream_t stream) {
    add_one<<<(n + 255) / 256, 256, 0, stream>>>(x, n);
}
"""
_LIBRARY: list[object] = []


def add_one_through_ctypes(x: torch.Tensor) -> None:
    """x += 1 by a kernel of a shared library built with nvcc and called through ctypes (no torch op, no
    extension module); nothing where nvcc is missing."""
    import ctypes

    if not _LIBRARY:
        _LIBRARY.append(_build_add_one())
    library: Any = _LIBRARY[0]
    if library is not None:
        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
        library.launch_add_one(ctypes.c_void_p(x.data_ptr()), x.numel(), stream)


def _build_add_one() -> Any:
    import ctypes
    import subprocess
    import tempfile
    from pathlib import Path

    folder = Path(tempfile.gettempdir()) / "tenprof_example_add_one"
    folder.mkdir(exist_ok=True)
    source, library = folder / "add_one.cu", folder / "libadd_one.so"
    source.write_text(ADD_ONE_SOURCE)
    try:
        subprocess.run(
            ["nvcc", "-shared", "-Xcompiler", "-fPIC", "-O3", "-lineinfo", "-o", str(library), str(source)],
            check=True,
            capture_output=True,
        )
    except (OSError, subprocess.CalledProcessError) as exc:
        print(f"the ctypes library was skipped: {exc.__class__.__name__}")
        return None
    loaded = ctypes.CDLL(str(library))
    loaded.launch_add_one.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]
    return loaded


if __name__ == "__main__":
    main()
