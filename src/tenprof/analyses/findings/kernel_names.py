"""Findings read from kernel names alone, so they need no Nsight Compute pass and work on imported traces:

- gemm-without-tensor-cores (from names): float32 GEMMs that cuBLAS/CUTLASS ran on the FMA pipes
  (`sgemm`, `..._f32f32_f32f32_f32_..._ffma`, `simt_sgemm`), which TF32 or bf16 would run on tensor cores
  (names with `tf32`, `16816`, `hmma`, `wgmma`, `nvjet`, `bf16`/`f16`). Left to the counters' check of
  the same id when the counters pass ran (it measures the tensor pipe instead of reading names).
- layout-conversions: cuDNN kernels converting between NCHW and NHWC around convolutions, which a model
  and input in channels_last memory format avoid (with the NCHW batch-norm kernels: findings.layouts).

The cost is what the fix would save in the analysed steps: the conversion kernels' time and the NCHW
batch norms' time above what the channels-last kernels would take (findings.layouts); for the GEMMs,
their time less what they would take on the tensor-core path the recorded GPU has (findings.tensor_core_path:
TF32 on the big datacenter dies, bf16 on the others from Ampere on, fp16 before it).
"""

from __future__ import annotations

import re

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from tenprof.analyses.findings.context import Context, per_step
from tenprof.analyses.findings.layouts import LayoutCost, layout_cost
from tenprof.analyses.findings.model import Finding
from tenprof.analyses.findings.tensor_core_path import tensor_core_path
from tenprof.analyses.kernels.arch_from_names import newest_arch
from tenprof.core.quantities import duration
from tenprof.store.schema import Pass

FP32_GEMM = re.compile(r"(?:^|[_ ])sgemm|simt_sgemm|gemm_f32f32_f32f32_f32|gemm.*_ffma_", re.IGNORECASE)
TENSOR_CORE = re.compile(r"tf32|16816|1688|hmma|wgmma|nvjet|tensorop|bf16|f16|h884|s884", re.IGNORECASE)


def check(ctx: Context) -> list[Finding]:
    k = ctx.profile.table("kernels")
    if k.num_rows == 0:
        return []
    inside = ctx.kernels_in_steps
    column = k.column("name")
    duration_ns = k.column("duration_ns").to_numpy()
    ops = k.column("op_id").to_numpy()
    gpu_ns = ctx.steps_kernel_ns
    if gpu_ns == 0:
        return []
    found: list[Finding] = []
    counters = ctx.profile.meta.passes.get(Pass.COUNTERS)
    counters_ran = counters is not None and counters.state == "complete"
    names = ctx.profile.strings("kernels", "name")
    fp32 = inside & names.where(lambda n: bool(FP32_GEMM.search(n)) and not TENSOR_CORE.search(n))
    fp32_ns = int(duration_ns[fp32].sum())
    path = tensor_core_path(ctx.profile.meta.gpus, newest_arch(ctx.profile))
    saving = int(fp32_ns * (1 - 1 / path.speedup))
    if not counters_ran and saving >= ctx.t.names_min_share * gpu_ns:
        kinds = sorted({_short(n) for n in column.filter(pa.array(fp32)).to_pylist()})
        found.append(
            Finding(
                id="gemm-without-tensor-cores",
                title=f"float32 matrix multiplies run without tensor cores: {fp32_ns / gpu_ns:.0%} of GPU time "
                f"({duration(int(per_step(fp32_ns, ctx)))} per step)",
                cost_ns=saving,
                seen=[
                    f"{int(fp32.sum())} launches, {duration(fp32_ns)}, of {len(kinds)} GEMM kernel(s) on the FMA pipes "
                    f"(sgemm / f32 with ffma in the name, e.g. {kinds[0][:40]})",
                    path.basis,
                ],
                where=ctx.where(ops[fp32], duration_ns[fp32]),
                why="A float32 GEMM without TF32 runs on the FMA pipes, at a fraction of the tensor cores' "
                "throughput (on an H100 a 4096x4096 fp32 matmul took 7.8x as long as with TF32, measured).",
                fix=path.fix,
                numbers={"fp32_gemm_ns": float(fp32_ns), "share_of_gpu": fp32_ns / gpu_ns},
            )
        )
    layout = layout_cost(ctx)
    if layout is not None:
        found.append(_layout_finding(ctx, layout, ops, duration_ns))
    return found


def _layout_finding(
    ctx: Context, layout: LayoutCost, ops: npt.NDArray[np.int64], duration_ns: npt.NDArray[np.int64]
) -> Finding:
    gpu_ns = ctx.steps_kernel_ns
    conversions = layout.conversions
    seen = [f"{int(conversions.sum())} conversion kernels (nchwToNhwc / nhwcToNchw), {duration(layout.conversion_ns)}"]
    what = "cuDNN converts between NCHW and NHWC around convolutions"
    if layout.norms:
        calls = sum(row.calls for row in layout.norms)
        seen.append(
            f"{calls} batch-norm calls on NCHW kernels: {duration(layout.norm_ns)} of kernel time, "
            f"{duration(layout.norm_ideal_ns)} at the speed of light, about {duration(int(layout.norm_after_fix_ns))} "
            "on the channels-last kernels (counted: the time above that)"
        )
        what += " and batch norm runs its NCHW kernels"
    return Finding(
        id="layout-conversions",
        title=f"NCHW layout: {what}: {layout.cost_ns / gpu_ns:.0%} of GPU time "
        f"({duration(int(per_step(layout.cost_ns, ctx)))} per step)",
        cost_ns=layout.cost_ns,
        seen=seen,
        where=ctx.where(ops[conversions], duration_ns[conversions]),
        why="Tensor-core convolutions want channels-last (NHWC) data; with NCHW tensors cuDNN transposes the "
        "input, weights and output around every convolution"
        + (", and batch norm runs its slower NCHW kernels." if layout.norms else "."),
        fix="Put the model and its input in channels_last: model.to(memory_format=torch.channels_last) "
        "and x = x.to(memory_format=torch.channels_last).",
        numbers={
            "conversion_ns": float(layout.conversion_ns),
            "share_of_gpu": layout.conversion_ns / gpu_ns,
            "nchw_norm_ns": float(layout.norm_ns),
            "nchw_norm_ideal_ns": float(layout.norm_ideal_ns),
            "norm_after_fix_ns": float(layout.norm_after_fix_ns),
        },
    )


def _short(name: str) -> str:
    """A kernel's name without template arguments (or its first one, where the name itself is a generic
    wrapper such as cutlass::Kernel2<cutlass_80_simt_sgemm_...>), cut to 60 characters."""
    head, _, rest = name.removeprefix("void ").partition("<")
    if "gemm" not in head.lower() and "gemm" in rest.lower():
        head = rest.split(",", 1)[0].split("<", 1)[0].rstrip(">")
    return head[:60]
