"""Rule group 1, matrix products: mm, addmm, _scaled_mm, bmm, baddbmm, mv, addmv, dot, vdot.

Each handler reads its matrices' shapes (and, past the plain overload's arguments, an out= destination or
out_dtype) and charges 2 FLOPs per multiply-add, ``matmul=True``; a shape that does not make a product is unknown.
"""

from __future__ import annotations

from tenprof.analyses.perf_model.op_cost.arguments import Arg, Call, dtype_value
from tenprof.analyses.perf_model.op_cost.result import Handler, OpCost, cost, read, traffic, unknown, write


def _matmul_result(
    call: Call, operands: int, flops: int, out_elements: int, out_dtype: str | None, rule: str, a: Arg
) -> OpCost:
    """The first `operands` arguments are read (absent optionals skip); the output is written once."""
    reads = [read(t) for t in (call.tensor(i) for i in range(operands)) if t is not None]
    return cost(flops, traffic([*reads, write(out_elements, out_dtype)]), a.dtype, True, rule)


def _matmul_out_dtype(call: Call, plain_count: int, dtype_index: int | None, default: str) -> str | None:
    """The output dtype, from which overload was recorded (Kineto names the op, not the overload).

    Past the plain overload's arguments, a trailing tensor is an out= destination (mm.out, addmm.out) and a
    ScalarType at `dtype_index` the ".dtype" overloads' out_dtype (mm.dtype, addmm.dtype); otherwise mat1's dtype.
    """
    if len(call.args) <= plain_count:
        return default
    out = call.tensor(len(call.args) - 1)
    if out is not None:
        return out.dtype
    return default if dtype_index is None else dtype_value(call, dtype_index, default)


def _mm_shapes(a: Arg | None, b: Arg | None) -> tuple[int, int, int] | None:
    if a is None or b is None or a.shape is None or b.shape is None:
        return None
    if len(a.shape) != 2 or len(b.shape) != 2 or a.shape[1] != b.shape[0]:
        return None
    return a.shape[0], a.shape[1], b.shape[1]


def _bmm_shapes(a: Arg | None, b: Arg | None) -> tuple[int, int, int, int] | None:
    if a is None or b is None or a.shape is None or b.shape is None:
        return None
    if len(a.shape) != 3 or len(b.shape) != 3 or a.shape[0] != b.shape[0] or a.shape[2] != b.shape[1]:
        return None
    return a.shape[0], a.shape[1], a.shape[2], b.shape[2]


def mm_like(first: int, plain_count: int, dtype_index: int) -> Handler:
    """mm (self, mat2) and addmm (bias, mat1, mat2): 2*M*N*K, output M*N."""

    def handler(call: Call) -> OpCost:
        a, b = call.tensor(first), call.tensor(first + 1)
        dims = _mm_shapes(a, b)
        if a is None or dims is None or (first and call.tensor(0) is None):  # addmm/baddbmm need their bias
            return unknown(call)
        m, k, n = dims
        out_dtype = _matmul_out_dtype(call, plain_count, dtype_index, a.dtype)
        return _matmul_result(call, first + 2, 2 * m * n * k, m * n, out_dtype, "2*M*N*K", a)

    return handler


def bmm_like(first: int, plain_count: int, dtype_index: int) -> Handler:
    """bmm (self, mat2) and baddbmm (bias, batch1, batch2): 2*B*M*N*K, output B*M*N."""

    def handler(call: Call) -> OpCost:
        a, b = call.tensor(first), call.tensor(first + 1)
        dims = _bmm_shapes(a, b)
        if a is None or dims is None or (first and call.tensor(0) is None):  # addmm/baddbmm need their bias
            return unknown(call)
        batch, m, k, n = dims
        out_dtype = _matmul_out_dtype(call, plain_count, dtype_index, a.dtype)
        return _matmul_result(call, first + 2, 2 * batch * m * n * k, batch * m * n, out_dtype, "2*B*M*N*K", a)

    return handler


def scaled_mm(call: Call) -> OpCost:
    # (self, mat2, scale_a, scale_b, bias?, scale_result?, out_dtype?, use_fast_accum[, out]): fp8 in, out_dtype out.
    a, b = call.tensor(0), call.tensor(1)
    dims = _mm_shapes(a, b)
    if a is None or dims is None:
        return unknown(call)
    m, k, n = dims
    out = call.tensor(8)
    out_dtype = out.dtype if out is not None else dtype_value(call, 6, a.dtype)
    return _matmul_result(call, 6, 2 * m * n * k, m * n, out_dtype, "2*M*N*K", a)


def mv_like(first: int, plain_count: int) -> Handler:
    """mv (mat, vec) and addmv (bias, mat, vec): 2*M*N, output M."""

    def handler(call: Call) -> OpCost:
        mat, vec = call.tensor(first), call.tensor(first + 1)
        if mat is None or vec is None or (first and call.tensor(0) is None):
            return unknown(call)
        if mat.shape is None or vec.shape is None or len(mat.shape) != 2 or vec.shape != mat.shape[1:]:
            return unknown(call)
        m, n = mat.shape
        out_dtype = _matmul_out_dtype(call, plain_count, None, mat.dtype)
        return _matmul_result(call, first + 2, 2 * m * n, m, out_dtype, "2*M*N", mat)

    return handler


def dot(call: Call) -> OpCost:
    a, b = call.tensor(0), call.tensor(1)
    if a is None or b is None or a.shape is None or len(a.shape) != 1 or a.shape != b.shape:
        return unknown(call)
    return _matmul_result(call, 2, 2 * a.shape[0], 1, _matmul_out_dtype(call, 2, None, a.dtype), "2*N", a)
