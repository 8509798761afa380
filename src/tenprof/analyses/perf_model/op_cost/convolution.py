"""Rule group 2, convolutions forward (each op's own argument order) and convolution_backward.

FLOPs need the stride, padding, dilation, transposed and groups values: when they were not recorded, unknown.
"""

from __future__ import annotations

from dataclasses import dataclass

from tenprof.analyses.perf_model.op_cost.arguments import (
    Call,
    Shape,
    bool_value,
    bools_value,
    int_value,
    ints_value,
    numel_of,
)
from tenprof.analyses.perf_model.op_cost.result import Handler, OpCost, Traffic, cost, read, traffic, unknown


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


CONV_GENERIC = _ConvArgs(bias=2, stride=3, padding=4, dilation=5, transposed=6, output_padding=7, groups=8)
CONV_CUDNN = _ConvArgs(bias=None, padding=2, stride=3, dilation=4, groups=5, output_padding=None, transposed=None)
CONV_CUDNN_T = _ConvArgs(
    bias=None, padding=2, output_padding=3, stride=4, dilation=5, groups=6, transposed=None, fixed_transposed=True
)
CONV_MKLDNN = _ConvArgs(bias=2, padding=3, stride=4, dilation=5, groups=6, output_padding=None, transposed=None)


def _per_dim(call: Call, index: int | None, spatial: int, default: int | None = None) -> Shape | None:
    """A per-spatial-dim list (stride, padding, ...); a one-item list applies to every dim, as aten expands it."""
    if index is None:
        return None if default is None else (default,) * spatial
    values = ints_value(call, index)
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


def conv(layout: _ConvArgs) -> Handler:
    def handler(call: Call) -> OpCost:
        x, w = call.tensor(0), call.tensor(1)
        if x is None or w is None or x.shape is None or w.shape is None:
            return unknown(call)
        if len(x.shape) != len(w.shape) or len(x.shape) < 3:
            return unknown(call)
        spatial = len(x.shape) - 2
        transposed = layout.fixed_transposed if layout.transposed is None else bool_value(call, layout.transposed)
        groups = int_value(call, layout.groups)
        stride = _per_dim(call, layout.stride, spatial)
        padding = _per_dim(call, layout.padding, spatial)
        dilation = _per_dim(call, layout.dilation, spatial)
        out_pad = _per_dim(call, layout.output_padding if transposed else None, spatial, default=0)
        if transposed is None or groups is None or groups <= 0:
            return unknown(call)
        if stride is None or padding is None or dilation is None or out_pad is None:
            return unknown(call)
        batch, c_in, kernel = x.shape[0], x.shape[1], w.shape[2:]
        out_spatial = _conv_output(x.shape[2:], kernel, stride, padding, dilation, out_pad, transposed)
        if out_spatial is None:
            return unknown(call)
        if transposed:
            # weight is (C_in, C_out/groups, k...): every input point scatters through the kernel.
            if w.shape[0] != c_in:
                return unknown(call)
            c_out, in_per_group = w.shape[1] * groups, c_in // groups
            flops = 2 * x.numel * w.shape[1] * numel_of(kernel)
            rule = "2*input_elements*(C_out/groups)*prod(kernel) (transposed)"
        else:
            # weight is (C_out, C_in/groups, k...): every output point gathers through the kernel.
            if w.shape[1] * groups != c_in:
                return unknown(call)
            c_out, in_per_group = w.shape[0], w.shape[1]
            flops = 2 * batch * c_out * numel_of(out_spatial) * w.shape[1] * numel_of(kernel)
            rule = "2*output_elements*(C_in/groups)*prod(kernel)"
        reads = [read(x), read(w)]
        bias = call.tensor(layout.bias) if layout.bias is not None else None
        if bias is not None:
            reads.append(read(bias))
        moved = traffic([*reads, (batch * c_out * numel_of(out_spatial), x.dtype)])
        return cost(flops, moved, x.dtype, _conv_is_gemm(groups, in_per_group), rule)

    return handler


def conv_backward(call: Call) -> OpCost:
    # (grad_output, input, weight, bias_sizes, stride, padding, dilation, transposed, output_padding, groups,
    #  output_mask): grad_input is a transposed convolution of grad_output, grad_weight a convolution of input with
    # grad_output; each does the forward's multiply-adds, whatever the stride or padding.
    grad, x, w = call.tensor(0), call.tensor(1), call.tensor(2)
    if grad is None or x is None or w is None or grad.shape is None or x.shape is None or w.shape is None:
        return unknown(call)
    if not len(grad.shape) == len(x.shape) == len(w.shape) >= 3:
        return unknown(call)
    transposed = bool_value(call, 7)
    mask = bools_value(call, 10, 3)
    if transposed is None or mask is None:
        return unknown(call)
    # The forward's work is 2 * (elements on the gathering side) * w.shape[1] * prod(kernel): the output side for
    # a convolution, the input side for a transposed one.
    if w.shape[0] != (x.shape[1] if transposed else grad.shape[1]):
        return unknown(call)
    forward = 2 * (x.numel if transposed else grad.numel) * w.shape[1] * numel_of(w.shape[2:])
    flops = forward * (int(mask[0]) + int(mask[1]))
    parts: list[Traffic | None] = [read(grad)]
    if mask[0]:
        parts += [read(w), (x.numel, x.dtype)]
    if mask[1]:
        parts += [read(x), (w.numel, w.dtype)]
    if mask[2]:
        parts.append((grad.shape[1], grad.dtype))
    groups = int_value(call, 9)
    in_per_group = x.shape[1] // groups if transposed and groups else w.shape[1]
    rule = "(grad_input + grad_weight, per output_mask) x the forward's FLOPs"
    return cost(flops, traffic(parts), grad.dtype, _conv_is_gemm(groups, in_per_group), rule)
