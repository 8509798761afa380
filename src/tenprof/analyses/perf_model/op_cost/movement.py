"""Rule groups 6 and 7: data movement (copies, gathers, fills; 0 FLOPs) and views and allocation (0 FLOPs, 0 bytes).

Movement's bytes are known only where the row shows them: `to` and `contiguous` may return self, and cat's
tensors have no recorded dtypes.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from tenprof.analyses.perf_model.op_cost.arguments import Arg, Call, Shape, bool_value, dtype_value, int_value
from tenprof.analyses.perf_model.op_cost.result import OpCost, Traffic, read, traffic, unknown, write

# ---------------------------------------------------------------------------------------------------------------
# 6. Data movement (0 FLOPs)

_MOVE_RULE = "0 (data movement)"


def _moved(flops_dtype: str, parts: Iterable[Traffic | None]) -> OpCost:
    return OpCost(flops=0.0, bytes=traffic(parts), dtype=flops_dtype, matmul=False, rule=_MOVE_RULE)


def copy_into(call: Call) -> OpCost:
    # copy_(self, src, non_blocking): reads src, writes self.
    dst, src = call.tensor(0), call.tensor(1)
    if dst is None or src is None:
        return unknown(call)
    return _moved(dst.dtype, [read(src), (dst.distinct, dst.dtype)])


def _copy_as(x: Arg, target: str | None) -> OpCost:
    """A fresh dense copy of x in `target` (None: unknown dtype, so unknown bytes)."""
    return _moved(target or x.dtype, [read(x), write(x.numel, target)])


def to_copy(call: Call) -> OpCost:
    # _to_copy(self, *, dtype?, layout?, device?, pin_memory?, non_blocking, memory_format?)
    x = call.tensor(0)
    if x is None:
        return unknown(call)
    return _copy_as(x, dtype_value(call, 1, x.dtype))


def to(call: Call) -> OpCost:
    """aten::to returns self when nothing changes, else copies through _to_copy. Which overload ran shows in the
    argument count: to.dtype (self, dtype, non_blocking, copy, memory_format), to.other (self, other, ...),
    to.device (self, device, dtype, non_blocking, copy, memory_format), to.dtype_layout (self, dtype, layout,
    device, pin_memory, non_blocking, copy, memory_format)."""
    x = call.tensor(0)
    if x is None:
        return unknown(call)
    count = len(call.args)
    other = call.tensor(1)
    if count == 5 and other is not None:
        target: str | None = other.dtype
        may_move_device = True
    elif count in (5, 6, 8):
        target = dtype_value(call, 2 if count == 6 else 1, x.dtype)
        may_move_device = count != 5
    else:
        return _moved(x.dtype, [None])
    if target is not None and target != x.dtype:
        return _copy_as(x, target)
    if target is None or may_move_device:
        return _moved(x.dtype, [None])  # same dtype: a copy only if the (unrecorded) device changes
    forced = bool_value(call, 3)
    if forced is None:
        return _moved(x.dtype, [None])
    return _copy_as(x, x.dtype) if forced else _moved(x.dtype, [])


def clone(call: Call) -> OpCost:
    x = call.tensor(0)
    return unknown(call) if x is None else _copy_as(x, x.dtype)


def _is_dense(shape: Shape, stride: Shape, fastest_first: Sequence[int]) -> bool:
    expected = 1
    for axis in fastest_first:
        if shape[axis] != 1 and stride[axis] != expected:
            return False
        expected *= shape[axis]
    return True


def contiguous(call: Call) -> OpCost:
    # contiguous(self, memory_format): returns self when already laid out so; otherwise clone.
    x = call.tensor(0)
    if x is None or x.shape is None:
        return unknown(call)
    memory_format = int_value(call, 1) if len(call.args) > 1 else 0
    orders = {0: list(range(len(x.shape)))[::-1], 2: [1, 3, 2, 0], 3: [1, 4, 3, 2, 0]}
    order = orders.get(memory_format) if memory_format is not None else None
    if x.stride is None or order is None or len(x.stride) != len(x.shape) or sorted(order) != list(range(len(x.shape))):
        return _moved(x.dtype, [None])
    if x.numel == 0 or _is_dense(x.shape, x.stride, order):
        return _moved(x.dtype, [])
    return _copy_as(x, x.dtype)


def fill(call: Call) -> OpCost:
    # fill_(self, value) and zero_(self) write self and read nothing from memory that matters.
    x = call.tensor(0)
    return unknown(call) if x is None else _moved(x.dtype, [(x.distinct, x.dtype)])


def _gather(source: Arg, indices: Arg, out_elements: int | None) -> OpCost:
    # The gathered rows are read (as many elements as are written), plus the indices.
    return _moved(source.dtype, [read(indices), write(out_elements, source.dtype), write(out_elements, source.dtype)])


def index_select(call: Call) -> OpCost:
    # index_select(self, dim, index): the output is self with dim's size replaced by the index count.
    x, index, dim = call.tensor(0), call.tensor(2), int_value(call, 1)
    if x is None or index is None or x.shape is None:
        return unknown(call)
    out_elements = None
    ndim = max(len(x.shape), 1)
    if dim is not None and -ndim <= dim < ndim:
        kept = [size for axis, size in enumerate(x.shape) if axis != dim % ndim]
        out_elements = math.prod(kept) * index.numel
    return _gather(x, index, out_elements)


def embedding(call: Call) -> OpCost:
    # embedding(weight, indices, padding_idx, scale_grad_by_freq, sparse): output is indices.shape + [D].
    weight, indices = call.tensor(0), call.tensor(1)
    if weight is None or indices is None or weight.shape is None or len(weight.shape) != 2:
        return unknown(call)
    return _gather(weight, indices, indices.numel * weight.shape[1])


def cat(call: Call) -> OpCost:
    # Kineto records a TensorList's shapes (as a list of lists) but not its dtypes: the bytes cannot be sized.
    return OpCost(flops=0.0, bytes=None, dtype="", matmul=False, rule=_MOVE_RULE)


# ---------------------------------------------------------------------------------------------------------------
# 7. Views and allocation (no data moves)

# reshape, flatten and the *_as forms copy, when they must, through a child row (clone, _unsafe_view) of their own.
VIEWS = [
    *["view", "_unsafe_view", "_reshape_alias", "reshape", "reshape_as", "view_as", "flatten", "unflatten"],
    *["as_strided", "as_strided_", "expand", "expand_as", "transpose", "t", "permute", "movedim", "numpy_T"],
    *["slice", "select", "narrow", "squeeze", "squeeze_", "unsqueeze", "unsqueeze_", "unbind", "split"],
    *["split_with_sizes", "unsafe_split", "chunk", "detach", "detach_", "alias", "lift_fresh"],
    *["empty", "empty_strided", "empty_like", "resize_"],
]


def view(call: Call) -> OpCost:
    return OpCost(flops=0.0, bytes=0.0, dtype=call.first_dtype(), matmul=False, rule="0 (view or allocation)")
