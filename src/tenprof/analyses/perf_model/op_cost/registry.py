"""The op name -> handler table, `FORMULA_OPS` (the ops it has a formula for) and the entry points.

`op_cost` parses a call and runs its op's handler (unknown when there is none); `op_cost_of_row` reads an ops
row's JSON text columns first, and gives an unknown cost, never an exception, for malformed text.
"""

from __future__ import annotations

import json
from typing import Any

from tenprof.analyses.perf_model.op_cost.arguments import parse_call
from tenprof.analyses.perf_model.op_cost.attention import attention_backward, attention_forward, varlen_unknown
from tenprof.analyses.perf_model.op_cost.convolution import (
    CONV_CUDNN,
    CONV_CUDNN_T,
    CONV_GENERIC,
    CONV_MKLDNN,
    conv,
    conv_backward,
)
from tenprof.analyses.perf_model.op_cost.elementwise import ELEMENTWISE, NO_INPLACE, elementwise
from tenprof.analyses.perf_model.op_cost.matmul import bmm_like, dot, mm_like, mv_like, scaled_mm
from tenprof.analyses.perf_model.op_cost.movement import (
    VIEWS,
    cat,
    clone,
    contiguous,
    copy_into,
    embedding,
    fill,
    index_select,
    to,
    to_copy,
    view,
)
from tenprof.analyses.perf_model.op_cost.reductions import (
    REDUCTION_PLANS,
    batch_norm,
    batch_norm_backward,
    layer_norm,
    layer_norm_backward,
    reduction_handler,
    softmax,
)
from tenprof.analyses.perf_model.op_cost.result import Handler, OpCost, unknown

# ---------------------------------------------------------------------------------------------------------------
# The table


def _handlers() -> dict[str, Handler]:
    table: dict[str, Handler] = {
        "mm": mm_like(0, plain_count=2, dtype_index=2),
        "addmm": mm_like(1, plain_count=5, dtype_index=3),
        "bmm": bmm_like(0, plain_count=2, dtype_index=2),
        "baddbmm": bmm_like(1, plain_count=5, dtype_index=3),
        "_scaled_mm": scaled_mm,
        "mv": mv_like(0, plain_count=2),
        "addmv": mv_like(1, plain_count=5),
        "dot": dot,
        "vdot": dot,
        "convolution": conv(CONV_GENERIC),
        "_convolution": conv(CONV_GENERIC),
        "convolution_overrideable": conv(CONV_GENERIC),
        "cudnn_convolution": conv(CONV_CUDNN),
        "cudnn_convolution_transpose": conv(CONV_CUDNN_T),
        "mkldnn_convolution": conv(CONV_MKLDNN),
        "convolution_backward": conv_backward,
        "_scaled_dot_product_flash_attention": attention_forward(True, None),
        "_scaled_dot_product_efficient_attention": attention_forward(True, 4),
        "_scaled_dot_product_cudnn_attention": attention_forward(True, 4),
        "_cudnn_attention_forward": varlen_unknown((4, 5), attention_forward(True, 8)),
        "_flash_attention_forward": attention_forward(False, None),
        "_efficient_attention_forward": varlen_unknown((4, 5), attention_forward(False, 10)),
        "_scaled_dot_product_flash_attention_backward": attention_backward(True),
        "_scaled_dot_product_efficient_attention_backward": attention_backward(True, (4, 10, 4, 3)),
        "_scaled_dot_product_cudnn_attention_backward": attention_backward(True),
        "_flash_attention_backward": attention_backward(False),
        "_efficient_attention_backward": varlen_unknown((6, 7), attention_backward(False, (4, 15, 1, 0))),
        "_softmax": softmax(5, backward=False),
        "_log_softmax": softmax(5, backward=False),
        "softmax": softmax(5, backward=False),
        "log_softmax": softmax(5, backward=False),
        "_softmax_backward_data": softmax(4, backward=True),
        "_log_softmax_backward_data": softmax(4, backward=True),
        "native_layer_norm": layer_norm,
        "native_layer_norm_backward": layer_norm_backward,
        "native_batch_norm": batch_norm,
        "cudnn_batch_norm": batch_norm,
        "_batch_norm_impl_index": batch_norm,
        "native_batch_norm_backward": batch_norm_backward,
        "batch_norm_backward": batch_norm_backward,
        "copy_": copy_into,
        "_to_copy": to_copy,
        "to": to,
        "clone": clone,
        "contiguous": contiguous,
        "fill_": fill,
        "zero_": fill,
        "index_select": index_select,
        "embedding": embedding,
        "cat": cat,
    }
    for name, (plan, per_element, what) in REDUCTION_PLANS.items():
        pairwise = {"max": "maximum", "min": "minimum"}.get(name)
        table[name] = reduction_handler(plan, per_element, what, elementwise(pairwise, False) if pairwise else None)
    for base in ELEMENTWISE:
        table[base] = elementwise(base, inplace=False)
        if base not in NO_INPLACE:
            table[base + "_"] = elementwise(base, inplace=True)
    table.update(dict.fromkeys(VIEWS, view))
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
    call = parse_call(name, shapes, dtypes, strides, values)
    handler = _HANDLERS.get(name)
    return unknown(call) if handler is None else handler(call)


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
