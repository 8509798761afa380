"""What to do about a tensor that memory stalls were charged to: one sentence, from what is known of it.

Rules, first match wins (each states the evidence it uses):
1. charged through an asynchronous-copy kernel's inputs (inferred; GEMMs with TMA/cp.async): the GEMM
   already reads in tiles; cut the bytes (lower precision) or the number of GEMMs that read it;
2. read by a gather/index/embedding kernel: the addresses come from an index tensor; sort or group the
   indices so neighbouring threads read neighbouring rows, or keep the hot rows in a smaller table;
3. the tensor is a non-contiguous view (strides not row-major) made by a layout op (t, transpose,
   permute, expand, ...): the kernel reads it with strided loads; make it contiguous once where it is
   made when several ops read it, or produce it in the layout its readers want;
4. made by an op and read by a later one (an intermediate): write-then-read through memory; fusing the
   two ops (torch.compile) keeps it in registers;
5. otherwise: a memory-bound read of this tensor; check it is read once and coalesced.
"""

from __future__ import annotations

from tenprof.analyses.tensor_forest import Forest
from tenprof.analyses.tensor_stall_cost import TensorCost

GATHER_WORDS = ("gather", "index", "embedding", "scatter")
SOURCE_OPS = (
    "aten::randn",
    "aten::rand",
    "aten::randint",
    "aten::empty",
    "aten::zeros",
    "aten::ones",
    "aten::_to_copy",
    "aten::lift_fresh",
)


def advice(cost: TensorCost, forest: Forest) -> str:
    t = cost.tensor_id
    kernels = " ".join(cost.kernels).lower()
    if cost.inferred >= cost.samples / 2:
        return (
            "read by a GEMM through asynchronous (TMA/cp.async) copies, charged by input bytes: the GEMM already "
            "reads it in tiles; cut its bytes (bf16/fp8) or how many GEMMs read it"
        )
    if any(w in kernels for w in GATHER_WORDS):
        return (
            "read by a gather through an index tensor: sort or group the indices so neighbouring threads read "
            "neighbouring rows, or keep the hot rows in a smaller table"
        )
    view_op = str(forest.columns["view_op"][t])
    if int(forest.columns["parent_tensor_id"][t]) >= 0 and not forest.is_contiguous(t):
        return (
            f"read through a non-contiguous view ({view_op or 'view'}): the kernel's loads are strided; call "
            ".contiguous() once where it is made if several ops read it, or produce it in the layout its readers want"
        )
    creator = forest.creator_op(t)
    if creator and creator not in SOURCE_OPS:
        return (
            f"an intermediate written by {creator} and read back from memory: fusing the two ops "
            "(torch.compile) keeps it out of memory"
        )
    return "memory-bound reads of this tensor: check that each kernel reads it once and coalesced"
