"""Finding far-below-speed-of-light: an op that holds a large share of kernel time and runs far slower
than its FLOPs and bytes allow on this card (analyses.perf_model), with the reason its shapes show.

Judged on the analysed steps' kernels only, less cuDNN's layout conversions inside the op and the NCHW
batch norms beside them (the layout-conversions finding charges those: findings.layouts). Skipped: ops
whose calls average under `sol.min_call_us` of kernel time (launch cost dominates such kernels;
launch-bound owns that), fp32 matrix products on the FMA pipes (gemm-without-tensor-cores owns that),
copies and ops reading a strided input (hidden-copies and strided-elementwise own those), and cards with
no known peaks.
The cost is the kernel time above the ideal: what reaching the speed of light would save at most.
"""

from __future__ import annotations

import json
import math
from typing import Any

from tenprof.analyses.findings.context import Context
from tenprof.analyses.findings.layouts import LAYOUT_CONVERSION, layout_cost
from tenprof.analyses.findings.model import Finding
from tenprof.analyses.perf_model import OpSpeed, PerfModel, pipe_text
from tenprof.analyses.perf_model.gpu_peaks import is_amd
from tenprof.core.quantities import duration

# (M, N, K, batch) from the inputs of each matrix-product op, by argument position
_MATMUL_ARGS = {
    "aten::mm": (0, 1),
    "aten::addmm": (1, 2),
    "aten::bmm": (0, 1),
    "aten::baddbmm": (1, 2),
    "aten::_scaled_mm": (0, 1),
}
_TILE = 128  # the output tile of a typical tensor-core GEMM kernel
# a group of ops (one name, line and remedy) must hold sol.min_share of kernel time; each of its rows this much
_MIN_ROW_SHARE = 0.01


def check(ctx: Context) -> list[Finding]:
    model = ctx.perf
    if model is None or not model.kernel_ns:
        return []
    t = ctx.t
    layout = layout_cost(ctx)
    charged = {id(row) for row in layout.norms} if layout is not None else set()
    sm_count = ctx.profile.meta.gpus[0].sm_count if ctx.profile.meta.gpus else 0
    amd = any(is_amd(gpu.name) for gpu in ctx.profile.meta.gpus)
    # one finding per op, line and remedy: the three GEMMs of an odd vocabulary size are one fix
    groups: dict[tuple[str, str, str], list[tuple[OpSpeed, list[str]]]] = {}
    for row in model.ops:
        speed = row.speed
        if speed.sol_percent is None or speed.ideal_ns is None:
            continue
        if speed.gpu_ns < _MIN_ROW_SHARE * model.kernel_ns:
            break  # rows are sorted by kernel time: the rest hold less
        if id(row) in charged:
            continue  # a batch norm on NCHW kernels beside cuDNN's conversions: layout-conversions charges it
        # cuDNN's NCHW/NHWC conversions are layout-conversions' cost: judged on the rest of its time
        own = speed.gpu_ns - _conversions_ns(row)
        if own <= 0 or 100.0 * speed.ideal_ns / own >= t.sol_max_percent or own / row.calls < t.sol_min_call_us * 1e3:
            continue
        if row.pipe == "fp32" and row.matmul:
            continue  # matrix products on the FMA pipes: gemm-without-tensor-cores charges those
        if speed.flops == 0 or (row.name not in _MATMUL_ARGS and _strided(row.strides, row.shapes)):
            continue  # copies and strided elementwise reads: hidden-copies and strided-elementwise charge those
        # (a GEMM reads a transposed operand as it is: no copy, no waste)
        reasons = _gemm_reasons(row, sm_count) if row.name in _MATMUL_ARGS else _memory_reasons(row)
        groups.setdefault((row.name, row.line, _fix(reasons, amd)), []).append((row, reasons))
    return [
        _finding(members, model, fix)
        for (_, _, fix), members in groups.items()
        if sum(r.speed.gpu_ns for r, _ in members) >= t.sol_min_share * model.kernel_ns
    ]


def _conversions_ns(row: OpSpeed) -> int:
    return sum(t for name, t in row.kernel_times if LAYOUT_CONVERSION.search(name))


def _finding(members: list[tuple[OpSpeed, list[str]]], model: PerfModel, fix: str) -> Finding:
    first = members[0][0]
    conversions = sum(_conversions_ns(r) for r, _ in members)
    gpu = sum(r.speed.gpu_ns for r, _ in members) - conversions
    ideal = sum(r.speed.ideal_ns or 0.0 for r, _ in members)
    sol = 100.0 * ideal / gpu
    seen = [
        f"{sum(r.calls for r, _ in members)} calls, {duration(gpu)} of kernel time ({gpu / model.kernel_ns:.0%}); "
        f"at the speed of light {duration(ideal)}"
    ]
    if conversions:
        seen.append(f"not counted here: {duration(conversions)} of NCHW/NHWC conversions (layout-conversions)")
    for row, reasons in members[:4]:
        speed = row.speed
        rate = (
            f"{speed.tflops_per_s:.1f} TFLOP/s"
            if row.bound == "compute" and speed.tflops_per_s is not None
            else f"{speed.gbytes_per_s:,.0f} GB/s"
            if speed.gbytes_per_s is not None
            else ""
        )
        seen.append(
            f"shapes {row.shapes} ({row.dtype}): {speed.sol_percent or 0.0:.0f}% of {pipe_text(row.pipe)} "
            f"({row.bound}-bound), {rate}; kernels {', '.join(k[:50] for k in row.kernels[:2])}"
        )
        seen.extend(reason for reason in reasons if reason not in seen)
    return Finding(
        id="far-below-speed-of-light",
        title=f"{first.name} runs at {sol:.0f}% of its speed of light ({duration(gpu)}, "
        f"{gpu / model.kernel_ns:.0%} of kernel time)",
        cost_ns=int(max(0.0, gpu - ideal)),
        seen=seen,
        where=[first.line] if first.line else [],
        why="Its FLOPs and bytes, from the recorded shapes, would take a fraction of this time at the card's "
        "peak; the gap is in how the work is shaped, not in how much there is.",
        fix=fix,
        numbers={"sol_percent": sol, "time_ns": float(gpu), "ideal_ns": ideal},
    )


def _dims(row: OpSpeed) -> tuple[int, int, int, int] | None:
    """(batch, M, N, K) of a matrix product from its input shapes."""
    try:
        shapes: Any = json.loads(row.shapes)
        a, b = (shapes[i] for i in _MATMUL_ARGS[row.name])
        batch = int(a[0]) if len(a) == 3 else 1
        return batch, int(a[-2]), int(b[-1]), int(a[-1])
    except (ValueError, TypeError, IndexError, KeyError):
        return None


def _gemm_reasons(row: OpSpeed, sm_count: int) -> list[str]:
    dims = _dims(row)
    if dims is None:
        return []
    batch, m, n, k = dims
    reasons = []
    align = 4 if row.dtype == "float32" else 8  # elements in 16 bytes: the alignment tensor-core loads need
    odd = [f"{name}={ld}" for name, ld in _leading_dimensions(row, m, n, k) if ld % align]
    if odd:
        reasons.append(
            f"(M, N, K) = ({m}, {n}, {k}): {', '.join(odd)} not a multiple of {align}, so rows are not 16-byte "
            "aligned and the library falls back to slower kernels"
        )
    tiles = math.ceil(m / _TILE) * math.ceil(n / _TILE) * batch
    if sm_count and tiles < sm_count:
        reasons.append(
            f"(M, N, K) = ({m}, {n}, {k}) x {batch}: {tiles} output tiles of {_TILE}x{_TILE} for {sm_count} SMs, "
            "too small to fill the GPU"
        )
    elif not odd and any(v % 64 for v in (m, n, k)):
        reasons.append(f"(M, N, K) = ({m}, {n}, {k}): not all multiples of 64, so the last tiles run partly empty")
    return reasons


def _leading_dimensions(row: OpSpeed, m: int, n: int, k: int) -> list[tuple[str, int]]:
    """The row pitch of A, B and the output C, in elements: an operand's larger stride of its last two dims
    (a transposed operand's pitch is its other dim). An odd M alone leaves only the last tile part empty:
    not an alignment problem, unless A is transposed. Where strides were not recorded, either layout is
    possible: each of M, N and K may be a pitch."""
    try:
        strides: Any = json.loads(row.strides) if row.strides else None
        pitches = [max(int(x) for x in strides[index][-2:]) for index in _MATMUL_ARGS[row.name]]
        return [("lda", pitches[0]), ("ldb", pitches[1]), ("ldc", n)]
    except (ValueError, TypeError, IndexError, KeyError):
        return [("M", m), ("N", n), ("K", k)]


def _memory_reasons(row: OpSpeed) -> list[str]:
    reasons = []
    if row.bound == "memory" and row.speed.bytes is not None:
        per_call = row.speed.bytes / row.calls
        if per_call < 8 << 20:
            reasons.append(f"each call moves {per_call / 1e6:.1f} MB: too little to reach full bandwidth")
    return reasons


def _strided(strides_text: str, shapes_text: str) -> bool:
    try:
        strides, shapes = json.loads(strides_text), json.loads(shapes_text)
    except ValueError:
        return False
    for stride, shape in zip(strides, shapes, strict=False):
        if not isinstance(stride, list) or not isinstance(shape, list) or len(stride) != len(shape) or not shape:
            continue
        expected = 1
        for size, st in zip(reversed(shape), reversed(stride), strict=True):
            if size > 1 and st not in (expected, 0):
                return True
            expected *= max(int(size), 1)
    return False


def _fix(reasons: list[str], amd: bool) -> str:
    text = " ".join(reasons)
    if "not a multiple" in text:
        return "Pad the dimensions to multiples of 8 (64 is better): vocabulary, hidden and head sizes."
    if "too small to fill" in text:
        return (
            "Give each call more work: a larger batch, or one batched matmul (torch.bmm) instead of several small ones."
        )
    if "too little to reach" in text:
        return "Fuse this op with its neighbours (torch.compile) so the data is read once."
    if amd:  # Nsight Compute profiles NVIDIA GPUs only
        return (
            "Look at its kernels with AMD's profilers (rocprofv3's counters; on Instinct cards the ROCm Compute "
            "Profiler, rocprof-compute) to see which unit holds them back; `tenprof run --passes counters` reads "
            "NVIDIA GPUs only."
        )
    return "Look at its kernels with `tenprof run --passes counters` to see which unit holds them back."
