"""Rule group 5, reductions, softmax and its backward, layer norm and batch norm.

FLOPs are per input element; the output's size (for bytes) comes from the reduced dims and dtype arguments, and
stays unknown when they cannot be read.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from tenprof.analyses.perf_model.op_cost.arguments import (
    SIXTEEN_BIT,
    Arg,
    Call,
    Shape,
    accumulate_dtype,
    bool_value,
    bools_value,
    dtype_value,
    int_of,
    ints_value,
    list_items,
    numel_of,
)
from tenprof.analyses.perf_model.op_cost.result import (
    Handler,
    OpCost,
    Traffic,
    cost,
    read,
    traffic,
    unknown,
    write,
)

_INTEGRAL_TO_INT64 = frozenset({"bool", "uint8", "int8", "int16", "int32", "int64"})


@dataclass(frozen=True)
class _Reduction:
    dims: Shape | None  # () reduces every dim; None: unreadable
    out_dtype: str | None  # None: unreadable
    with_indices: bool = False  # max.dim / min.dim also write int64 indices


def _dims_value(call: Call, index: int) -> Shape | None:
    """Reduced dims: () for all (an absent or empty list, as aten reads it), None when unreadable."""
    arg = call.arg(index)
    if arg.absent and index < len(call.args):
        return ()
    value = arg.value
    if not value:
        return None
    numbers = [int_of(item) for item in list_items(value)]
    return None if any(n is None for n in numbers) else tuple(n for n in numbers if n is not None)


def _sum_default(x: Arg) -> str:
    # sum and prod of integral or bool tensors accumulate into int64.
    return "int64" if x.dtype in _INTEGRAL_TO_INT64 else x.dtype


def _plan_sum(call: Call, x: Arg) -> _Reduction:
    # sum(self, *, dtype) / sum.dim_IntList(self, dim, keepdim, *, dtype); mean the same.
    default = x.dtype if call.name == "aten::mean" else _sum_default(x)
    if len(call.args) <= 2:
        return _Reduction((), dtype_value(call, 1, default) if len(call.args) == 2 else default)
    return _Reduction(_dims_value(call, 1), dtype_value(call, 3, default))


def _plan_prod(call: Call, x: Arg) -> _Reduction:
    # prod(self, *, dtype) / prod.dim_int(self, dim, keepdim, *, dtype)
    if len(call.args) <= 2:
        return _Reduction((), dtype_value(call, 1, _sum_default(x)) if len(call.args) == 2 else _sum_default(x))
    return _Reduction(_dims_value(call, 1), dtype_value(call, 3, _sum_default(x)))


def _plan_amax(call: Call, x: Arg) -> _Reduction:
    # amax(self, dim=[], keepdim)
    return _Reduction(_dims_value(call, 1) if len(call.args) > 1 else (), x.dtype)


def _plan_max(call: Call, x: Arg) -> _Reduction:
    # max(self) / max.dim(self, dim, keepdim) -> (values, indices)
    if len(call.args) <= 1:
        return _Reduction((), x.dtype)
    return _Reduction(_dims_value(call, 1), x.dtype, with_indices=True)


def _plan_var(call: Call, x: Arg) -> _Reduction:
    # var(self, unbiased) / var.dim(self, dim, unbiased, keepdim) / var.correction(self, dim, *, correction, keepdim)
    return _Reduction(() if len(call.args) <= 2 else _dims_value(call, 1), x.dtype)


def _plan_norm(call: Call, x: Arg) -> _Reduction:
    # norm.Scalar(self, p) / norm.ScalarOpt_dtype(self, p, *, dtype) / norm.ScalarOpt_dim(self, p, dim, keepdim)
    # / norm.ScalarOpt_dim_dtype(self, p, dim, keepdim, *, dtype)
    if len(call.args) <= 3:
        return _Reduction((), dtype_value(call, 2, x.dtype) if len(call.args) == 3 else x.dtype)
    return _Reduction(_dims_value(call, 2), dtype_value(call, 4, x.dtype) if len(call.args) >= 5 else x.dtype)


def _plan_vector_norm(call: Call, x: Arg) -> _Reduction:
    # linalg_vector_norm(self, ord, dim, keepdim, *, dtype)
    return _Reduction(_dims_value(call, 2), dtype_value(call, 4, x.dtype))


def _reduced_elements(shape: Shape, dims: Shape) -> int | None:
    """Elements left after reducing `dims` (all when empty); keepdim only inserts 1s, so it never matters."""
    ndim = max(len(shape), 1)
    picked = set()
    for dim in dims or range(ndim):
        wrapped = dim + ndim if dim < 0 else dim
        if not 0 <= wrapped < ndim:
            return None
        picked.add(wrapped)
    return math.prod(size for axis, size in enumerate(shape) if axis not in picked)


def reduction_handler(
    plan: Callable[[Call, Arg], _Reduction], per_element: int, what: str, pairwise: Handler | None = None
) -> Handler:
    def handler(call: Call) -> OpCost:
        x = call.tensor(0)
        if x is None or x.shape is None:
            return unknown(call)
        if pairwise is not None and call.tensor(1) is not None:
            return pairwise(call)  # max.other / min.other: elementwise maximum / minimum
        reduction = plan(call, x)
        elements = None if reduction.dims is None else _reduced_elements(x.shape, reduction.dims)
        parts = [read(x), write(elements, reduction.out_dtype)]
        if reduction.with_indices:
            parts.append(write(elements, "int64"))
        rule = f"{per_element} per input element ({what})"
        return cost(per_element * x.numel, traffic(parts), x.dtype, False, rule)

    return handler


def softmax(per_element: int, backward: bool) -> Handler:
    """_softmax(self, dim, half_to_float), softmax.int(self, dim, dtype), _softmax_backward_data(grad, out, dim,
    input_dtype) and their log_ twins: the output has the input's shape; only its dtype needs the values."""

    def handler(call: Call) -> OpCost:
        x = call.tensor(0)
        tensors = call.tensors()
        if x is None or x.shape is None or tensors is None:
            return unknown(call)
        out_dtype = _softmax_out_dtype(call, x, backward)
        moved = traffic([*(read(t) for t in tensors), write(x.numel, out_dtype)])
        rule = f"{per_element} per element ({'backward' if backward else 'max, subtract, exp, sum, normalise'})"
        return cost(per_element * x.numel, moved, x.dtype, False, rule)

    return handler


def _softmax_out_dtype(call: Call, x: Arg, backward: bool) -> str | None:
    if backward:
        # input_dtype names the forward input's dtype; a float32 grad may belong to a half_to_float softmax.
        recorded = dtype_value(call, 3, x.dtype)
        return recorded if recorded is not None or x.dtype == "float32" else x.dtype
    if call.name.startswith("aten::_"):
        # half_to_float: a 16-bit input may be written as float32; other inputs keep their dtype either way.
        half_to_float = bool_value(call, 2)
        if half_to_float is None:
            return None if x.dtype in SIXTEEN_BIT else x.dtype
        return "float32" if half_to_float else x.dtype
    return dtype_value(call, 2, x.dtype) if len(call.args) > 2 else x.dtype


def layer_norm(call: Call) -> OpCost:
    # (input, normalized_shape, weight?, bias?, eps) -> (out, mean, rstd); mean/rstd hold one value per row.
    x, weight, bias = call.tensor(0), call.tensor(2), call.tensor(3)
    if x is None or x.shape is None:
        return unknown(call)
    per_element = 5 + (weight is not None) + (bias is not None)
    # normalized_shape from the values, else from the weight's (or bias's) shape, which equals it
    normalized = ints_value(call, 1)
    affine = weight if weight is not None else bias
    if normalized is None and affine is not None:
        normalized = affine.shape
    norm_ndim = None if normalized is None else len(normalized)
    rows = None
    if norm_ndim is not None and 0 < norm_ndim <= len(x.shape):
        rows = numel_of(x.shape[: len(x.shape) - norm_ndim])
    stats = accumulate_dtype(x.dtype)
    reads = [read(t) for t in (x, weight, bias) if t is not None]
    moved = traffic([*reads, (x.numel, x.dtype), write(rows, stats), write(rows, stats)])
    rule = f"{per_element} per element (statistics 3, normalise 2, affine 1 each)"
    return cost(per_element * x.numel, moved, x.dtype, False, rule)


def layer_norm_backward(call: Call) -> OpCost:
    # (grad_out, input, normalized_shape, mean, rstd, weight?, bias?, output_mask). bias is passed for its shape
    # only and is not read.
    grad, x, mean, rstd, weight, bias = (call.tensor(i) for i in (0, 1, 3, 4, 5, 6))
    if grad is None or x is None or grad.shape is None or x.shape is None:
        return unknown(call)
    mask = bools_value(call, 7, 3) or (True, weight is not None, bias is not None)
    flops = x.numel * (10 * int(mask[0]) + 2 * int(mask[1]) + int(mask[2]))
    parts: list[Traffic | None] = [read(t) for t in (grad, x, mean, rstd, weight) if t is not None]
    params = weight if weight is not None else bias
    if mask[0]:
        parts.append((x.numel, x.dtype))
    for wanted in (mask[1], mask[2]):
        if wanted:
            parts.append(None if params is None else (params.numel, params.dtype))
    rule = "per element: 10 grad_input, 2 grad_weight, 1 grad_bias (per output_mask)"
    return cost(flops, traffic(parts), x.dtype, False, rule)


def batch_norm(call: Call) -> OpCost:
    # native_batch_norm / cudnn_batch_norm / _batch_norm_impl_index:
    # (input, weight?, bias?, running_mean?, running_var?, training, ...)
    x = call.tensor(0)
    if x is None or x.shape is None or len(x.shape) < 2:
        return unknown(call)
    weight, bias, running_mean, running_var = (call.tensor(i) for i in (1, 2, 3, 4))
    training = bool_value(call, 5)
    if running_mean is None and running_var is None:
        training = True  # without running statistics only batch statistics can normalise
    if training is None:
        return unknown(call)
    per_element = (5 if training else 2) + (weight is not None) + (bias is not None)
    reads = [read(t) for t in (x, weight, bias, running_mean, running_var) if t is not None]
    parts: list[Traffic | None] = [*reads, (x.numel, x.dtype)]
    if training:
        # running statistics are updated in place, and the batch mean and inverse std are saved for backward
        parts += [(t.numel, t.dtype) for t in (running_mean, running_var) if t is not None]
        parts += [(x.shape[1], accumulate_dtype(x.dtype))] * 2
    rule = f"{per_element} per element ({'batch statistics 3, ' if training else ''}normalise 2, affine 1 each)"
    return cost(per_element * x.numel, traffic(parts), x.dtype, False, rule)


def batch_norm_backward(call: Call) -> OpCost:
    # native_batch_norm_backward / batch_norm_backward: (grad_out, input, weight?, running_mean?,
    # running_var?, save_mean?, save_invstd?, train, eps, output_mask, ...). The per-channel statistics and
    # parameters are read once; grad_out and input are read whole, grad_input written whole.
    grad, x, weight = call.tensor(0), call.tensor(1), call.tensor(2)
    if grad is None or x is None or grad.shape is None or x.shape is None or len(x.shape) < 2:
        return unknown(call)
    mask = bools_value(call, 9, 3) or (True, weight is not None, weight is not None)
    flops = x.numel * (10 * int(mask[0]) + 2 * int(mask[1]) + int(mask[2]))
    statistics = [call.tensor(i) for i in (3, 4, 5, 6)]
    parts: list[Traffic | None] = [read(t) for t in (grad, x, weight, *statistics) if t is not None]
    if mask[0]:
        parts.append((x.numel, x.dtype))
    channels = (x.shape[1], accumulate_dtype(x.dtype))
    parts += [channels for wanted in mask[1:] if wanted]
    rule = "per element: 10 grad_input, 2 grad_weight, 1 grad_bias (per output_mask)"
    return cost(flops, traffic(parts), x.dtype, False, rule)


# Each reduction op: its plan (reduced dims, output dtype), FLOPs per input element and what they count.
REDUCTION_PLANS: dict[str, tuple[Callable[[Call, Arg], _Reduction], int, str]] = {
    "sum": (_plan_sum, 1, "add"),
    "mean": (_plan_sum, 1, "add"),
    "amax": (_plan_amax, 1, "compare"),
    "amin": (_plan_amax, 1, "compare"),
    "max": (_plan_max, 1, "compare"),
    "min": (_plan_max, 1, "compare"),
    "prod": (_plan_prod, 1, "multiply"),
    "var": (_plan_var, 3, "subtract mean, square, accumulate"),
    "std": (_plan_var, 3, "subtract mean, square, accumulate"),
    "norm": (_plan_norm, 2, "square or abs, accumulate"),
    "linalg_vector_norm": (_plan_vector_norm, 2, "square or abs, accumulate"),
}
