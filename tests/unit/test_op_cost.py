"""FLOPs and minimum bytes of single aten ops (analyses/perf_model/op_cost), from rows shaped as Kineto records them.

Expected numbers are worked out by hand in each test; the last tests compare the FLOPs with torch's own counter.
"""

from __future__ import annotations

import json
import math
import random
import warnings
from typing import Any

import pytest

from tenprof.analyses.perf_model.op_cost import (
    FORMULA_OPS,
    OpCost,
    dtype_bytes,
    normalized_dtype,
    op_cost,
    op_cost_of_row,
)

Arg = tuple[list[Any], str, list[int], str]  # (shape, Kineto dtype, strides, concrete value)


def tensor(shape: list[int], dtype: str = "float", stride: list[int] | None = None) -> Arg:
    if stride is None:  # contiguous
        stride = [math.prod(shape[i + 1 :]) for i in range(len(shape))]
    return (shape, dtype, stride, "")


def scalar(value: str, kind: str = "Scalar") -> Arg:
    return ([], kind, [], value)


def ints(values: list[int]) -> Arg:
    return scalar(str(values), "ScalarList")


NONE: Arg = ([], "", [], "")


def cost(name: str, *args: Arg, strides: bool = True, values: bool = True) -> OpCost:
    return op_cost(
        name,
        [a[0] for a in args],
        [a[1] for a in args],
        [a[2] for a in args] if strides else None,
        [a[3] for a in args] if values else None,
    )


# ---------------------------------------------------------------------------------------------------------------
# 1. Matrix products


def test_mm_reads_a_transposed_input_like_a_contiguous_one() -> None:
    m, k, n = 64, 256, 128
    plain = cost("aten::mm", tensor([m, k]), tensor([k, n]))
    transposed = cost("aten::mm", tensor([m, k]), tensor([k, n], stride=[1, k]))
    assert plain.flops == 2 * 64 * 128 * 256
    assert plain.bytes == (64 * 256 + 256 * 128 + 64 * 128) * 4
    assert transposed == plain
    assert plain.matmul and plain.dtype == "float32" and plain.rule == "2*M*N*K"


def test_addmm_counts_the_bias_by_its_own_elements() -> None:
    m, k, n = 64, 256, 128
    expanded = cost("aten::addmm", tensor([m, n], stride=[0, 1]), tensor([m, k]), tensor([k, n]), scalar("1"))
    vector = cost("aten::addmm", tensor([n]), tensor([m, k]), tensor([k, n]), scalar("1"), scalar("1"))
    assert expanded.flops == vector.flops == 2 * 64 * 128 * 256  # the bias add is not counted, as torch
    assert expanded.bytes == vector.bytes == (128 + 64 * 256 + 256 * 128 + 64 * 128) * 4


def test_bmm_and_baddbmm_are_batched() -> None:
    bf16 = "c10::BFloat16"
    bmm = cost("aten::bmm", tensor([8, 32, 64], bf16), tensor([8, 64, 16], bf16))
    assert bmm.flops == 2 * 8 * 32 * 16 * 64
    assert bmm.bytes == (8 * 32 * 64 + 8 * 64 * 16 + 8 * 32 * 16) * 2
    assert bmm.dtype == "bfloat16" and bmm.matmul

    bias = tensor([8, 32, 16], bf16, stride=[0, 0, 1])  # one row of 16, broadcast
    baddbmm = cost("aten::baddbmm", bias, tensor([8, 32, 64], bf16), tensor([8, 64, 16], bf16), scalar("1"))
    assert baddbmm.flops == 2 * 8 * 32 * 16 * 64
    assert baddbmm.bytes == (16 + 8 * 32 * 64 + 8 * 64 * 16 + 8 * 32 * 16) * 2


def test_vector_products_and_mismatched_matrices() -> None:
    assert cost("aten::mv", tensor([32, 64]), tensor([64])).flops == 2 * 32 * 64
    assert cost("aten::addmv", tensor([32]), tensor([32, 64]), tensor([64]), scalar("1")).flops == 2 * 32 * 64
    dot = cost("aten::dot", tensor([100]), tensor([100]))
    assert dot.flops == 2 * 100 and dot.bytes == (100 + 100 + 1) * 4
    assert cost("aten::mm", tensor([4, 5]), tensor([6, 7])).flops is None  # K differs: not a product


def test_out_and_dtype_overloads_write_their_own_dtype() -> None:
    a, b = tensor([64, 32], "c10::BFloat16"), tensor([32, 16], "c10::BFloat16")
    into = cost("aten::mm", a, b, tensor([64, 16]))  # mm.out: the destination is written, not read
    assert into.flops == 2 * 64 * 16 * 32 and into.bytes == (64 * 32 + 32 * 16) * 2 + 64 * 16 * 4
    as_float = cost("aten::mm", a, b, scalar("6"))  # mm.dtype(self, mat2, out_dtype=float32)
    assert as_float.bytes == into.bytes and as_float.dtype == "bfloat16"
    bias = tensor([16], "c10::BFloat16")
    addmm_out = cost("aten::addmm", bias, a, b, scalar("1"), scalar("1"), tensor([64, 16], "c10::BFloat16"))
    assert addmm_out.bytes == (16 + 64 * 32 + 32 * 16 + 64 * 16) * 2


def test_scaled_mm_writes_its_out_dtype() -> None:
    fp8 = "c10::Float8_e4m3fn"
    args = (tensor([64, 128], fp8), tensor([128, 32], fp8, stride=[1, 128]), tensor([], "float"), tensor([], "float"))
    c = cost("aten::_scaled_mm", *args, NONE, NONE, scalar("15"), scalar("False"))
    assert c.flops == 2 * 64 * 32 * 128
    assert c.bytes == 64 * 128 + 128 * 32 + 4 + 4 + 64 * 32 * 2
    assert c.dtype == "float8" and c.matmul


# ---------------------------------------------------------------------------------------------------------------
# 2. Convolution

# conv2d(x [2, 4, 9, 9], w [6, 2, 3, 3], bias [6], stride 2, padding 1, groups 2) -> [2, 6, 5, 5]:
# (9 + 2*1 - 1*(3-1) - 1) // 2 + 1 = 5; FLOPs 2 * 300 outputs * (4/2 channels) * 9 taps = 10800
CONV_X, CONV_W = tensor([2, 4, 9, 9]), tensor([6, 2, 3, 3])


def test_convolution_forward_with_stride_padding_and_groups() -> None:
    params = (ints([2, 2]), ints([1, 1]), ints([1, 1]), scalar("False"), ints([0, 0]), scalar("2"))
    c = cost("aten::convolution", CONV_X, CONV_W, tensor([6]), *params)
    assert c.flops == 2 * (2 * 6 * 5 * 5) * 2 * 9 == 10800
    assert c.bytes == (2 * 4 * 81 + 6 * 2 * 9 + 6 + 2 * 6 * 5 * 5) * 4
    assert c.matmul and c.dtype == "float32"
    # cudnn_convolution(self, weight, padding, stride, dilation, groups, benchmark, deterministic, allow_tf32)
    cudnn = cost(
        "aten::cudnn_convolution", CONV_X, CONV_W, ints([1, 1]), ints([2, 2]), ints([1, 1]), scalar("2"),
        scalar("False"), scalar("False"), scalar("True"),
    )  # fmt: skip
    assert cudnn.flops == 10800 and cudnn.bytes == (648 + 108 + 300) * 4
    assert cost("aten::convolution", CONV_X, CONV_W, tensor([6]), *params, values=False).flops is None


def test_depthwise_and_transposed_convolutions() -> None:
    x, w = tensor([1, 4, 8, 8]), tensor([4, 1, 3, 3])
    params = (ints([1]), ints([1]), ints([1]), scalar("False"), ints([0]), scalar("4"))  # one-item lists expand
    depthwise = cost("aten::convolution", x, w, NONE, *params)
    assert depthwise.flops == 2 * (4 * 8 * 8) * 1 * 9 and not depthwise.matmul
    # conv_transpose2d(x [1, 4, 5, 5], w [4, 3, 3, 3], stride 2, padding 1, output_padding 1) -> [1, 3, 10, 10]:
    # (5-1)*2 - 2*1 + 1*(3-1) + 1 + 1 = 10; FLOPs 2 * 100 inputs * 3 outputs per group * 9 taps
    x, w = tensor([1, 4, 5, 5]), tensor([4, 3, 3, 3])
    params = (ints([2, 2]), ints([1, 1]), ints([1, 1]), scalar("True"), ints([1, 1]), scalar("1"))
    transposed = cost("aten::convolution", x, w, NONE, *params)
    assert transposed.flops == 2 * (4 * 25) * 3 * 9
    assert transposed.bytes == (100 + 108 + 3 * 10 * 10) * 4


def test_convolution_backward_counts_the_requested_gradients() -> None:
    grad = tensor([2, 6, 5, 5])
    params = (ints([6]), ints([2, 2]), ints([1, 1]), ints([1, 1]), scalar("False"), ints([0, 0]), scalar("2"))
    both = cost(
        "aten::convolution_backward", grad, CONV_X, CONV_W, *params, scalar("[True, True, False]", "ScalarList")
    )
    assert both.flops == 2 * 10800
    # reads grad_output, weight (for grad_input) and input (for grad_weight); writes both gradients
    assert both.bytes == (300 + 108 + 648 + 648 + 108) * 4
    weight_only = cost("aten::convolution_backward", grad, CONV_X, CONV_W, *params, ints([False, True, False]))
    assert weight_only.flops == 10800 and weight_only.bytes == (300 + 648 + 108) * 4
    with_bias = cost("aten::convolution_backward", grad, CONV_X, CONV_W, *params, ints([True, True, True]))
    assert with_bias.flops == 2 * 10800 and with_bias.bytes == (300 + 108 + 648 + 648 + 108 + 6) * 4
    assert cost("aten::convolution_backward", grad, CONV_X, CONV_W, *params, NONE, values=False).flops is None


# ---------------------------------------------------------------------------------------------------------------
# 3. Attention


def test_flash_attention_forward() -> None:
    b, h, s, d = 2, 8, 128, 64
    q = tensor([b, h, s, d], "c10::BFloat16")
    flags = (scalar("0."), scalar("True"), scalar("False"), NONE)
    c = cost("aten::_scaled_dot_product_flash_attention", q, q, q, *flags)
    assert c.flops == 2 * 2 * 8 * 128 * 128 * 64 + 2 * 2 * 8 * 128 * 128 * 64
    assert c.bytes == 3 * (2 * 8 * 128 * 64) * 2 + (2 * 8 * 128 * 64) * 2 + (2 * 8 * 128) * 4  # q k v, out, lse
    assert c.matmul and c.dtype == "bfloat16" and "causal" in c.rule
    # grouped-query attention: 2 key/value heads serve the 8 query heads, FLOPs count the query heads
    kv = tensor([b, 2, s, d], "c10::BFloat16")
    assert cost("aten::_scaled_dot_product_flash_attention", q, kv, kv, *flags).flops == c.flops
    # _flash_attention_forward takes (batch, seq, heads, dim)
    q_bshd = tensor([b, s, h, d], "c10::BFloat16")
    inner = cost("aten::_flash_attention_forward", q_bshd, q_bshd, q_bshd, NONE, NONE, scalar("128"), scalar("128"))
    assert inner.flops == c.flops and inner.bytes == c.bytes
    # variable-length batches (3-d inputs): their sequence lengths are not in the row
    q_var = tensor([256, h, d], "c10::BFloat16")
    offsets = tensor([3], "int")
    assert cost("aten::_flash_attention_forward", q_var, q_var, q_var, offsets, offsets).flops is None


def test_flash_attention_backward() -> None:
    b, h, s, d = 2, 8, 128, 64
    q, lse = tensor([b, h, s, d], "c10::BFloat16"), tensor([b, h, s], "float")
    c = cost(
        "aten::_scaled_dot_product_flash_attention_backward", q, q, q, q, q, lse, NONE, NONE, scalar("128"),
        scalar("128"), scalar("0."), scalar("False"), NONE, NONE, NONE,
    )  # fmt: skip
    assert c.flops == 2 * 2 * 8 * 128 * 128 * (3 * 64 + 2 * 64)
    n = 2 * 8 * 128 * 64
    assert c.bytes == 5 * n * 2 + 2 * 8 * 128 * 4 + 3 * n * 2  # grad_out q k v out, lse; grads of q k v
    assert c.matmul


# ---------------------------------------------------------------------------------------------------------------
# 4. Elementwise


def test_broadcast_add_reads_each_input_once() -> None:
    c = cost("aten::add", tensor([8, 1, 16]), tensor([16]), scalar("1"))
    assert c.flops == 128
    assert c.bytes == (128 + 16 + 128) * 4
    assert not c.matmul and c.dtype == "float32"


def test_in_place_add_writes_self_once() -> None:
    c = cost("aten::add_", tensor([4, 16]), tensor([16]), scalar("1"))
    assert c.flops == 64
    assert c.bytes == (64 + 16 + 64) * 4  # self read as an operand, other read, self written


def test_a_scalar_argument_moves_nothing() -> None:
    c = cost("aten::add", tensor([1000], "c10::BFloat16"), scalar("2"), scalar("1"))
    assert c.flops == 1000 and c.bytes == 1000 * 2 * 2 and c.dtype == "bfloat16"
    compare = cost("aten::gt", tensor([10]), scalar("0"))
    assert compare.bytes == 10 * 4 + 10 * 1  # comparisons write bool
    # a Python number wrapped as a 0-dim double tensor does not decide the result dtype
    assert cost("aten::mul", tensor([10], "c10::Half"), tensor([], "double")).dtype == "float16"
    assert cost("aten::mul", tensor([10], "long int"), tensor([], "double")).dtype == "float32"
    assert cost("aten::add", tensor([10], "c10::Half"), tensor([10], "c10::BFloat16")).dtype == "float32"
    assert cost("aten::abs", tensor([10], "c10::complex<float>")).bytes == 10 * 8 + 10 * 4  # |z| is real


def test_per_element_counts_and_mismatched_shapes() -> None:
    assert cost("aten::gelu", tensor([10]), scalar("none")).flops == 5 * 10
    assert cost("aten::addcmul_", tensor([10]), tensor([10]), tensor([10]), scalar("1")).flops == 2 * 10
    assert cost("aten::where", tensor([10], "bool"), tensor([10], "c10::Half"), tensor([1], "c10::Half")).bytes == (
        10 + 10 * 2 + 2 + 10 * 2
    )
    assert cost("aten::add", tensor([3]), tensor([4])).flops is None  # does not broadcast


# ---------------------------------------------------------------------------------------------------------------
# 5. Reductions and normalisations


def test_sum_over_dims_with_and_without_keepdim() -> None:
    x = tensor([8, 16, 32])
    kept = cost("aten::sum", x, ints([1]), scalar("True"), NONE)
    dropped = cost("aten::sum", x, ints([-2]), scalar("False"), NONE)
    assert kept.flops == dropped.flops == 8 * 16 * 32
    assert kept.bytes == dropped.bytes == (4096 + 8 * 32) * 4
    everything = cost("aten::sum", x, NONE)  # sum(self, *, dtype=None)
    assert everything.bytes == (4096 + 1) * 4
    assert cost("aten::sum", tensor([10], "long int"), NONE).bytes == (10 + 1) * 8


def test_sum_with_unreadable_dims_still_counts_flops() -> None:
    c = cost("aten::sum", tensor([8, 16, 32]), ints([1]), scalar("True"), NONE, values=False)
    assert c.flops == 4096
    assert c.bytes is None


def test_max_over_a_dim_also_writes_indices() -> None:
    c = cost("aten::max", tensor([8, 16]), scalar("1"), scalar("False"))
    assert c.flops == 128 and c.bytes == 128 * 4 + 8 * 4 + 8 * 8
    assert cost("aten::max", tensor([8, 16]), tensor([16])).bytes == (128 + 16 + 128) * 4  # max.other


def test_layer_norm_forward_and_backward() -> None:
    x, w, b = tensor([4, 16, 32]), tensor([32]), tensor([32])
    c = cost("aten::native_layer_norm", x, ints([32]), w, b, scalar("1e-05"))
    assert c.flops == (5 + 1 + 1) * 2048
    assert c.bytes == (2048 + 32 + 32 + 2048 + 64 + 64) * 4  # input, weight, bias; out, mean, rstd (64 rows)
    half = tensor([4, 16, 32], "c10::BFloat16")
    hw = tensor([32], "c10::BFloat16")
    c16 = cost("aten::native_layer_norm", half, ints([32]), hw, hw, scalar("1e-05"), values=False)
    assert c16.bytes == 2048 * 2 + 2 * 32 * 2 + 2048 * 2 + 2 * 64 * 4  # mean/rstd in float32
    stats = tensor([4, 16, 1])
    back = cost("aten::native_layer_norm_backward", x, x, ints([32]), stats, stats, w, b, ints([True, True, True]))
    assert back.flops == (10 + 2 + 1) * 2048
    assert back.bytes == (2048 + 2048 + 64 + 64 + 32 + 2048 + 32 + 32) * 4


def test_batch_norm_needs_the_training_flag() -> None:
    x, c = tensor([8, 4, 10, 10]), tensor([4])
    train = cost("aten::native_batch_norm", x, c, c, c, c, scalar("True"), scalar("0.1"), scalar("1e-05"))
    assert train.flops == (5 + 2) * 3200
    assert train.bytes == (3200 + 4 * 4 + 3200 + 2 * 4 + 2 * 4) * 4  # + running stats written, saved mean/invstd
    evaluation = cost("aten::native_batch_norm", x, c, c, c, c, scalar("False"), scalar("0.1"), scalar("1e-05"))
    assert evaluation.flops == (2 + 2) * 3200 and evaluation.bytes == (3200 + 16 + 3200) * 4
    assert cost("aten::native_batch_norm", x, c, c, c, c, NONE, NONE, NONE, values=False).flops is None


# ---------------------------------------------------------------------------------------------------------------
# 6. and 7. Data movement and views


def test_to_copy_float_to_bfloat16() -> None:
    n = 1000
    args = (tensor([n]), scalar("15"), NONE, NONE, NONE, scalar("False"), NONE)
    c = cost("aten::_to_copy", *args)
    assert c.flops == 0.0 and c.bytes == 4 * n + 2 * n and c.dtype == "bfloat16"
    unreadable = cost("aten::_to_copy", *args, values=False)
    assert unreadable.flops == 0.0 and unreadable.bytes is None
    # aten::to with the dtype it already has, no copy asked: returns self, nothing moves
    same = cost("aten::to", tensor([n]), scalar("6"), scalar("False"), scalar("False"), NONE)
    assert same.flops == 0.0 and same.bytes == 0.0


def test_copies_clones_and_contiguous() -> None:
    assert cost("aten::copy_", tensor([8, 16], "c10::BFloat16"), tensor([8, 16]), scalar("False")).bytes == (
        128 * 2 + 128 * 4
    )
    assert cost("aten::contiguous", tensor([8, 16]), scalar("0")).bytes == 0.0  # already contiguous
    assert cost("aten::contiguous", tensor([16, 8], stride=[1, 16]), scalar("0")).bytes == 2 * 128 * 4
    assert cost("aten::contiguous", tensor([8, 16]), scalar("0"), strides=False).bytes is None
    assert cost("aten::fill_", tensor([64]), scalar("0.")).bytes == 64 * 4
    cat = cost("aten::cat", ([[8, 16], [8, 16]], "TensorList", [], ""), scalar("0"))
    assert cat.flops == 0.0 and cat.bytes is None  # Kineto does not record the dtypes of a TensorList


def test_embedding_reads_indices_and_gathered_rows() -> None:
    c = cost("aten::embedding", tensor([50257, 768]), tensor([8, 256], "long int"), scalar("-1"))
    assert c.flops == 0.0
    assert c.bytes == 2048 * 8 + 2048 * 768 * 4 + 2048 * 768 * 4
    select = cost("aten::index_select", tensor([50257, 768]), scalar("0"), tensor([2048], "long int"))
    assert select.bytes == c.bytes


def test_a_view_is_a_known_zero() -> None:
    c = cost("aten::view", tensor([8, 256]), ints([2048]))
    assert c.flops == 0.0 and c.bytes == 0.0 and c.flops is not None and c.bytes is not None
    assert cost("aten::transpose", tensor([4, 8]), scalar("0"), scalar("1"), values=False).bytes == 0.0


# ---------------------------------------------------------------------------------------------------------------
# 8. Unknown


@pytest.mark.parametrize(
    "name", ["aten::my_custom_op", "aten::matmul", "aten::linear", "aten::scaled_dot_product_attention"]
)
def test_ops_without_a_formula_are_unknown_not_zero(name: str) -> None:
    c = cost(name, tensor([64, 64], "c10::BFloat16"), tensor([64, 64], "c10::BFloat16"))
    assert c.flops is None
    assert c.bytes is None
    assert c.dtype == "bfloat16" and c.rule == "" and not c.matmul
    assert name not in FORMULA_OPS


def test_shapes_not_recorded_make_an_op_unknown() -> None:
    assert op_cost("aten::mm", [], [], None, None).flops is None
    assert op_cost("aten::add", [], [], None, None).bytes is None
    assert op_cost_of_row("aten::mm", None, None, None, None).flops is None
    assert op_cost_of_row("aten::addmm", "", "", "", "").flops is None


def test_formula_ops_cover_every_group() -> None:
    for name in ["aten::mm", "aten::convolution_backward", "aten::_flash_attention_backward", "aten::add_",
                 "aten::native_layer_norm", "aten::_to_copy", "aten::view", "aten::cat"]:  # fmt: skip
        assert name in FORMULA_OPS


# ---------------------------------------------------------------------------------------------------------------
# dtypes and row parsing


def test_dtypes_normalize() -> None:
    assert normalized_dtype("c10::BFloat16") == "bfloat16" and dtype_bytes("c10::BFloat16") == 2
    assert normalized_dtype("c10::Half") == "float16" and dtype_bytes("c10::Half") == 2
    assert normalized_dtype("c10::Float8_e4m3fn") == normalized_dtype("c10::Float8_e5m2") == "float8"
    assert dtype_bytes("c10::Float8_e5m2") == 1
    assert normalized_dtype("float") == "float32" and normalized_dtype("double") == "float64"
    assert normalized_dtype("long int") == "int64" and dtype_bytes("long int") == 8
    assert normalized_dtype("int") == "int32" and normalized_dtype("unsigned char") == "uint8"
    assert normalized_dtype("signed char") == "int8" and normalized_dtype("bool") == "bool"
    assert normalized_dtype("c10::complex<float>") == "complex64" and dtype_bytes("c10::complex<float>") == 8
    assert normalized_dtype("Scalar") == "" and dtype_bytes("Scalar") is None and dtype_bytes("") is None


def test_a_row_reads_like_its_lists() -> None:
    shapes, dtypes = [[64, 256], [256, 128]], ["float", "float"]
    row = op_cost_of_row(
        "aten::mm", json.dumps(shapes), json.dumps(dtypes), json.dumps([[256, 1], [1, 256]]), json.dumps(["", ""])
    )
    assert row == op_cost("aten::mm", shapes, dtypes, None, None)
    assert op_cost_of_row("aten::mm", json.dumps(shapes), json.dumps(dtypes), "null", "null") == row  # older rows


@pytest.mark.parametrize(
    "columns",
    [
        ("[[64, 256], [256", '["float", "float"]', None, None),
        ("[[64, 256], [256, 128]]", "not json", None, None),
        ("[[64, 256], [256, 128]]", '["float", "float"]', "{", None),
        ("[[64, 256], [256, 128]]", '["float", "float"]', None, '{"a": 1}'),
        ('{"a": 1}', '["float"]', None, None),
        ("[" * 100_000, "[]", None, None),
    ],
)
def test_malformed_rows_are_unknown_without_raising(columns: tuple[str | None, ...]) -> None:
    c = op_cost_of_row("aten::mm", *columns)
    assert c.flops is None and c.bytes is None


def test_junk_arguments_never_raise() -> None:
    rng = random.Random(7)
    junk: list[Any] = [[], [0], [3, 4], [-1], [2.5], [[1, 2]], "x", None, True, [1, 2, 3, 4], [2**70, 2**70]]
    kinds = ["float", "c10::Half", "long int", "bool", "Scalar", "ScalarList", "TensorList", "", "weird"]
    texts = ["", "1", "-1", "[1, 1]", "[True, False, True]", "True", "[", "15", "0.", "[2**9]", "[]", "x"]
    for name in sorted(FORMULA_OPS):
        for _ in range(12):
            count = rng.randrange(0, 12)
            shapes = [rng.choice(junk) for _ in range(count)]
            dtypes = [rng.choice(kinds) for _ in range(count)]
            strides = [rng.choice(junk) for _ in range(count)] if rng.random() < 0.5 else None
            values = [rng.choice(texts) for _ in range(count)] if rng.random() < 0.7 else None
            result = op_cost(name, shapes, dtypes, strides, values)
            assert result.flops is None or result.flops >= 0


# ---------------------------------------------------------------------------------------------------------------
# Cross-check with torch.utils.flop_counter (where torch is installed)


@pytest.mark.parametrize("m,k,n,b", [(64, 128, 256, 3), (1, 7, 5, 1), (300, 17, 9, 4)])
def test_matrix_products_agree_with_torch(m: int, k: int, n: int, b: int) -> None:
    torch = pytest.importorskip("torch")
    from torch.utils.flop_counter import flop_registry

    aten = torch.ops.aten
    assert cost("aten::mm", tensor([m, k]), tensor([k, n])).flops == flop_registry[aten.mm]((m, k), (k, n))
    assert cost("aten::addmm", tensor([n]), tensor([m, k]), tensor([k, n])).flops == flop_registry[aten.addmm](
        (n,), (m, k), (k, n)
    )
    assert cost("aten::bmm", tensor([b, m, k]), tensor([b, k, n])).flops == flop_registry[aten.bmm](
        (b, m, k), (b, k, n)
    )
    assert cost("aten::baddbmm", tensor([b, m, n]), tensor([b, m, k]), tensor([b, k, n])).flops == flop_registry[
        aten.baddbmm
    ]((b, m, n), (b, m, k), (b, k, n))
    q, kv = (b, 4, m, 32), (b, 2, k, 32)
    sdpa = cost("aten::_scaled_dot_product_flash_attention", tensor(list(q)), tensor(list(kv)), tensor(list(kv)))
    assert sdpa.flops == flop_registry[aten._scaled_dot_product_flash_attention](q, kv, kv)


CONVS = [
    # x, w, stride, padding, dilation, transposed, output_padding, groups
    ([2, 4, 9, 9], [6, 2, 3, 3], [2, 2], [1, 1], [1, 1], False, [0, 0], 2),
    ([1, 3, 17, 11], [8, 3, 5, 3], [1, 2], [2, 0], [2, 1], False, [0, 0], 1),
    ([2, 6, 7], [6, 1, 3], [1], [1], [1], False, [0], 6),
    ([1, 4, 5, 5], [4, 3, 3, 3], [2, 2], [1, 1], [1, 1], True, [1, 1], 1),
    ([1, 2, 4, 5, 6], [4, 2, 2, 3, 3], [1, 1, 2], [0, 1, 1], [1, 1, 1], False, [0, 0, 0], 1),
]


@pytest.mark.parametrize("x_shape,w_shape,stride,padding,dilation,transposed,output_padding,groups", CONVS)
def test_convolutions_agree_with_torch(
    x_shape: list[int],
    w_shape: list[int],
    stride: list[int],
    padding: list[int],
    dilation: list[int],
    transposed: bool,
    output_padding: list[int],
    groups: int,
) -> None:
    torch = pytest.importorskip("torch")
    from torch.utils.flop_counter import flop_registry

    aten = torch.ops.aten
    x, w = torch.zeros(x_shape), torch.zeros(w_shape)
    params = (stride, padding, dilation, transposed, output_padding, groups)
    mask = [True, True, False]
    with warnings.catch_warnings():  # the flags context warns about TF32 on Intel GPUs
        warnings.simplefilter("ignore")
        # torch's own kernels give the output shapes; without oneDNN, whose first use costs seconds
        with torch.backends.mkldnn.flags(enabled=False):
            out = aten.convolution(x, w, None, *params)
            grad = torch.zeros(out.shape)
            grads = aten.convolution_backward(grad, x, w, None, *params, mask)
    torch_forward = flop_registry[aten.convolution](x, w, None, *params, out_val=out)
    torch_backward = flop_registry[aten.convolution_backward](grad, x, w, None, *params, mask, out_val=grads)

    recorded = (ints(stride), ints(padding), ints(dilation), scalar(str(transposed)), ints(output_padding))
    ours = cost("aten::convolution", tensor(x_shape), tensor(w_shape), NONE, *recorded, scalar(str(groups)))
    assert ours.flops == torch_forward
    assert ours.bytes == (x.numel() + w.numel() + out.numel()) * 4
    ours_back = cost(
        "aten::convolution_backward", tensor(list(out.shape)), tensor(x_shape), tensor(w_shape), NONE, *recorded,
        scalar(str(groups)), scalar(str(mask), "ScalarList"),
    )  # fmt: skip
    # torch counts grad_weight as groups x the forward's work; the work (and this count) is the forward's
    assert ours_back.flops == torch_backward - (groups - 1) * torch_forward
    assert ours_back.flops == 2 * torch_forward


def test_batch_norm_backward_reads_both_tensors_and_writes_per_output_mask() -> None:
    # (grad_out, input, weight, running_mean, running_var, save_mean, save_invstd, train, eps, output_mask)
    x, c = tensor([8, 4, 10, 10]), tensor([4])
    flags = (scalar("True"), scalar("1e-05"))
    full = cost("aten::native_batch_norm_backward", x, x, c, c, c, c, c, *flags, ints([True, True, True]))
    assert full.flops == (10 + 2 + 1) * 3200
    # grad_out and input read, five per-channel vectors read, grad_input written, grad_weight and grad_bias
    assert full.bytes == (3200 + 3200 + 5 * 4 + 3200 + 2 * 4) * 4
    only_input = cost("aten::native_batch_norm_backward", x, x, c, c, c, c, c, *flags, ints([True, False, False]))
    assert only_input.flops == 10 * 3200 and only_input.bytes == (3200 + 3200 + 5 * 4 + 3200) * 4
    assert cost("aten::native_batch_norm_backward", NONE, x, c, values=False).flops is None
