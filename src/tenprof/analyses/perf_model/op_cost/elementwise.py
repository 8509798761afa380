"""Rule group 4, elementwise ops: per-element FLOPs, the broadcast output shape and the promoted result dtype.

`_elementwise` builds the handler of one op, out-of-place or in place; `_ELEMENTWISE` lists the ops it serves.
"""

from __future__ import annotations

from collections.abc import Sequence

from tenprof.analyses.perf_model.op_cost.arguments import REAL_PART, SIXTEEN_BIT, Arg, Call, Shape, numel_of
from tenprof.analyses.perf_model.op_cost.result import Handler, OpCost, Traffic, cost, read, traffic, unknown

# Per-output-element FLOPs of each elementwise op (see the package docstring for the multi-step ones).
ELEMENTWISE: dict[str, int] = {
    **dict.fromkeys(
        ["add", "sub", "mul", "div", "neg", "abs", "relu", "sigmoid", "tanh", "exp", "log", "sqrt", "rsqrt"], 1
    ),
    **dict.fromkeys(["pow", "reciprocal", "clamp", "clamp_min", "clamp_max", "where", "maximum", "minimum"], 1),
    **dict.fromkeys(["eq", "ne", "lt", "le", "gt", "ge", "masked_fill", "square", "threshold_backward"], 1),
    "gelu": 5,
    "silu": 2,
    "addcmul": 2,
    "addcdiv": 2,
    "lerp": 2,
    "sigmoid_backward": 3,
    "tanh_backward": 3,
    "silu_backward": 6,
    "gelu_backward": 11,
}
_COMPARISONS = frozenset({"eq", "ne", "lt", "le", "gt", "ge"})
# Elementwise ops without an aten in-place form: there is no aten::where_, aten::maximum_ or *_backward_.
NO_INPLACE = frozenset(
    {"where", "maximum", "minimum", "threshold_backward", "sigmoid_backward", "tanh_backward", "silu_backward"}
    | {"gelu_backward"}
)


def _broadcast(shapes: Sequence[Shape]) -> Shape | None:
    ndim = max((len(shape) for shape in shapes), default=0)
    out = []
    for axis in range(ndim):
        sizes = {shape[axis - ndim + len(shape)] for shape in shapes if axis - ndim + len(shape) >= 0} - {1}
        if len(sizes) > 1:
            return None
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


# Floating dtypes by the width torch promotes to (complex above real); float16 with bfloat16 promotes to float32.
_FLOAT_RANK = {"float8": 0, "float4": 0, "float16": 1, "bfloat16": 1, "float32": 2, "float64": 3}
_FLOAT_RANK.update({"complex32": 4, "complex64": 5, "complex128": 6})


def _promoted(dtypes: Sequence[str]) -> str:
    widest = max(dtypes, key=_FLOAT_RANK.__getitem__)
    return "float32" if widest in SIXTEEN_BIT and {"float16", "bfloat16"} <= set(dtypes) else widest


def _result_dtype(tensors: Sequence[Arg]) -> str:
    """The dtype an elementwise result is computed in, by torch's promotion as far as the row shows it.

    Tensors with dims decide: their widest floating dtype, else the first non-bool one. A 0-dim tensor only lifts
    the category: a floating one beside integral tensors is usually a Python number (recorded as a 0-dim "double"),
    which gives the default dtype, float32.
    """
    dimmed = [t.dtype for t in tensors if t.shape]
    zero_dim = [t.dtype for t in tensors if not t.shape]
    floating = [d for d in dimmed if d in _FLOAT_RANK]
    if floating:
        return _promoted(floating)
    floating_zero_dim = [d for d in zero_dim if d in _FLOAT_RANK]
    if floating_zero_dim:
        return "float32" if dimmed and floating_zero_dim[0] == "float64" else _promoted(floating_zero_dim)
    return next((d for d in dimmed + zero_dim if d not in ("bool", "")), next(iter(dimmed + zero_dim), ""))


def elementwise(base: str, inplace: bool) -> Handler:
    per_element = ELEMENTWISE[base]

    def handler(call: Call) -> OpCost:
        tensors = call.tensors()
        if not tensors or (base == "where" and len(call.args) < 3):  # where(condition) is nonzero, not a select
            return unknown(call)
        compute = _result_dtype(tensors)
        if inplace:
            self_arg = call.tensor(0)
            if self_arg is None or self_arg.shape is None:
                return unknown(call)
            out_shape: Shape | None = self_arg.shape
            out: Traffic | None = (self_arg.distinct, self_arg.dtype)
        else:
            out_shape = _broadcast([t.shape for t in tensors if t.shape is not None])
            out_dtype = "bool" if base in _COMPARISONS else compute
            if base == "abs":
                out_dtype = REAL_PART.get(out_dtype, out_dtype)  # |z| of a complex tensor is real
            out = None if out_shape is None else (numel_of(out_shape), out_dtype)
        if out_shape is None:
            return unknown(call)
        flops = per_element * numel_of(out_shape)
        moved = traffic([*(read(t) for t in tensors), out])
        return cost(flops, moved, compute, False, f"{per_element} per output element")

    return handler
