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

from tenprof.analyses.perf_model.op_cost.arguments import dtype_bytes, normalized_dtype
from tenprof.analyses.perf_model.op_cost.registry import FORMULA_OPS, op_cost, op_cost_of_row
from tenprof.analyses.perf_model.op_cost.result import OpCost

__all__ = ["FORMULA_OPS", "OpCost", "dtype_bytes", "normalized_dtype", "op_cost", "op_cost_of_row"]
