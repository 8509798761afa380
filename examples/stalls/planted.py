"""Kernels whose warp stalls have a known cause, for checking the stalls pass's blame shift.

    tenprof run --passes timeline,stalls --replay-scopes gather,compute,bank_conflicts examples/stalls/planted.py

- gather: one kernel loads x[i] (coalesced), idx[i] (coalesced) and table[idx[i]] (a random gather
  over 256 MB), and uses x and the gathered value in separate instructions; the long-scoreboard stalls
  should be blamed on the gather loads far more than on the coalesced load of x.
- compute: a long chain of FMAs on values already in registers: little memory blame.
- bank_conflicts (when the CUDA toolkit can build a small extension): every thread of a warp reads the
  same shared-memory bank; the short-scoreboard stalls should be blamed on the shared load (LDS).
Each runs inside a `tenprof.scope` named in --replay-scopes, which is how kernels launched outside aten
ops are selected for replay.
"""

import torch
import triton
import triton.language as tl

import tenprof


@triton.jit
def gather_kernel(x_ptr, idx_ptr, table_ptr, out_ptr, out2_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out2_ptr + offs, x * 3.0, mask=mask)  # consumes only the coalesced load
    idx = tl.load(idx_ptr + offs, mask=mask)
    g = tl.load(table_ptr + idx, mask=mask)
    tl.store(out_ptr + offs, g * 2.0, mask=mask)  # consumes only the gather


@triton.jit
def compute_kernel(x_ptr, out_ptr, n, ITERS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(x_ptr + offs, mask=mask)
    b = a * 0.5 + 1.0
    for _ in range(ITERS):
        a = a * b + 0.25
        b = b * a - 0.125
    tl.store(out_ptr + offs, a + b, mask=mask)


BANK_SOURCE = r"""
__global__ void bank_conflict_kernel(const float* in, float* out, int n) {
    __shared__ float tile[32 * 33 * 4];
    int t = threadIdx.x;
    for (int k = t; k < 32 * 33 * 4; k += blockDim.x) tile[k] = in[(blockIdx.x * 7 + k) % n];
    __syncthreads();
    float acc = 0.f;
    for (int r = 0; r < 64; ++r) acc += tile[((t * 32) + r) % (32 * 33 * 4)];  // stride 32: one bank
    out[blockIdx.x * blockDim.x + t] = acc;
}
torch::Tensor bank_conflicts(torch::Tensor in) {
    auto out = torch::empty({1024 * 128}, in.options());
    bank_conflict_kernel<<<1024, 128>>>(in.data_ptr<float>(), out.data_ptr<float>(), (int)in.numel());
    return out;
}
"""


def bank_conflict_module():
    try:
        from torch.utils.cpp_extension import load_inline

        return load_inline(
            "tenprof_bank_conflicts",
            cpp_sources="torch::Tensor bank_conflicts(torch::Tensor in);",
            cuda_sources=BANK_SOURCE,
            functions=["bank_conflicts"],
            extra_cuda_cflags=["-O3", "-lineinfo"],
        )
    except Exception as exc:  # no compiler or build tools: the other two kernels still run
        print(f"bank_conflicts skipped: {exc.__class__.__name__}: {str(exc)[:200]}")
        return None


def main() -> None:
    torch.manual_seed(0)
    n = 1 << 22
    x = torch.randn(n, device="cuda")
    table = torch.randn(1 << 26, device="cuda")  # 256 MB: the gather misses every cache
    idx = torch.randint(0, table.numel(), (n,), device="cuda", dtype=torch.int32)
    out = torch.empty_like(x)
    out2 = torch.empty_like(x)
    block = 1024
    grid = (triton.cdiv(n, block),)
    module = bank_conflict_module()
    for _ in range(2):
        with tenprof.scope("gather"):
            gather_kernel[grid](x, idx, table, out, out2, n, BLOCK=block)
        with tenprof.scope("compute"):
            compute_kernel[grid](x, out, n, ITERS=256, BLOCK=block)
        if module is not None:
            with tenprof.scope("bank_conflicts"):
                module.bank_conflicts(x)
    torch.cuda.synchronize()
    print("planted kernels ran")


if __name__ == "__main__":
    main()
