"""Rule group 3, fused attention forward and backward (flash, efficient, cudnn), ``matmul=True``.

Query, key and value must make one attention, (B, H, S, D) or (B, S, H, D) as each op lays them out; a
variable-length batch is unknown.
"""

from __future__ import annotations

from dataclasses import dataclass

from tenprof.analyses.perf_model.op_cost.arguments import Arg, Call, Shape, bool_value, bools_value
from tenprof.analyses.perf_model.op_cost.result import Handler, OpCost, cost, read, traffic, unknown


@dataclass(frozen=True)
class _AttentionDims:
    batch: int
    heads: int  # query heads
    seq_q: int
    seq_k: int
    dim_qk: int
    dim_v: int


def _attention_dims(q: Arg | None, k: Arg | None, v: Arg | None, heads_first: bool) -> _AttentionDims | None:
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


def attention_forward(heads_first: bool, lse_flag: int | None) -> Handler:
    """q, k, v at 0, 1, 2. The log-sum-exp (B*H*Sq float32) is written always (lse_flag None) or when flagged.

    3-d inputs (the variable-length layout of the _flash_attention_* ops) are not an attention `_attention_dims`
    accepts, so they stay unknown.
    """

    def handler(call: Call) -> OpCost:
        q = call.tensor(0)
        dims = _attention_dims(q, call.tensor(1), call.tensor(2), heads_first)
        tensors = call.tensors()
        if q is None or dims is None or tensors is None:
            return unknown(call)
        scores = dims.batch * dims.heads * dims.seq_q * dims.seq_k
        flops = 2 * scores * dims.dim_qk + 2 * scores * dims.dim_v
        rows = dims.batch * dims.heads * dims.seq_q
        # A log-sum-exp whose flag was not recorded is left out: the bytes stay a minimum.
        writes_lse = lse_flag is None or bool_value(call, lse_flag) is True
        parts = [*(read(t) for t in tensors), (rows * dims.dim_v, q.dtype)]
        if writes_lse:
            parts.append((rows, "float32"))
        rule = "2*B*H*Sq*Sk*Dqk + 2*B*H*Sq*Sk*Dv (causal mask not discounted)"
        return cost(flops, traffic(parts), q.dtype, True, rule)

    return handler


def attention_backward(heads_first: bool, bias_grad: tuple[int, int, int, int] | None = None) -> Handler:
    """grad_out, q, k, v at 0..3; grads of q, k and v written, and of the bias when its flag says so.

    bias_grad is (bias index, flag index, flags in that argument, which flag): the flag argument is a bool list
    like grad_input_mask or a lone bool like bias_requires_grad. An unreadable flag leaves the grad out (minimum).
    """

    def handler(call: Call) -> OpCost:
        grad, q, k, v = call.tensor(0), call.tensor(1), call.tensor(2), call.tensor(3)
        dims = _attention_dims(q, k, v, heads_first)
        tensors = call.tensors()
        if grad is None or q is None or k is None or v is None or dims is None or tensors is None:
            return unknown(call)
        if grad.numel != dims.batch * dims.heads * dims.seq_q * dims.dim_v:
            return unknown(call)
        scores = dims.batch * dims.heads * dims.seq_q * dims.seq_k
        flops = 2 * scores * (3 * dims.dim_qk + 2 * dims.dim_v)
        parts = [*(read(t) for t in tensors), (q.numel, q.dtype), (k.numel, k.dtype), (v.numel, v.dtype)]
        if bias_grad is not None:
            bias, flag, count, which = bias_grad
            bias_arg, flags = call.tensor(bias), bools_value(call, flag, count)
            if bias_arg is not None and flags is not None and flags[which]:
                parts.append((bias_arg.numel, bias_arg.dtype))
        rule = "2*B*H*Sq*Sk*(3*Dqk + 2*Dv) (causal mask not discounted)"
        return cost(flops, traffic(parts), q.dtype, True, rule)

    return handler


def varlen_unknown(positions: tuple[int, ...], handler: Handler) -> Handler:
    # A tensor of sequence offsets makes the batch variable-length: its lengths were not recorded.
    def wrapped(call: Call) -> OpCost:
        return unknown(call) if any(call.arg(i).is_tensor for i in positions) else handler(call)

    return wrapped
