"""What to do about a tensor that memory stalls were charged to: one sentence, from what is known of it.

Rules, first match wins (each states the evidence it uses):
1. read by GEMMs (the ops are matrix multiplies, or the kernels are cuBLAS/CUTLASS GEMMs): a GEMM reads
   its operands in tiles, transposed or not, so layout is not the problem; its bytes are (lower
   precision), or how many GEMMs read it;
2. read by a gather/index/embedding kernel: the addresses come from an index tensor; sort or group the
   indices so neighbouring threads read neighbouring rows, or keep the hot rows in a smaller table;
3. the tensor is a non-contiguous view (strides not row-major) made by a layout op (t, transpose,
   permute, expand, ...): the kernel reads it with strided loads; make it contiguous once where it is
   made when several ops read it, or produce it in the layout its readers want;
4. its storage was written by an op of the program (the base tensor's creator is not a factory or a
   copy of a parameter): written to memory by one op and read back by the next; fusing them
   (torch.compile) keeps it out of memory;
5. otherwise: a memory-bound read of this tensor; check it is read once and coalesced.
"""

from __future__ import annotations

from tenprof.analyses.op_kinds import GEMM_OPS
from tenprof.analyses.tensor_forest import Forest
from tenprof.analyses.tensor_stall_cost import TensorCost

GEMM_KERNEL_WORDS = ("gemm", "gemv", "nvjet", "xmma", "cutlass", "cublas")
GATHER_WORDS = ("gather", "index", "embedding", "scatter")
# Ops whose outputs are inputs of the program, not intermediates of it.
SOURCE_OPS = {
    "aten::randn",
    "aten::rand",
    "aten::randint",
    "aten::normal_",
    "aten::uniform_",
    "aten::empty",
    "aten::empty_strided",
    "aten::zeros",
    "aten::ones",
    "aten::full",
    "aten::_to_copy",
    "aten::lift_fresh",
    "aten::lift_fresh_copy",
}


def advice(cost: TensorCost, forest: Forest) -> str:
    t = cost.tensor_id
    kernels = " ".join(cost.kernels).lower()
    if (
        cost.inferred >= cost.samples / 2
        or (cost.ops and set(cost.ops) <= GEMM_OPS)
        or (not cost.ops and any(w in kernels for w in GEMM_KERNEL_WORDS))
    ):
        return (
            "a GEMM operand: GEMMs read it in tiles whatever its layout, so the cost is its bytes; use lower "
            "precision (bf16/fp8) or have fewer GEMMs read it"
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
    base = forest.path_to_root(t)[-1]
    writer = forest.creator_op(base)
    if writer and writer not in SOURCE_OPS:
        reader = ", ".join(cost.ops[:2]) or "the next op"
        return (
            f"written to memory by {writer} and read back by {reader}: fusing them (torch.compile) keeps it "
            "out of memory"
        )
    return "memory-bound reads of this tensor: check that each kernel reads it once and coalesced"
