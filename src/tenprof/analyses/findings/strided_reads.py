"""strided-elementwise: an elementwise or reduction op (one TensorIterator kernel) whose tensor inputs of one
shape lie in memory in different orders (`a.t() + b`), read from the input strides a trace records with its
shapes. Fused library kernels (attention, GEMMs, convolutions) take strided operands by design and are not
judged.

TensorIterator walks the output in the memory order of the first input (the output takes its layout), so
an input whose order differs is read across it: every access strided, far below the bandwidth the same op
gets on matching layouts. The cost is the op's kernel time less what its bytes would take at the
bandwidth the profile's own elementwise ops reach with matching layouts (the 90th percentile of theirs), so
it is what matching layouts would save; without such a reference in the profile nothing is claimed.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import orjson

from tenprof.analyses.findings.context import Context
from tenprof.analyses.findings.copies import DTYPE_BYTES
from tenprof.analyses.findings.model import Finding
from tenprof.core.quantities import duration

MIN_KERNEL_NS = 10_000  # shorter launches are latency, not bandwidth: no reference, no verdict
# A copy between layouts reads across one of them by definition: whether it should happen at all is the
# hidden-copies check's question, and its time is charged there.
COPIES = {"aten::copy_", "aten::contiguous", "aten::clone", "aten::_to_copy", "aten::to", "aten::reshape"}


def _order(shape: list[int], strides: list[int]) -> tuple[int, ...]:
    """The dimensions from outermost to innermost in memory, size-1 dimensions left out."""
    dims = [d for d in range(len(shape)) if shape[d] > 1]
    return tuple(sorted(dims, key=lambda d: -strides[d]))


@functools.lru_cache(maxsize=4096)  # a run repeats a few thousand signatures over millions of ops
def _tensors(shapes: str, strides: str, dtypes: str) -> list[tuple[list[int], list[int], int]]:
    """(shape, strides, element bytes) of each tensor input, in order (shared between calls: read only)."""
    try:
        dims, steps, types = orjson.loads(shapes), orjson.loads(strides), orjson.loads(dtypes)
    except orjson.JSONDecodeError:
        return []
    out = []
    for dim, step, dtype in zip(dims, steps, types, strict=False):
        if _ints(dim) and _ints(step) and len(step) == len(dim):  # a tensor (a list of them is skipped)
            out.append((dim, step, DTYPE_BYTES.get(str(dtype), 4)))
    return out


@functools.lru_cache(maxsize=4096)
def _layout(shapes: str, strides: str, dtypes: str) -> tuple[int, float] | None:
    """For an op of this signature: (the first input of the first's shape stored in another memory order,
    or 0 when all match; bytes moved: those inputs read and the output written), or None when the op is
    no elementwise op over tensors of two or more dimensions."""
    tensors = _tensors(shapes, strides, dtypes)
    if not tensors:
        return None
    shape0 = tensors[0][0]
    order0 = _order(shape0, tensors[0][1])
    if len(shape0) < 2 or len(order0) < 2:
        return None
    elements = math.prod(shape0)
    same = [t for t in tensors if t[0] == shape0]
    moved = float(sum(elements * t[2] for t in same) + elements * tensors[0][2])  # reads + the write
    odd = [j for j, t in enumerate(tensors) if j > 0 and t[0] == shape0 and _order(t[0], t[1]) != order0]
    return (odd[0] if odd else 0), moved


def _iterates_tensors(kernel: str) -> bool:
    """TensorIterator's kernels (elementwise and reductions: `at::native::vectorized_elementwise_kernel`,
    `elementwise_kernel`, `unrolled_elementwise_kernel`, `reduce_kernel`), the ones that walk the output
    in the first input's memory order."""
    return "at::native::" in kernel and ("elementwise_kernel" in kernel or "reduce_kernel" in kernel)


def _ints(value: object) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(x, int) for x in value)


def check(ctx: Context) -> list[Finding]:
    ops = ctx.profile.table("ops")
    if ops.num_rows == 0 or "input_strides" not in ops.column_names:
        return []
    strides = ctx.profile.strings("ops", "input_strides")
    if strides.values in ([], [""]):
        return []
    k = ctx.profile.table("kernels")
    k_op, k_dur = k.column("op_id").to_numpy(), k.column("duration_ns").to_numpy()
    inside = ctx.kernels_in_steps & (k_op >= 0)
    time_of = np.bincount(k_op[inside], weights=k_dur[inside], minlength=ops.num_rows)
    launches = np.bincount(k_op[inside], minlength=ops.num_rows)
    iterated = ctx.profile.strings("kernels", "name").where(_iterates_tensors)
    # only ops whose one kernel is TensorIterator's: a library kernel (attention, GEMM, convolution) reads
    # its operands in the order it is written for, whatever their strides
    launches_iterated = np.bincount(k_op[inside & iterated], minlength=ops.num_rows)
    shapes, dtypes = ctx.profile.strings("ops", "input_shapes"), ctx.profile.strings("ops", "input_dtypes")
    matching_bw: list[float] = []
    mismatched: list[tuple[int, int, float]] = []  # op, the operand read across, bytes
    in_a_copy = ctx.named_ancestors(frozenset(COPIES)) >= 0
    candidates = np.flatnonzero((time_of >= MIN_KERNEL_NS) & (launches == 1) & (launches_iterated == 1) & ~in_a_copy)
    signatures = np.stack([shapes.codes[candidates], strides.codes[candidates], dtypes.codes[candidates]], axis=1)
    for op, (shape, stride, dtype) in zip(candidates.tolist(), signatures.tolist(), strict=True):
        layout = _layout(shapes.values[shape], strides.values[stride], dtypes.values[dtype])
        if layout is None:
            continue
        odd, moved = layout
        if odd:
            mismatched.append((op, odd, moved))
        else:
            matching_bw.append(moved / float(time_of[op]))
    if not mismatched or not matching_bw:
        return []
    reference = float(np.percentile(matching_bw, 90))  # bytes per ns
    cost = 0
    worst: tuple[int, int, int] | None = None  # saving, op, operand
    for op, operand, moved in mismatched:
        saving = max(0, int(time_of[op] - moved / reference))
        cost += saving
        if worst is None or saving > worst[0]:
            worst = (saving, op, operand)
    if worst is None or cost < ctx.t.names_min_share * ctx.steps_kernel_ns:
        return []
    _, op, operand = worst
    tensors = _tensors(shapes.at(op), strides.at(op), dtypes.at(op))
    moved = next(m for o, _, m in mismatched if o == op)
    achieved = moved / float(time_of[op])
    ops_ids = np.array([o for o, _, _ in mismatched], dtype=np.int64)
    return [
        Finding(
            id="strided-elementwise",
            title=f"{ctx.op_name(op)} reads input {operand + 1} across its memory order: {duration(cost)} of GPU time "
            "lost to strided reads",
            cost_ns=cost,
            seen=[
                f"{len(mismatched)} launch(es) whose inputs of one shape lie in different memory orders",
                f"{ctx.op_name(op)}: input 1 strides {tensors[0][1]}, "
                f"input {operand + 1} strides {tensors[operand][1]} "
                f"(shape {tensors[0][0]}); it moved {achieved:.0f} GB/s, "
                f"{achieved / reference:.0%} of the {reference:.0f} GB/s this profile's elementwise ops reach "
                "with matching layouts",
            ],
            where=ctx.where(ops_ids, time_of[ops_ids].astype(np.int64)),
            why="The op walks memory in its first input's order; the input stored in another order is read "
            "across it, so each load fetches a new cache line for one element.",
            fix=f"Give the inputs one layout: make input {operand + 1} match input 1 once, outside the loop (store "
            "the transposed tensor transposed, or .contiguous() it where it is made), or make input 1 "
            "contiguous if it is the view.",
            numbers={"lost_ns": float(cost), "achieved_gbps": achieved, "reference_gbps": reference},
        )
    ]
