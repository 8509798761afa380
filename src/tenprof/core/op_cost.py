"""FLOPs and minimum bytes of one recorded aten op, from the shapes, dtypes, strides and values Kineto kept.

Contract
--------
`op_cost` takes one op instance as torch.profiler records it with ``record_shapes=True`` (Kineto's "Input Dims",
"Input type", "Input Strides" and "Concrete Inputs", argument by argument in schema order) and returns an `OpCost`:

* ``flops``: floating-point operations the op performs. ``None`` means UNKNOWN (no formula here, or a formula
  whose inputs were not recorded); it must never be read as 0. A known zero (a copy, a view) is ``0.0``.
* ``bytes``: the MINIMUM bytes the op must move to and from memory: each input tensor's distinct elements read
  once, each output element written once. Real kernels move more (re-reads, tiling, workspaces); this is the floor
  a roofline compares against. ``None`` when unknown.
* ``dtype``: the compute dtype, normalized (`normalized_dtype`); for matrix products the first matrix input's, for
  copies the dtype written, otherwise the dtype the result is computed in (see `_result_dtype`). ``""`` unknown.
* ``matmul``: the FLOPs are matrix products (GEMMs, convolutions, attention) that could run on tensor cores.
* ``rule``: short text of the FLOP rule used; ``""`` exactly when ``flops`` is None.

Nothing here imports torch: it runs where profiles are read, not only where they were taken.

What counts as a FLOP
---------------------
As torch.utils.flop_counter: a multiply and an add are one FLOP each, so a length-K dot product is 2*K (not
2*K - 1). Elementwise work is counted per output element; a named function (exp, log, tanh, sigmoid, erf, sqrt,
rsqrt, pow) counts as one operation: these kernels are bound by memory, and a finer price for a transcendental
would not move their bound. Index arithmetic and per-row or per-channel scalars (a mean's final divide, a norm's
final sqrt, batch norm's per-channel rsqrt) are not counted.

Formulas (rule groups)
----------------------
1. Matrix products (``matmul=True``): mm, addmm, _scaled_mm 2*M*N*K; bmm, baddbmm 2*B*M*N*K; mv, addmv 2*M*N;
   dot, vdot 2*N. The bias add of addmm/baddbmm/addmv (and alpha/beta scaling) is not counted, as torch does not.
   Output: M*N (B*M*N) elements in mat1's dtype, or in the dtype of an out= destination or ``out_dtype`` argument
   where the recorded overload has one (Kineto names the op, not the overload: the argument list tells them apart).
   aten::matmul and aten::linear have NO formula: they are composites whose work is done by a child mm, addmm,
   bmm, mv or dot row, and counting the parent too would count the work twice.
2. Convolution (convolution, _convolution, convolution_overrideable, cudnn_convolution,
   cudnn_convolution_transpose, mkldnn_convolution), read per each op's own argument order. Forward:
   2 * output_elements * (C_in/groups) * prod(kernel); output size floor((in + 2*pad - dil*(k-1) - 1)/stride) + 1.
   Transposed: 2 * input_elements * (C_out/groups) * prod(kernel), output (in-1)*stride - 2*pad + dil*(k-1) +
   output_padding + 1 (the same count torch gives). convolution_backward: grad_input and grad_weight each cost
   the forward's FLOPs, counted per ``output_mask``; grad_bias (a reduction) is not counted, as torch does not.
   ``matmul`` is False for a depthwise convolution (one input channel per group): it is not a matrix product.
   The stride, padding, dilation, transposed and groups values are needed: when they were not recorded, unknown.
3. Attention (flash, efficient, cudnn: the _scaled_dot_product_* ops, _flash_attention_forward,
   _efficient_attention_forward, _cudnn_attention_forward and the backward ops), ``matmul=True``: forward
   2*B*H*Sq*Sk*Dqk + 2*B*H*Sq*Sk*Dv (Q@K^T, then P@V), backward 2*B*H*Sq*Sk*(3*Dqk + 2*Dv) (scores recomputed,
   then dP, dV, dQ, dK), H the query heads (grouped-query attention broadcasts the key/value heads). A causal mask
   is NOT discounted, and dropout is ignored, as torch counts. Variable-length (nested) batches are unknown: their
   sequence lengths are in a tensor the profile does not record. aten::scaled_dot_product_attention has no
   formula: it is a composite over one of these ops (or over matmul/softmax in its math fallback).
4. Elementwise ops: output elements x a per-element count, 1 except where the formula is several steps
   (`_ELEMENTWISE`): gelu 5 (x/sqrt2, erf, +1, *x, *0.5), silu 2, addcmul/addcdiv 2, lerp 2,
   sigmoid_backward 3 (g*y*(1-y)), tanh_backward 3 (g*(1-y*y)), silu_backward 6, gelu_backward 11 (Phi(x) and
   x*phi(x) recomputed, summed, times g). The output shape is the broadcast of the tensor arguments' shapes, its
   dtype their promoted one (`_result_dtype`); comparisons write bool, abs of a complex tensor its real dtype. A
   Scalar argument is not a tensor and moves no bytes. In-place forms (aten::add_) read self as an operand and
   write it once, in self's dtype.
5. Reductions and normalisations, per input element: sum, mean, amax, amin, max, min, prod 1 (one add, compare
   or multiply); var, std 3 (subtract the mean, square, accumulate); norm, linalg_vector_norm 2 (square or abs,
   accumulate); softmax and log_softmax 5 (row max, subtract, exp, row sum, divide or subtract the log);
   their backwards 4; native_layer_norm 5 (statistics 3, normalise 2) plus 1 with a weight and 1 with a bias;
   native_layer_norm_backward 10 for grad_input (normalised input recomputed 2, g*w 1, two row sums 3, the
   combination 4), 2 for grad_weight, 1 for grad_bias, per ``output_mask`` (unrecorded: grad_input, plus a grad
   for each of weight and bias that is present); batch norm (native_batch_norm, cudnn_batch_norm,
   _batch_norm_impl_index) 5 when training (batch statistics 3, normalise 2) or 2 in eval (normalise with the
   running statistics), plus 1 each for weight and bias; its ``training`` value is needed unless the running
   statistics are absent (then it must be training). A reduction's FLOPs need only the input; its output (for
   bytes) needs the reduced dims, read from the values: unreadable dims leave bytes None. keepdim never changes
   the element count, so it is not needed. Layer and batch norm write their saved statistics in float32 for
   16-bit inputs (as the CUDA kernels do).
6. Data movement, 0 FLOPs (a known zero): copy_, _to_copy, to, clone, contiguous, fill_, zero_, index_select,
   embedding, cat. fill_/zero_ only write. Gathers (index_select, embedding) read the indices and the gathered
   rows (as many as they write) and write the output. to and contiguous return self when nothing needs to
   change: 0 bytes when the row shows that (to a same dtype without copy; already contiguous strides), bytes None
   when it cannot tell (a device move is not recorded). cat's bytes are unknown: Kineto records its tensors'
   shapes but not their dtypes.
7. Views and allocation: 0 FLOPs and 0 bytes (view, reshape, expand, transpose, empty, ...). reshape is given
   0/0: when it must copy, the copy is its own child row (clone/_unsafe_view) that carries the bytes.
8. Anything else: unknown (flops and bytes None), never 0; also when an op that needs shapes has none recorded.
   out= overloads are told apart only for the matrix products; elsewhere an out= destination would be taken for
   an input (they are rare in eager profiles).

Minimum bytes
-------------
An input's distinct elements are the product of its sizes over the dims whose stride is non-zero (a stride of 0
is a broadcast made by expand); an empty dim makes it 0. Without recorded strides, a tensor's distinct elements
are taken as all its elements, so a pre-expanded input is then over-counted. A 0-dim tensor is 1 element; a
Scalar, a list of ints or an absent optional moves nothing. Each output element is written once, in the
output's dtype. A convolution backward reads only what its requested gradients need.

Nesting
-------
Rows nest, and the composites above (matmul, linear, scaled_dot_product_attention, conv2d, layer_norm,
batch_norm, dropout, ...) have no formula so that they cannot be counted twice. Some nests have a formula at
several levels because either level can be the outermost one recorded: convolution > _convolution >
cudnn_convolution, _batch_norm_impl_index > cudnn_batch_norm, softmax > _softmax, to > _to_copy > copy_,
contiguous > clone > copy_, embedding > index_select, _scaled_dot_product_*_attention > _flash_attention_forward,
_efficient_attention_forward or _cudnn_attention_forward. A caller summing costs counts one row per nest.

Where this departs from torch.utils.flop_counter
------------------------------------------------
* convolution_backward's grad_weight: torch counts groups x the forward FLOPs for grouped convolutions; the
  work is the forward's, so here it is the forward's.
* _flash_attention_forward / _efficient_attention_forward and their backwards take (batch, seq, heads, dim)
  tensors, not (batch, heads, seq, dim); torch reads the dense ones as the latter. Here they are read as laid out.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class OpCost:
    """The cost of one op instance; see the module docstring for each field's contract."""

    flops: float | None
    bytes: float | None
    dtype: str
    matmul: bool
    rule: str


# ---------------------------------------------------------------------------------------------------------------
# dtypes

# Bytes per element of each normalized dtype. float4_e2m1fn_x2 packs two values in a byte, and its shapes count
# those bytes, so one "element" is one byte.
_SIZES: dict[str, int] = {
    "float64": 8,
    "float32": 4,
    "float16": 2,
    "bfloat16": 2,
    "float8": 1,
    "float4": 1,
    "complex128": 16,
    "complex64": 8,
    "complex32": 4,
    "int64": 8,
    "int32": 4,
    "int16": 2,
    "int8": 1,
    "uint64": 8,
    "uint32": 4,
    "uint16": 2,
    "uint8": 1,
    "bool": 1,
    "qint8": 1,
    "quint8": 1,
    "qint32": 4,
    "quint4x2": 1,
    "quint2x4": 1,
    "bits8": 1,
    "bits16": 2,
}

# Kineto writes a tensor's dtype as the demangled C++ element type (caffe2::TypeMeta::name); torch-style names are
# accepted too so that callers may pass either.
_KINETO_NAMES: dict[str, str] = {
    "float": "float32",
    "double": "float64",
    "c10::Half": "float16",
    "c10::BFloat16": "bfloat16",
    "c10::Float8_e4m3fn": "float8",
    "c10::Float8_e5m2": "float8",
    "c10::Float8_e4m3fnuz": "float8",
    "c10::Float8_e5m2fnuz": "float8",
    "c10::Float8_e8m0fnu": "float8",
    "c10::Float4_e2m1fn_x2": "float4",
    "c10::complex<double>": "complex128",
    "c10::complex<float>": "complex64",
    "c10::complex<c10::Half>": "complex32",
    "long int": "int64",
    "long long int": "int64",
    "long long": "int64",
    "long": "int64",
    "int": "int32",
    "short int": "int16",
    "short": "int16",
    "signed char": "int8",
    "unsigned char": "uint8",
    "long unsigned int": "uint64",
    "unsigned long": "uint64",
    "unsigned int": "uint32",
    "short unsigned int": "uint16",
    "unsigned short": "uint16",
    "bool": "bool",
    "c10::qint8": "qint8",
    "c10::quint8": "quint8",
    "c10::qint32": "qint32",
    "c10::quint4x2": "quint4x2",
    "c10::quint2x4": "quint2x4",
    "c10::bits8": "bits8",
    "c10::bits16": "bits16",
    "c10::bits1x8": "bits8",
    "c10::bits2x4": "bits8",
    "c10::bits4x2": "bits8",
    "half": "float16",
    "cfloat": "complex64",
    "cdouble": "complex128",
}
_KINETO_NAMES.update({name: name for name in _SIZES})
_KINETO_NAMES.update({f"torch.{name}": name for name in _SIZES})

# c10::ScalarType numbers, as Concrete Inputs records a dtype argument (_to_copy's '15' is bfloat16).
_SCALAR_TYPES: dict[int, str] = {
    0: "uint8",
    1: "int8",
    2: "int16",
    3: "int32",
    4: "int64",
    5: "float16",
    6: "float32",
    7: "float64",
    8: "complex32",
    9: "complex64",
    10: "complex128",
    11: "bool",
    12: "qint8",
    13: "quint8",
    14: "qint32",
    15: "bfloat16",
    16: "quint4x2",
    17: "quint2x4",
    18: "bits8",
    19: "bits8",
    20: "bits8",
    21: "bits8",
    22: "bits16",
    23: "float8",
    24: "float8",
    25: "float8",
    26: "float8",
    27: "uint16",
    28: "uint32",
    29: "uint64",
    44: "float8",
    45: "float4",
}

_REAL_PART = {"complex128": "float64", "complex64": "float32", "complex32": "float16"}
_SIXTEEN_BIT = frozenset({"float16", "bfloat16"})

# Argument kinds that are not tensors: Kineto's names for scalars, lists and absent optionals.
_NON_TENSOR_KINDS = frozenset({"", "Scalar", "ScalarList", "TensorList", "GenericList"})


def normalized_dtype(kineto_dtype: str) -> str:
    """Kineto's type string ("c10::BFloat16", "float", "long int") -> "bfloat16", "float32", "int64"; "" unknown."""
    return _KINETO_NAMES.get(kineto_dtype.strip(), "")


def dtype_bytes(kineto_dtype: str) -> int | None:
    """Bytes per element of a Kineto type string; None for non-tensors ("Scalar", "") and unknown types."""
    return _SIZES.get(normalized_dtype(kineto_dtype))


def _accumulate_dtype(dtype: str) -> str:
    # CUDA kernels keep statistics (layer/batch norm mean and rstd) in float32 for narrower floating inputs.
    return "float32" if dtype in _SIXTEEN_BIT or dtype in ("float8", "float4") else dtype


# ---------------------------------------------------------------------------------------------------------------
# The recorded arguments

Shape = tuple[int, ...]


def _dims(obj: Any) -> Shape | None:
    """A list of non-negative ints (a shape or strides) as a tuple; None for anything else."""
    if not isinstance(obj, (list, tuple)):
        return None
    for item in obj:
        if isinstance(item, bool) or not isinstance(item, int) or item < 0:
            return None
    return tuple(obj)


def _numel(shape: Shape) -> int:
    return math.prod(shape)


@dataclass(frozen=True)
class _Arg:
    """One argument as recorded: Kineto kind (dtype string), shape, strides and concrete value (text)."""

    kind: str
    shape: Shape | None
    stride: Shape | None
    value: str | None  # None: values were not recorded

    @property
    def is_tensor(self) -> bool:
        return self.kind not in _NON_TENSOR_KINDS

    @property
    def absent(self) -> bool:
        """An optional argument passed as None (Kineto writes "" for its kind)."""
        return self.kind == ""

    @property
    def dtype(self) -> str:
        return normalized_dtype(self.kind)

    @property
    def numel(self) -> int:
        return _numel(self.shape or ())

    @property
    def distinct(self) -> int:
        """Elements that exist in memory: a stride-0 (expanded) dim repeats one element."""
        shape = self.shape or ()
        if self.stride is None or len(self.stride) != len(shape):
            return _numel(shape)
        if 0 in shape:
            return 0
        return math.prod(size for size, step in zip(shape, self.stride, strict=True) if step != 0)


_NO_ARG = _Arg(kind="", shape=None, stride=None, value=None)


@dataclass(frozen=True)
class _Call:
    """One op instance: its name and its arguments in schema order."""

    name: str
    args: tuple[_Arg, ...]

    def arg(self, index: int) -> _Arg:
        """The argument at `index`, or an unreadable placeholder when the row has fewer."""
        return self.args[index] if 0 <= index < len(self.args) else _NO_ARG

    def tensor(self, index: int) -> _Arg | None:
        """The argument at `index` when it is a tensor with a readable shape."""
        arg = self.arg(index)
        return arg if arg.is_tensor and arg.shape is not None else None

    def tensors(self) -> list[_Arg] | None:
        """Every tensor argument; None when one of them has no readable shape."""
        found = [arg for arg in self.args if arg.is_tensor]
        return None if any(arg.shape is None for arg in found) else found

    def first_dtype(self) -> str:
        return next((arg.dtype for arg in self.args if arg.is_tensor), "")


def _parse_call(name: str, shapes: Any, dtypes: Any, strides: Any, values: Any) -> _Call:
    """Pair the per-argument lists; a list that does not line up with the dtypes is treated as not recorded."""
    if not isinstance(dtypes, (list, tuple)) or not isinstance(shapes, (list, tuple)) or len(shapes) != len(dtypes):
        return _Call(name, ())
    count = len(dtypes)
    stride_list = strides if isinstance(strides, (list, tuple)) and len(strides) == count else [None] * count
    value_list = values if isinstance(values, (list, tuple)) and len(values) == count else [None] * count
    args = []
    for kind, shape, stride, value in zip(dtypes, shapes, stride_list, value_list, strict=True):
        args.append(
            _Arg(
                kind=kind if isinstance(kind, str) else "GenericList",
                shape=_dims(shape),
                stride=_dims(stride),
                value=value if isinstance(value, str) else None,
            )
        )
    return _Call(name, tuple(args))


# Concrete values are Python-repr text: '1', '-1', '[1, 1]', 'False', '[True, True, False]', '0.', '15'.


def _items(text: str) -> list[str]:
    text = text.strip()
    if text.startswith("[") and text.endswith("]"):
        inner = text[1:-1].strip()
        return [item.strip() for item in inner.split(",")] if inner else []
    return [text]


def _int_of(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:  # also the interpreter's limit on digits
        return None


def _bool_of(text: str) -> bool | None:
    return {"True": True, "False": False, "true": True, "false": False, "1": True, "0": False}.get(text)


def _int_value(call: _Call, index: int) -> int | None:
    value = call.arg(index).value
    items = _items(value) if value else []
    return _int_of(items[0]) if len(items) == 1 else None


def _ints_value(call: _Call, index: int) -> Shape | None:
    """An int list ('[2, 2]'; a lone '2' as a one-item list); None when unreadable."""
    value = call.arg(index).value
    if not value:
        return None
    numbers = [_int_of(item) for item in _items(value)]
    return None if any(n is None for n in numbers) else tuple(n for n in numbers if n is not None)


def _bool_value(call: _Call, index: int) -> bool | None:
    value = call.arg(index).value
    items = _items(value) if value else []
    return _bool_of(items[0]) if len(items) == 1 else None


def _bools_value(call: _Call, index: int, count: int) -> tuple[bool, ...] | None:
    value = call.arg(index).value
    flags = [_bool_of(item) for item in _items(value)] if value else []
    if len(flags) != count or any(flag is None for flag in flags):
        return None
    return tuple(bool(flag) for flag in flags)


def _dtype_value(call: _Call, index: int, default: str) -> str | None:
    """A ScalarType argument: `default` when passed as None, the dtype its number names, or None if unreadable."""
    arg = call.arg(index)
    if arg.absent and index < len(call.args):
        return default
    number = _int_value(call, index)
    return _SCALAR_TYPES.get(number) if number is not None else None


# ---------------------------------------------------------------------------------------------------------------
# Building results

Traffic = tuple[int, str]  # (elements, normalized dtype)


def _traffic(parts: Iterable[Traffic | None]) -> float | None:
    """Total bytes of (elements, dtype) parts; None when any part or dtype size is unknown."""
    total = 0
    for part in parts:
        if part is None or part[1] not in _SIZES:
            return None
        total += part[0] * _SIZES[part[1]]
    return _as_float(total)


def _as_float(number: int | None) -> float | None:
    if number is None:
        return None
    try:
        return float(number)
    except OverflowError:  # absurd recorded shapes: report unknown rather than inf
        return None


def _read(arg: _Arg) -> Traffic:
    return (arg.distinct, arg.dtype)


def _write(elements: int | None, dtype: str | None) -> Traffic | None:
    return None if elements is None or dtype is None else (elements, dtype)


def _unknown(call: _Call) -> OpCost:
    return OpCost(flops=None, bytes=None, dtype=call.first_dtype(), matmul=False, rule="")


def _cost(flops: int | None, moved: float | None, dtype: str, matmul: bool, rule: str) -> OpCost:
    as_float = _as_float(flops)
    return OpCost(flops=as_float, bytes=moved, dtype=dtype, matmul=matmul, rule=rule if as_float is not None else "")


Handler = Callable[[_Call], OpCost]


# ---------------------------------------------------------------------------------------------------------------
# 1. Matrix products


def _matmul_result(
    call: _Call, operands: int, flops: int, out_elements: int, out_dtype: str | None, rule: str, a: _Arg
) -> OpCost:
    """The first `operands` arguments are read (absent optionals skip); the output is written once."""
    reads = [_read(t) for t in (call.tensor(i) for i in range(operands)) if t is not None]
    return _cost(flops, _traffic([*reads, _write(out_elements, out_dtype)]), a.dtype, True, rule)


def _matmul_out_dtype(call: _Call, plain_count: int, dtype_index: int | None, default: str) -> str | None:
    """The output dtype, from which overload was recorded (Kineto names the op, not the overload).

    Past the plain overload's arguments, a trailing tensor is an out= destination (mm.out, addmm.out) and a
    ScalarType at `dtype_index` the ".dtype" overloads' out_dtype (mm.dtype, addmm.dtype); otherwise mat1's dtype.
    """
    if len(call.args) <= plain_count:
        return default
    out = call.tensor(len(call.args) - 1)
    if out is not None:
        return out.dtype
    return default if dtype_index is None else _dtype_value(call, dtype_index, default)


def _mm_shapes(a: _Arg | None, b: _Arg | None) -> tuple[int, int, int] | None:
    if a is None or b is None or a.shape is None or b.shape is None:
        return None
    if len(a.shape) != 2 or len(b.shape) != 2 or a.shape[1] != b.shape[0]:
        return None
    return a.shape[0], a.shape[1], b.shape[1]


def _bmm_shapes(a: _Arg | None, b: _Arg | None) -> tuple[int, int, int, int] | None:
    if a is None or b is None or a.shape is None or b.shape is None:
        return None
    if len(a.shape) != 3 or len(b.shape) != 3 or a.shape[0] != b.shape[0] or a.shape[2] != b.shape[1]:
        return None
    return a.shape[0], a.shape[1], a.shape[2], b.shape[2]


def _mm_like(first: int, plain_count: int, dtype_index: int) -> Handler:
    """mm (self, mat2) and addmm (bias, mat1, mat2): 2*M*N*K, output M*N."""

    def handler(call: _Call) -> OpCost:
        a, b = call.tensor(first), call.tensor(first + 1)
        dims = _mm_shapes(a, b)
        if a is None or dims is None or (first and call.tensor(0) is None):  # addmm/baddbmm need their bias
            return _unknown(call)
        m, k, n = dims
        out_dtype = _matmul_out_dtype(call, plain_count, dtype_index, a.dtype)
        return _matmul_result(call, first + 2, 2 * m * n * k, m * n, out_dtype, "2*M*N*K", a)

    return handler


def _bmm_like(first: int, plain_count: int, dtype_index: int) -> Handler:
    """bmm (self, mat2) and baddbmm (bias, batch1, batch2): 2*B*M*N*K, output B*M*N."""

    def handler(call: _Call) -> OpCost:
        a, b = call.tensor(first), call.tensor(first + 1)
        dims = _bmm_shapes(a, b)
        if a is None or dims is None or (first and call.tensor(0) is None):  # addmm/baddbmm need their bias
            return _unknown(call)
        batch, m, k, n = dims
        out_dtype = _matmul_out_dtype(call, plain_count, dtype_index, a.dtype)
        return _matmul_result(call, first + 2, 2 * batch * m * n * k, batch * m * n, out_dtype, "2*B*M*N*K", a)

    return handler


def _scaled_mm(call: _Call) -> OpCost:
    # (self, mat2, scale_a, scale_b, bias?, scale_result?, out_dtype?, use_fast_accum[, out]): fp8 in, out_dtype out.
    a, b = call.tensor(0), call.tensor(1)
    dims = _mm_shapes(a, b)
    if a is None or dims is None:
        return _unknown(call)
    m, k, n = dims
    out = call.tensor(8)
    out_dtype = out.dtype if out is not None else _dtype_value(call, 6, a.dtype)
    return _matmul_result(call, 6, 2 * m * n * k, m * n, out_dtype, "2*M*N*K", a)


def _mv_like(first: int, plain_count: int) -> Handler:
    """mv (mat, vec) and addmv (bias, mat, vec): 2*M*N, output M."""

    def handler(call: _Call) -> OpCost:
        mat, vec = call.tensor(first), call.tensor(first + 1)
        if mat is None or vec is None or (first and call.tensor(0) is None):
            return _unknown(call)
        if mat.shape is None or vec.shape is None or len(mat.shape) != 2 or vec.shape != mat.shape[1:]:
            return _unknown(call)
        m, n = mat.shape
        out_dtype = _matmul_out_dtype(call, plain_count, None, mat.dtype)
        return _matmul_result(call, first + 2, 2 * m * n, m, out_dtype, "2*M*N", mat)

    return handler


def _dot(call: _Call) -> OpCost:
    a, b = call.tensor(0), call.tensor(1)
    if a is None or b is None or a.shape is None or len(a.shape) != 1 or a.shape != b.shape:
        return _unknown(call)
    return _matmul_result(call, 2, 2 * a.shape[0], 1, _matmul_out_dtype(call, 2, None, a.dtype), "2*N", a)


# ---------------------------------------------------------------------------------------------------------------
# 2. Convolution


@dataclass(frozen=True)
class _ConvArgs:
    """Where each convolution op keeps its parameters (their schemas order them differently)."""

    bias: int | None
    stride: int
    padding: int
    dilation: int
    groups: int
    output_padding: int | None
    transposed: int | None  # index of the flag; None: fixed by the op
    fixed_transposed: bool = False


_CONV_GENERIC = _ConvArgs(bias=2, stride=3, padding=4, dilation=5, transposed=6, output_padding=7, groups=8)
_CONV_CUDNN = _ConvArgs(bias=None, padding=2, stride=3, dilation=4, groups=5, output_padding=None, transposed=None)
_CONV_CUDNN_T = _ConvArgs(
    bias=None, padding=2, output_padding=3, stride=4, dilation=5, groups=6, transposed=None, fixed_transposed=True
)
_CONV_MKLDNN = _ConvArgs(bias=2, padding=3, stride=4, dilation=5, groups=6, output_padding=None, transposed=None)


def _per_dim(call: _Call, index: int | None, spatial: int, default: int | None = None) -> Shape | None:
    """A per-spatial-dim list (stride, padding, ...); a one-item list applies to every dim, as aten expands it."""
    if index is None:
        return None if default is None else (default,) * spatial
    values = _ints_value(call, index)
    if values is not None and len(values) == 1:
        values = values * spatial
    return values if values is not None and len(values) == spatial else None


def _conv_is_gemm(groups: int | None, in_per_group: int) -> bool:
    # A depthwise convolution reduces over one channel per group: no matrix product for tensor cores to run.
    return not (groups is not None and groups > 1 and in_per_group == 1)


def _conv_output(
    spatial_in: Shape, kernel: Shape, stride: Shape, padding: Shape, dilation: Shape, out_pad: Shape, transposed: bool
) -> Shape | None:
    sizes = []
    for i, k, s, p, d, op in zip(spatial_in, kernel, stride, padding, dilation, out_pad, strict=True):
        if s <= 0 or d <= 0:
            return None
        if transposed:
            sizes.append((i - 1) * s - 2 * p + d * (k - 1) + op + 1)
        else:
            sizes.append((i + 2 * p - d * (k - 1) - 1) // s + 1)
    return tuple(sizes) if all(size > 0 for size in sizes) else None


def _conv(layout: _ConvArgs) -> Handler:
    def handler(call: _Call) -> OpCost:
        x, w = call.tensor(0), call.tensor(1)
        if x is None or w is None or x.shape is None or w.shape is None:
            return _unknown(call)
        if len(x.shape) != len(w.shape) or len(x.shape) < 3:
            return _unknown(call)
        spatial = len(x.shape) - 2
        transposed = layout.fixed_transposed if layout.transposed is None else _bool_value(call, layout.transposed)
        groups = _int_value(call, layout.groups)
        stride = _per_dim(call, layout.stride, spatial)
        padding = _per_dim(call, layout.padding, spatial)
        dilation = _per_dim(call, layout.dilation, spatial)
        out_pad = _per_dim(call, layout.output_padding if transposed else None, spatial, default=0)
        if transposed is None or groups is None or groups <= 0:
            return _unknown(call)
        if stride is None or padding is None or dilation is None or out_pad is None:
            return _unknown(call)
        batch, c_in, kernel = x.shape[0], x.shape[1], w.shape[2:]
        out_spatial = _conv_output(x.shape[2:], kernel, stride, padding, dilation, out_pad, transposed)
        if out_spatial is None:
            return _unknown(call)
        if transposed:
            # weight is (C_in, C_out/groups, k...): every input point scatters through the kernel.
            if w.shape[0] != c_in:
                return _unknown(call)
            c_out, in_per_group = w.shape[1] * groups, c_in // groups
            flops = 2 * x.numel * w.shape[1] * _numel(kernel)
            rule = "2*input_elements*(C_out/groups)*prod(kernel) (transposed)"
        else:
            # weight is (C_out, C_in/groups, k...): every output point gathers through the kernel.
            if w.shape[1] * groups != c_in:
                return _unknown(call)
            c_out, in_per_group = w.shape[0], w.shape[1]
            flops = 2 * batch * c_out * _numel(out_spatial) * w.shape[1] * _numel(kernel)
            rule = "2*output_elements*(C_in/groups)*prod(kernel)"
        reads = [_read(x), _read(w)]
        bias = call.tensor(layout.bias) if layout.bias is not None else None
        if bias is not None:
            reads.append(_read(bias))
        moved = _traffic([*reads, (batch * c_out * _numel(out_spatial), x.dtype)])
        return _cost(flops, moved, x.dtype, _conv_is_gemm(groups, in_per_group), rule)

    return handler


def _conv_backward(call: _Call) -> OpCost:
    # (grad_output, input, weight, bias_sizes, stride, padding, dilation, transposed, output_padding, groups,
    #  output_mask): grad_input is a transposed convolution of grad_output, grad_weight a convolution of input with
    # grad_output; each does the forward's multiply-adds, whatever the stride or padding.
    grad, x, w = call.tensor(0), call.tensor(1), call.tensor(2)
    if grad is None or x is None or w is None or grad.shape is None or x.shape is None or w.shape is None:
        return _unknown(call)
    if not len(grad.shape) == len(x.shape) == len(w.shape) >= 3:
        return _unknown(call)
    transposed = _bool_value(call, 7)
    mask = _bools_value(call, 10, 3)
    if transposed is None or mask is None:
        return _unknown(call)
    # The forward's work is 2 * (elements on the gathering side) * w.shape[1] * prod(kernel): the output side for
    # a convolution, the input side for a transposed one.
    if w.shape[0] != (x.shape[1] if transposed else grad.shape[1]):
        return _unknown(call)
    forward = 2 * (x.numel if transposed else grad.numel) * w.shape[1] * _numel(w.shape[2:])
    flops = forward * (int(mask[0]) + int(mask[1]))
    parts: list[Traffic | None] = [_read(grad)]
    if mask[0]:
        parts += [_read(w), (x.numel, x.dtype)]
    if mask[1]:
        parts += [_read(x), (w.numel, w.dtype)]
    if mask[2]:
        parts.append((grad.shape[1], grad.dtype))
    groups = _int_value(call, 9)
    in_per_group = x.shape[1] // groups if transposed and groups else w.shape[1]
    rule = "(grad_input + grad_weight, per output_mask) x the forward's FLOPs"
    return _cost(flops, _traffic(parts), grad.dtype, _conv_is_gemm(groups, in_per_group), rule)


# ---------------------------------------------------------------------------------------------------------------
# 3. Attention


@dataclass(frozen=True)
class _AttentionDims:
    batch: int
    heads: int  # query heads
    seq_q: int
    seq_k: int
    dim_qk: int
    dim_v: int


def _attention_dims(q: _Arg | None, k: _Arg | None, v: _Arg | None, heads_first: bool) -> _AttentionDims | None:
    """(B, H, S, D) tensors (heads_first) or (B, S, H, D) ones; None unless they make one attention."""
    if q is None or k is None or v is None or q.shape is None or k.shape is None or v.shape is None:
        return None
    if not len(q.shape) == len(k.shape) == len(v.shape) == 4:
        return None

    def bhsd(shape: Shape) -> Shape:
        return shape if heads_first else (shape[0], shape[2], shape[1], shape[3])

    (b, hq, sq, dq), (b2, hk, sk, dk), (b3, hv, sv, dv) = bhsd(q.shape), bhsd(k.shape), bhsd(v.shape)
    if not (b == b2 == b3 and hk == hv and sk == sv and dq == dk) or hk == 0 or hq % hk:
        return None
    return _AttentionDims(batch=b, heads=hq, seq_q=sq, seq_k=sk, dim_qk=dq, dim_v=dv)


def _attention_forward(heads_first: bool, lse_flag: int | None) -> Handler:
    """q, k, v at 0, 1, 2. The log-sum-exp (B*H*Sq float32) is written always (lse_flag None) or when flagged.

    3-d inputs (the variable-length layout of the _flash_attention_* ops) are not an attention `_attention_dims`
    accepts, so they stay unknown.
    """

    def handler(call: _Call) -> OpCost:
        q = call.tensor(0)
        dims = _attention_dims(q, call.tensor(1), call.tensor(2), heads_first)
        tensors = call.tensors()
        if q is None or dims is None or tensors is None:
            return _unknown(call)
        scores = dims.batch * dims.heads * dims.seq_q * dims.seq_k
        flops = 2 * scores * dims.dim_qk + 2 * scores * dims.dim_v
        rows = dims.batch * dims.heads * dims.seq_q
        # A log-sum-exp whose flag was not recorded is left out: the bytes stay a minimum.
        writes_lse = lse_flag is None or _bool_value(call, lse_flag) is True
        parts = [*(_read(t) for t in tensors), (rows * dims.dim_v, q.dtype)]
        if writes_lse:
            parts.append((rows, "float32"))
        rule = "2*B*H*Sq*Sk*Dqk + 2*B*H*Sq*Sk*Dv (causal mask not discounted)"
        return _cost(flops, _traffic(parts), q.dtype, True, rule)

    return handler


def _attention_backward(heads_first: bool, bias_grad: tuple[int, int, int, int] | None = None) -> Handler:
    """grad_out, q, k, v at 0..3; grads of q, k and v written, and of the bias when its flag says so.

    bias_grad is (bias index, flag index, flags in that argument, which flag): the flag argument is a bool list
    like grad_input_mask or a lone bool like bias_requires_grad. An unreadable flag leaves the grad out (minimum).
    """

    def handler(call: _Call) -> OpCost:
        grad, q, k, v = call.tensor(0), call.tensor(1), call.tensor(2), call.tensor(3)
        dims = _attention_dims(q, k, v, heads_first)
        tensors = call.tensors()
        if grad is None or q is None or k is None or v is None or dims is None or tensors is None:
            return _unknown(call)
        if grad.numel != dims.batch * dims.heads * dims.seq_q * dims.dim_v:
            return _unknown(call)
        scores = dims.batch * dims.heads * dims.seq_q * dims.seq_k
        flops = 2 * scores * (3 * dims.dim_qk + 2 * dims.dim_v)
        parts = [*(_read(t) for t in tensors), (q.numel, q.dtype), (k.numel, k.dtype), (v.numel, v.dtype)]
        if bias_grad is not None:
            bias, flag, count, which = bias_grad
            bias_arg, flags = call.tensor(bias), _bools_value(call, flag, count)
            if bias_arg is not None and flags is not None and flags[which]:
                parts.append((bias_arg.numel, bias_arg.dtype))
        rule = "2*B*H*Sq*Sk*(3*Dqk + 2*Dv) (causal mask not discounted)"
        return _cost(flops, _traffic(parts), q.dtype, True, rule)

    return handler


def _varlen_unknown(positions: tuple[int, ...], handler: Handler) -> Handler:
    # A tensor of sequence offsets makes the batch variable-length: its lengths were not recorded.
    def wrapped(call: _Call) -> OpCost:
        return _unknown(call) if any(call.arg(i).is_tensor for i in positions) else handler(call)

    return wrapped


# ---------------------------------------------------------------------------------------------------------------
# 4. Elementwise

# Per-output-element FLOPs of each elementwise op (see the module docstring for the multi-step ones).
_ELEMENTWISE: dict[str, int] = {
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
_NO_INPLACE = frozenset(
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
    return "float32" if widest in _SIXTEEN_BIT and {"float16", "bfloat16"} <= set(dtypes) else widest


def _result_dtype(tensors: Sequence[_Arg]) -> str:
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


def _elementwise(base: str, inplace: bool) -> Handler:
    per_element = _ELEMENTWISE[base]

    def handler(call: _Call) -> OpCost:
        tensors = call.tensors()
        if not tensors or (base == "where" and len(call.args) < 3):  # where(condition) is nonzero, not a select
            return _unknown(call)
        compute = _result_dtype(tensors)
        if inplace:
            self_arg = call.tensor(0)
            if self_arg is None or self_arg.shape is None:
                return _unknown(call)
            out_shape: Shape | None = self_arg.shape
            out: Traffic | None = (self_arg.distinct, self_arg.dtype)
        else:
            out_shape = _broadcast([t.shape for t in tensors if t.shape is not None])
            out_dtype = "bool" if base in _COMPARISONS else compute
            if base == "abs":
                out_dtype = _REAL_PART.get(out_dtype, out_dtype)  # |z| of a complex tensor is real
            out = None if out_shape is None else (_numel(out_shape), out_dtype)
        if out_shape is None:
            return _unknown(call)
        flops = per_element * _numel(out_shape)
        moved = _traffic([*(_read(t) for t in tensors), out])
        return _cost(flops, moved, compute, False, f"{per_element} per output element")

    return handler


# ---------------------------------------------------------------------------------------------------------------
# 5. Reductions and normalisations

_INTEGRAL_TO_INT64 = frozenset({"bool", "uint8", "int8", "int16", "int32", "int64"})


@dataclass(frozen=True)
class _Reduction:
    dims: Shape | None  # () reduces every dim; None: unreadable
    out_dtype: str | None  # None: unreadable
    with_indices: bool = False  # max.dim / min.dim also write int64 indices


def _dims_value(call: _Call, index: int) -> Shape | None:
    """Reduced dims: () for all (an absent or empty list, as aten reads it), None when unreadable."""
    arg = call.arg(index)
    if arg.absent and index < len(call.args):
        return ()
    value = arg.value
    if not value:
        return None
    numbers = [_int_of(item) for item in _items(value)]
    return None if any(n is None for n in numbers) else tuple(n for n in numbers if n is not None)


def _sum_default(x: _Arg) -> str:
    # sum and prod of integral or bool tensors accumulate into int64.
    return "int64" if x.dtype in _INTEGRAL_TO_INT64 else x.dtype


def _plan_sum(call: _Call, x: _Arg) -> _Reduction:
    # sum(self, *, dtype) / sum.dim_IntList(self, dim, keepdim, *, dtype); mean the same.
    default = x.dtype if call.name == "aten::mean" else _sum_default(x)
    if len(call.args) <= 2:
        return _Reduction((), _dtype_value(call, 1, default) if len(call.args) == 2 else default)
    return _Reduction(_dims_value(call, 1), _dtype_value(call, 3, default))


def _plan_prod(call: _Call, x: _Arg) -> _Reduction:
    # prod(self, *, dtype) / prod.dim_int(self, dim, keepdim, *, dtype)
    if len(call.args) <= 2:
        return _Reduction((), _dtype_value(call, 1, _sum_default(x)) if len(call.args) == 2 else _sum_default(x))
    return _Reduction(_dims_value(call, 1), _dtype_value(call, 3, _sum_default(x)))


def _plan_amax(call: _Call, x: _Arg) -> _Reduction:
    # amax(self, dim=[], keepdim)
    return _Reduction(_dims_value(call, 1) if len(call.args) > 1 else (), x.dtype)


def _plan_max(call: _Call, x: _Arg) -> _Reduction:
    # max(self) / max.dim(self, dim, keepdim) -> (values, indices)
    if len(call.args) <= 1:
        return _Reduction((), x.dtype)
    return _Reduction(_dims_value(call, 1), x.dtype, with_indices=True)


def _plan_var(call: _Call, x: _Arg) -> _Reduction:
    # var(self, unbiased) / var.dim(self, dim, unbiased, keepdim) / var.correction(self, dim, *, correction, keepdim)
    return _Reduction(() if len(call.args) <= 2 else _dims_value(call, 1), x.dtype)


def _plan_norm(call: _Call, x: _Arg) -> _Reduction:
    # norm.Scalar(self, p) / norm.ScalarOpt_dtype(self, p, *, dtype) / norm.ScalarOpt_dim(self, p, dim, keepdim)
    # / norm.ScalarOpt_dim_dtype(self, p, dim, keepdim, *, dtype)
    if len(call.args) <= 3:
        return _Reduction((), _dtype_value(call, 2, x.dtype) if len(call.args) == 3 else x.dtype)
    return _Reduction(_dims_value(call, 2), _dtype_value(call, 4, x.dtype) if len(call.args) >= 5 else x.dtype)


def _plan_vector_norm(call: _Call, x: _Arg) -> _Reduction:
    # linalg_vector_norm(self, ord, dim, keepdim, *, dtype)
    return _Reduction(_dims_value(call, 2), _dtype_value(call, 4, x.dtype))


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


def _reduction(
    plan: Callable[[_Call, _Arg], _Reduction], per_element: int, what: str, pairwise: Handler | None = None
) -> Handler:
    def handler(call: _Call) -> OpCost:
        x = call.tensor(0)
        if x is None or x.shape is None:
            return _unknown(call)
        if pairwise is not None and call.tensor(1) is not None:
            return pairwise(call)  # max.other / min.other: elementwise maximum / minimum
        reduction = plan(call, x)
        elements = None if reduction.dims is None else _reduced_elements(x.shape, reduction.dims)
        parts = [_read(x), _write(elements, reduction.out_dtype)]
        if reduction.with_indices:
            parts.append(_write(elements, "int64"))
        rule = f"{per_element} per input element ({what})"
        return _cost(per_element * x.numel, _traffic(parts), x.dtype, False, rule)

    return handler


def _softmax(per_element: int, backward: bool) -> Handler:
    """_softmax(self, dim, half_to_float), softmax.int(self, dim, dtype), _softmax_backward_data(grad, out, dim,
    input_dtype) and their log_ twins: the output has the input's shape; only its dtype needs the values."""

    def handler(call: _Call) -> OpCost:
        x = call.tensor(0)
        tensors = call.tensors()
        if x is None or x.shape is None or tensors is None:
            return _unknown(call)
        out_dtype = _softmax_out_dtype(call, x, backward)
        moved = _traffic([*(_read(t) for t in tensors), _write(x.numel, out_dtype)])
        rule = f"{per_element} per element ({'backward' if backward else 'max, subtract, exp, sum, normalise'})"
        return _cost(per_element * x.numel, moved, x.dtype, False, rule)

    return handler


def _softmax_out_dtype(call: _Call, x: _Arg, backward: bool) -> str | None:
    if backward:
        # input_dtype names the forward input's dtype; a float32 grad may belong to a half_to_float softmax.
        recorded = _dtype_value(call, 3, x.dtype)
        return recorded if recorded is not None or x.dtype == "float32" else x.dtype
    if call.name.startswith("aten::_"):
        # half_to_float: a 16-bit input may be written as float32; other inputs keep their dtype either way.
        half_to_float = _bool_value(call, 2)
        if half_to_float is None:
            return None if x.dtype in _SIXTEEN_BIT else x.dtype
        return "float32" if half_to_float else x.dtype
    return _dtype_value(call, 2, x.dtype) if len(call.args) > 2 else x.dtype


def _layer_norm(call: _Call) -> OpCost:
    # (input, normalized_shape, weight?, bias?, eps) -> (out, mean, rstd); mean/rstd hold one value per row.
    x, weight, bias = call.tensor(0), call.tensor(2), call.tensor(3)
    if x is None or x.shape is None:
        return _unknown(call)
    per_element = 5 + (weight is not None) + (bias is not None)
    # normalized_shape from the values, else from the weight's (or bias's) shape, which equals it
    normalized = _ints_value(call, 1)
    affine = weight if weight is not None else bias
    if normalized is None and affine is not None:
        normalized = affine.shape
    norm_ndim = None if normalized is None else len(normalized)
    rows = None
    if norm_ndim is not None and 0 < norm_ndim <= len(x.shape):
        rows = _numel(x.shape[: len(x.shape) - norm_ndim])
    stats = _accumulate_dtype(x.dtype)
    reads = [_read(t) for t in (x, weight, bias) if t is not None]
    moved = _traffic([*reads, (x.numel, x.dtype), _write(rows, stats), _write(rows, stats)])
    rule = f"{per_element} per element (statistics 3, normalise 2, affine 1 each)"
    return _cost(per_element * x.numel, moved, x.dtype, False, rule)


def _layer_norm_backward(call: _Call) -> OpCost:
    # (grad_out, input, normalized_shape, mean, rstd, weight?, bias?, output_mask). bias is passed for its shape
    # only and is not read.
    grad, x, mean, rstd, weight, bias = (call.tensor(i) for i in (0, 1, 3, 4, 5, 6))
    if grad is None or x is None or grad.shape is None or x.shape is None:
        return _unknown(call)
    mask = _bools_value(call, 7, 3) or (True, weight is not None, bias is not None)
    flops = x.numel * (10 * int(mask[0]) + 2 * int(mask[1]) + int(mask[2]))
    parts: list[Traffic | None] = [_read(t) for t in (grad, x, mean, rstd, weight) if t is not None]
    params = weight if weight is not None else bias
    if mask[0]:
        parts.append((x.numel, x.dtype))
    for wanted in (mask[1], mask[2]):
        if wanted:
            parts.append(None if params is None else (params.numel, params.dtype))
    rule = "per element: 10 grad_input, 2 grad_weight, 1 grad_bias (per output_mask)"
    return _cost(flops, _traffic(parts), x.dtype, False, rule)


def _batch_norm(call: _Call) -> OpCost:
    # native_batch_norm / cudnn_batch_norm / _batch_norm_impl_index:
    # (input, weight?, bias?, running_mean?, running_var?, training, ...)
    x = call.tensor(0)
    if x is None or x.shape is None or len(x.shape) < 2:
        return _unknown(call)
    weight, bias, running_mean, running_var = (call.tensor(i) for i in (1, 2, 3, 4))
    training = _bool_value(call, 5)
    if running_mean is None and running_var is None:
        training = True  # without running statistics only batch statistics can normalise
    if training is None:
        return _unknown(call)
    per_element = (5 if training else 2) + (weight is not None) + (bias is not None)
    reads = [_read(t) for t in (x, weight, bias, running_mean, running_var) if t is not None]
    parts: list[Traffic | None] = [*reads, (x.numel, x.dtype)]
    if training:
        # running statistics are updated in place, and the batch mean and inverse std are saved for backward
        parts += [(t.numel, t.dtype) for t in (running_mean, running_var) if t is not None]
        parts += [(x.shape[1], _accumulate_dtype(x.dtype))] * 2
    rule = f"{per_element} per element ({'batch statistics 3, ' if training else ''}normalise 2, affine 1 each)"
    return _cost(per_element * x.numel, _traffic(parts), x.dtype, False, rule)


# ---------------------------------------------------------------------------------------------------------------
# 6. Data movement (0 FLOPs)

_MOVE_RULE = "0 (data movement)"


def _moved(flops_dtype: str, parts: Iterable[Traffic | None]) -> OpCost:
    return OpCost(flops=0.0, bytes=_traffic(parts), dtype=flops_dtype, matmul=False, rule=_MOVE_RULE)


def _copy_into(call: _Call) -> OpCost:
    # copy_(self, src, non_blocking): reads src, writes self.
    dst, src = call.tensor(0), call.tensor(1)
    if dst is None or src is None:
        return _unknown(call)
    return _moved(dst.dtype, [_read(src), (dst.distinct, dst.dtype)])


def _copy_as(x: _Arg, target: str | None) -> OpCost:
    """A fresh dense copy of x in `target` (None: unknown dtype, so unknown bytes)."""
    return _moved(target or x.dtype, [_read(x), _write(x.numel, target)])


def _to_copy(call: _Call) -> OpCost:
    # _to_copy(self, *, dtype?, layout?, device?, pin_memory?, non_blocking, memory_format?)
    x = call.tensor(0)
    if x is None:
        return _unknown(call)
    return _copy_as(x, _dtype_value(call, 1, x.dtype))


def _to(call: _Call) -> OpCost:
    """aten::to returns self when nothing changes, else copies through _to_copy. Which overload ran shows in the
    argument count: to.dtype (self, dtype, non_blocking, copy, memory_format), to.other (self, other, ...),
    to.device (self, device, dtype, non_blocking, copy, memory_format), to.dtype_layout (self, dtype, layout,
    device, pin_memory, non_blocking, copy, memory_format)."""
    x = call.tensor(0)
    if x is None:
        return _unknown(call)
    count = len(call.args)
    other = call.tensor(1)
    if count == 5 and other is not None:
        target: str | None = other.dtype
        may_move_device = True
    elif count in (5, 6, 8):
        target = _dtype_value(call, 2 if count == 6 else 1, x.dtype)
        may_move_device = count != 5
    else:
        return _moved(x.dtype, [None])
    if target is not None and target != x.dtype:
        return _copy_as(x, target)
    if target is None or may_move_device:
        return _moved(x.dtype, [None])  # same dtype: a copy only if the (unrecorded) device changes
    forced = _bool_value(call, 3)
    if forced is None:
        return _moved(x.dtype, [None])
    return _copy_as(x, x.dtype) if forced else _moved(x.dtype, [])


def _clone(call: _Call) -> OpCost:
    x = call.tensor(0)
    return _unknown(call) if x is None else _copy_as(x, x.dtype)


def _is_dense(shape: Shape, stride: Shape, fastest_first: Sequence[int]) -> bool:
    expected = 1
    for axis in fastest_first:
        if shape[axis] != 1 and stride[axis] != expected:
            return False
        expected *= shape[axis]
    return True


def _contiguous(call: _Call) -> OpCost:
    # contiguous(self, memory_format): returns self when already laid out so; otherwise clone.
    x = call.tensor(0)
    if x is None or x.shape is None:
        return _unknown(call)
    memory_format = _int_value(call, 1) if len(call.args) > 1 else 0
    orders = {0: list(range(len(x.shape)))[::-1], 2: [1, 3, 2, 0], 3: [1, 4, 3, 2, 0]}
    order = orders.get(memory_format) if memory_format is not None else None
    if x.stride is None or order is None or len(x.stride) != len(x.shape) or sorted(order) != list(range(len(x.shape))):
        return _moved(x.dtype, [None])
    if x.numel == 0 or _is_dense(x.shape, x.stride, order):
        return _moved(x.dtype, [])
    return _copy_as(x, x.dtype)


def _fill(call: _Call) -> OpCost:
    # fill_(self, value) and zero_(self) write self and read nothing from memory that matters.
    x = call.tensor(0)
    return _unknown(call) if x is None else _moved(x.dtype, [(x.distinct, x.dtype)])


def _gather(source: _Arg, indices: _Arg, out_elements: int | None) -> OpCost:
    # The gathered rows are read (as many elements as are written), plus the indices.
    return _moved(
        source.dtype, [_read(indices), _write(out_elements, source.dtype), _write(out_elements, source.dtype)]
    )


def _index_select(call: _Call) -> OpCost:
    # index_select(self, dim, index): the output is self with dim's size replaced by the index count.
    x, index, dim = call.tensor(0), call.tensor(2), _int_value(call, 1)
    if x is None or index is None or x.shape is None:
        return _unknown(call)
    out_elements = None
    ndim = max(len(x.shape), 1)
    if dim is not None and -ndim <= dim < ndim:
        kept = [size for axis, size in enumerate(x.shape) if axis != dim % ndim]
        out_elements = math.prod(kept) * index.numel
    return _gather(x, index, out_elements)


def _embedding(call: _Call) -> OpCost:
    # embedding(weight, indices, padding_idx, scale_grad_by_freq, sparse): output is indices.shape + [D].
    weight, indices = call.tensor(0), call.tensor(1)
    if weight is None or indices is None or weight.shape is None or len(weight.shape) != 2:
        return _unknown(call)
    return _gather(weight, indices, indices.numel * weight.shape[1])


def _cat(call: _Call) -> OpCost:
    # Kineto records a TensorList's shapes (as a list of lists) but not its dtypes: the bytes cannot be sized.
    return OpCost(flops=0.0, bytes=None, dtype="", matmul=False, rule=_MOVE_RULE)


# ---------------------------------------------------------------------------------------------------------------
# 7. Views and allocation (no data moves)

# reshape, flatten and the *_as forms copy, when they must, through a child row (clone, _unsafe_view) of their own.
_VIEWS = [
    *["view", "_unsafe_view", "_reshape_alias", "reshape", "reshape_as", "view_as", "flatten", "unflatten"],
    *["as_strided", "as_strided_", "expand", "expand_as", "transpose", "t", "permute", "movedim", "numpy_T"],
    *["slice", "select", "narrow", "squeeze", "squeeze_", "unsqueeze", "unsqueeze_", "unbind", "split"],
    *["split_with_sizes", "unsafe_split", "chunk", "detach", "detach_", "alias", "lift_fresh"],
    *["empty", "empty_strided", "empty_like", "resize_"],
]


def _view(call: _Call) -> OpCost:
    return OpCost(flops=0.0, bytes=0.0, dtype=call.first_dtype(), matmul=False, rule="0 (view or allocation)")


# ---------------------------------------------------------------------------------------------------------------
# The table

_REDUCTION_PLANS: dict[str, tuple[Callable[[_Call, _Arg], _Reduction], int, str]] = {
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


def _handlers() -> dict[str, Handler]:
    table: dict[str, Handler] = {
        "mm": _mm_like(0, plain_count=2, dtype_index=2),
        "addmm": _mm_like(1, plain_count=5, dtype_index=3),
        "bmm": _bmm_like(0, plain_count=2, dtype_index=2),
        "baddbmm": _bmm_like(1, plain_count=5, dtype_index=3),
        "_scaled_mm": _scaled_mm,
        "mv": _mv_like(0, plain_count=2),
        "addmv": _mv_like(1, plain_count=5),
        "dot": _dot,
        "vdot": _dot,
        "convolution": _conv(_CONV_GENERIC),
        "_convolution": _conv(_CONV_GENERIC),
        "convolution_overrideable": _conv(_CONV_GENERIC),
        "cudnn_convolution": _conv(_CONV_CUDNN),
        "cudnn_convolution_transpose": _conv(_CONV_CUDNN_T),
        "mkldnn_convolution": _conv(_CONV_MKLDNN),
        "convolution_backward": _conv_backward,
        "_scaled_dot_product_flash_attention": _attention_forward(True, None),
        "_scaled_dot_product_efficient_attention": _attention_forward(True, 4),
        "_scaled_dot_product_cudnn_attention": _attention_forward(True, 4),
        "_cudnn_attention_forward": _varlen_unknown((4, 5), _attention_forward(True, 8)),
        "_flash_attention_forward": _attention_forward(False, None),
        "_efficient_attention_forward": _varlen_unknown((4, 5), _attention_forward(False, 10)),
        "_scaled_dot_product_flash_attention_backward": _attention_backward(True),
        "_scaled_dot_product_efficient_attention_backward": _attention_backward(True, (4, 10, 4, 3)),
        "_scaled_dot_product_cudnn_attention_backward": _attention_backward(True),
        "_flash_attention_backward": _attention_backward(False),
        "_efficient_attention_backward": _varlen_unknown((6, 7), _attention_backward(False, (4, 15, 1, 0))),
        "_softmax": _softmax(5, backward=False),
        "_log_softmax": _softmax(5, backward=False),
        "softmax": _softmax(5, backward=False),
        "log_softmax": _softmax(5, backward=False),
        "_softmax_backward_data": _softmax(4, backward=True),
        "_log_softmax_backward_data": _softmax(4, backward=True),
        "native_layer_norm": _layer_norm,
        "native_layer_norm_backward": _layer_norm_backward,
        "native_batch_norm": _batch_norm,
        "cudnn_batch_norm": _batch_norm,
        "_batch_norm_impl_index": _batch_norm,
        "copy_": _copy_into,
        "_to_copy": _to_copy,
        "to": _to,
        "clone": _clone,
        "contiguous": _contiguous,
        "fill_": _fill,
        "zero_": _fill,
        "index_select": _index_select,
        "embedding": _embedding,
        "cat": _cat,
    }
    for name, (plan, per_element, what) in _REDUCTION_PLANS.items():
        pairwise = {"max": "maximum", "min": "minimum"}.get(name)
        table[name] = _reduction(plan, per_element, what, _elementwise(pairwise, False) if pairwise else None)
    for base in _ELEMENTWISE:
        table[base] = _elementwise(base, inplace=False)
        if base not in _NO_INPLACE:
            table[base + "_"] = _elementwise(base, inplace=True)
    table.update(dict.fromkeys(_VIEWS, _view))
    return {f"aten::{name}": handler for name, handler in table.items()}


_HANDLERS = _handlers()

FORMULA_OPS: frozenset[str] = frozenset(_HANDLERS)


# ---------------------------------------------------------------------------------------------------------------
# Entry points


def op_cost(
    name: str, shapes: list[Any], dtypes: list[str], strides: list[Any] | None, values: list[str] | None
) -> OpCost:
    """FLOPs and minimum bytes of one recorded op from its per-argument shapes, Kineto dtypes, strides and values.

    `strides` and `values` may be None (not recorded); `shapes`/`dtypes` empty when shapes were not recorded.
    """
    call = _parse_call(name, shapes, dtypes, strides, values)
    handler = _HANDLERS.get(name)
    return _unknown(call) if handler is None else handler(call)


_MALFORMED = object()


def _json_list(text: str | None) -> Any:
    """A JSON list column: None when not recorded (None, "" or JSON null), `_MALFORMED` when not a JSON list."""
    if text is None or text == "":
        return None
    if not isinstance(text, str):
        return _MALFORMED
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return _MALFORMED
    return value if value is None or isinstance(value, list) else _MALFORMED


def op_cost_of_row(
    name: str,
    input_shapes: str | None,
    input_dtypes: str | None,
    input_strides: str | None,
    input_values: str | None,
) -> OpCost:
    """`op_cost` from an ops row's JSON text columns; malformed text gives an unknown cost, never an exception."""
    shapes, dtypes, strides, values = (
        _json_list(text) for text in (input_shapes, input_dtypes, input_strides, input_values)
    )
    if any(column is _MALFORMED for column in (shapes, dtypes, strides, values)):
        return OpCost(flops=None, bytes=None, dtype="", matmul=False, rule="")
    return op_cost(name, shapes or [], dtypes or [], strides, values)
