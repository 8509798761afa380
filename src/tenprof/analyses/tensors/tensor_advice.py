"""What to do about a tensor that memory stalls were charged to: one sentence, from what is known of it.

Rules, first match wins (each states the evidence it uses):
1. read by GEMMs (the ops are matrix multiplies, or the kernels are cuBLAS/CUTLASS GEMMs): a GEMM reads
   its operands in tiles, transposed or not, so layout is not the problem; its bytes are (lower
   precision), or how many GEMMs read it;
2. the access pass measured how its warps read it (analyses.tensors.access_patterns): strided reads say the
   stride, the dimension, the sectors per request against the ideal and, when the same kernel reads
   another operand coalesced through a non-contiguous view, that the op walks that operand's order;
   gathers say how few useful bytes each sector brings; scattered reads their sector ratio;
2b. read by a gather/index/embedding kernel (no pattern measured): the addresses come from an index
   tensor; sort or group the indices so neighbouring threads read neighbouring rows, or keep the hot
   rows in a smaller table;
2c. a non-contiguous view its kernel was measured reading coalesced while reading another operand
   strided: the kernel walks the view's order, so the view's layout makes the other read strided;
3. the tensor is a non-contiguous view (strides not row-major) made by a layout op (t, transpose,
   permute, expand, ...) and no read of it was measured coalesced: the kernel reads it with strided
   loads; make it contiguous once where it is made when several ops read it, or produce it in the
   layout its readers want;
4. its storage was written by an op of the program (the base tensor's creator is not a factory or a
   copy of a parameter): written to memory by one op and read back by the next; fusing them
   (torch.compile) keeps it out of memory;
5. otherwise: a memory-bound read of this tensor; check it is read once and coalesced (with the
   measured pattern: coalesced, and how many times over each launch reads it).
"""

from __future__ import annotations

from tenprof.analyses.op_kinds import GEMM_KERNEL_WORDS, GEMM_OPS
from tenprof.analyses.tensors.access_patterns import AccessPattern, LoadPatterns, describe
from tenprof.analyses.tensors.tensor_forest import Forest
from tenprof.analyses.tensors.tensor_stall_cost import TensorCost
from tenprof.core import units

_GEMM_OR_GEMV_WORDS = (*GEMM_KERNEL_WORDS, "gemv")
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


def advice(cost: TensorCost, forest: Forest, patterns: LoadPatterns | None = None) -> str:
    t = cost.tensor_id
    telling = patterns.telling_read(t, cost.kernels) if patterns is not None else None
    read = [telling] if telling is not None else []
    kernels = " ".join(cost.kernels).lower()
    if (
        cost.inferred >= cost.samples / 2
        or (cost.ops and set(cost.ops) <= GEMM_OPS)
        or (not cost.ops and any(w in kernels for w in _GEMM_OR_GEMV_WORDS))
    ):
        return (
            "a GEMM operand: GEMMs read it in tiles whatever its layout, so the cost is its bytes; use lower "
            "precision (bf16/fp8) or have fewer GEMMs read it"
        )
    if read and patterns is not None and (said := pattern_advice(read[0], patterns, forest)):
        return said
    if not read and any(w in kernels for w in GATHER_WORDS):
        return (
            "read by a gather through an index tensor: sort or group the indices so neighbouring threads read "
            "neighbouring rows, or keep the hot rows in a smaller table"
        )
    coalesced = read and read[0].kind == "coalesced"
    if coalesced and patterns is not None and (said := _walked_view_advice(read[0], patterns, forest)):
        return said
    view_op = str(forest.columns["view_op"][t])
    # a view read coalesced (measured) is not read with strided loads, whatever its strides
    if not coalesced and int(forest.columns["parent_tensor_id"][t]) >= 0 and not forest.is_contiguous(t):
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
    if read:
        return f"memory-bound reads of this tensor, measured {describe(read[0])}: the layout is not the problem"
    return "memory-bound reads of this tensor: check that each kernel reads it once and coalesced"


def _walked_view_advice(p: AccessPattern, patterns: LoadPatterns, forest: Forest) -> str | None:
    """A non-contiguous view the kernel read coalesced while it read another operand strided: the kernel
    walks this view's order (TensorIterator follows its inputs' layouts), so the view's layout is what
    makes the other read strided. None where that is not what was measured."""
    t = p.tensor_id
    if forest.is_contiguous(t):
        return None
    strided = next((q for q in patterns.peers(p) if q.kind == "strided"), None)
    if strided is None:
        return None
    view = str(forest.columns["view_op"][t]) or "a view"
    measured = describe(p).removeprefix("coalesced, ")
    return (
        f"read coalesced ({measured}), but the kernel walks this view's order ({view}), which makes it read "
        f"T{strided.tensor_id} strided ({strided.sectors_per_request:.1f} sectors per request where "
        f"{strided.ideal_per_request:.1f} would do); give both the same layout (T{t}.contiguous() where it is "
        f"made, or T{strided.tensor_id} in this layout)"
    )


def pattern_advice(p: AccessPattern, patterns: LoadPatterns, forest: Forest) -> str | None:
    """What the measured pattern of the tensor's telling read says to do; None where it reads well."""
    t = p.tensor_id
    traffic = f"{p.sectors_per_request:.1f} sectors per request where {p.ideal_per_request:.1f} would do"
    if p.kind == "strided" and p.stride is not None:
        elements = f" = {p.stride_elements} elements" if p.stride_elements is not None else ""
        along = f" along dim {p.stride_dim}" if p.stride_dim is not None else ""
        said = f"read with {units.size(p.stride)}{elements}{along} between neighbouring threads: {traffic}"
        leader = next(
            (q for q in patterns.peers(p) if q.kind == "coalesced" and not forest.is_contiguous(q.tensor_id)), None
        )
        if leader is not None:
            view = str(forest.columns["view_op"][leader.tensor_id]) or "a view"
            said += (
                f", because the kernel walks T{leader.tensor_id}'s order ({view}, read coalesced); give both operands "
                f"the same layout (T{leader.tensor_id}.contiguous() where it is made, or T{t} in that layout)"
            )
        else:
            said += "; lay it out so that neighbouring threads read neighbouring elements (permute, or .contiguous())"
        return f"{said}; read coalesced it would move about {1 / p.excess:.0%} of the sectors it does"
    if p.kind == "gather":
        useful = p.bytes / p.sectors if p.sectors else 0.0
        return (
            f"random reads: {useful:.1f} useful bytes per 32-byte sector ({p.distinct_share:.0%} of lanes in a sector "
            "of their own); sort or group the indices so neighbouring threads read neighbouring elements, or keep "
            "the hot rows in a smaller table"
        )
    if p.kind == "scattered":
        return f"partly coalesced reads: {traffic} ({p.excess:.1f}x the traffic of a contiguous read)"
    return None
