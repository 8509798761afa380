"""Names of aten ops, CUDA calls and kernels by what they do, shared by the analyses that judge them."""

from __future__ import annotations

# Matrix multiplies: cuBLAS/CUTLASS GEMMs (and GEMVs) run under these ops.
GEMM_OPS = frozenset(
    {
        "aten::mm",
        "aten::addmm",
        "aten::bmm",
        "aten::baddbmm",
        "aten::matmul",
        "aten::linear",
        "aten::_addmm_activation",
        "aten::_scaled_mm",
        "aten::addmv",
        "aten::mv",
    }
)

# CUDA calls in which the host waits for the GPU, and their HIP names in ROCm traces (ROCm's PyTorch copies to
# the host with hipMemcpyWithStream, which returns once the copy is done)
SYNC_CALLS = frozenset(
    {"cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", "cudaMemcpy"}
    | {"hipStreamSynchronize", "hipDeviceSynchronize", "hipEventSynchronize", "hipMemcpy", "hipMemcpyWithStream"}
)

# Collective (communication) kernels: NCCL's, by the words in their names.
# NCCL's and RCCL's kernels, other libraries' collectives, and expert-parallel communication kernels
# (DeepEP's dispatch and combine live in its `internode` and `intranode` namespaces)
COLLECTIVE_WORDS = (
    "nccl",
    "allreduce",
    "all_reduce",
    "allgather",
    "all_gather",
    "reducescatter",
    "reduce_scatter",
    "alltoall",
    "all_to_all",
    "broadcast",
    "::internode::",
    "::intranode::",
)


# CUDA (HIP) graphs: the calls that replay one, and the text in the names of those that begin a capture
# (cudaStreamBeginCapture, cudaStreamBeginCaptureToGraph, hipStreamBeginCapture)
GRAPH_LAUNCHES = frozenset({"cudaGraphLaunch", "hipGraphLaunch"})
CAPTURE_BEGIN = "StreamBeginCapture"
# the calls that make a captured graph executable (cudaGraphInstantiate, cudaGraphInstantiateWithFlags, HIP's)
GRAPH_INSTANTIATES = ("cudaGraphInstantiate", "hipGraphInstantiate")


def is_collective(kernel_name: str) -> bool:
    name = kernel_name.lower()
    return any(w in name for w in COLLECTIVE_WORDS)


# Words in the names of library GEMM kernels (cuBLAS, cuBLASLt's nvjet, CUTLASS, cuDNN's xmma); each reader adds
# its own (a split-K GEMM's reduction kernel, GEMV, convolutions)
GEMM_KERNEL_WORDS = ("gemm", "nvjet", "cutlass", "xmma", "cublas")
