"""The op name -> handler table, `FORMULA_OPS` (the ops it has a formula for) and the entry points.

`op_cost` parses a call and runs its op's handler (unknown when there is none); `op_cost_of_row` reads an ops
row's JSON text columns first, and gives an unknown cost, never an exception, for malformed text.
"""

from __future__ import annotations

import json
from typing import Any

from tenprof.analyses.perf_model.op_cost.arguments import _parse_call
from tenprof.analyses.perf_model.op_cost.attention import _attention_backward, _attention_forward, _varlen_unknown
from tenprof.analyses.perf_model.op_cost.convolution import (
    _CONV_CUDNN,
    _CONV_CUDNN_T,
    _CONV_GENERIC,
    _CONV_MKLDNN,
    _conv,
    _conv_backward,
)
from tenprof.analyses.perf_model.op_cost.elementwise import _ELEMENTWISE, _NO_INPLACE, _elementwise
from tenprof.analyses.perf_model.op_cost.matmul import _bmm_like, _dot, _mm_like, _mv_like, _scaled_mm
from tenprof.analyses.perf_model.op_cost.movement import (
    _VIEWS,
    _cat,
    _clone,
    _contiguous,
    _copy_into,
    _embedding,
    _fill,
    _index_select,
    _to,
    _to_copy,
    _view,
)
from tenprof.analyses.perf_model.op_cost.reductions import (
    _REDUCTION_PLANS,
    _batch_norm,
    _batch_norm_backward,
    _layer_norm,
    _layer_norm_backward,
    _reduction,
    _softmax,
)
from tenprof.analyses.perf_model.op_cost.result import Handler, OpCost, _unknown

# ---------------------------------------------------------------------------------------------------------------
# The table


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
        "native_batch_norm_backward": _batch_norm_backward,
        "batch_norm_backward": _batch_norm_backward,
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
