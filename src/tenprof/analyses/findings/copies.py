"""hidden-copies: device-to-device copies that no line of the user's code asks for by name:
`.contiguous()` of a transposed view, dtype casts, `.clone()`, `reshape` of a non-contiguous tensor."""

from __future__ import annotations

import functools
from collections import Counter

import numpy as np
import orjson

from tenprof.analyses.findings.context import Context, per_step
from tenprof.analyses.findings.model import Finding
from tenprof.core.quantities import duration, size

CAUSES = {
    "aten::contiguous": ".contiguous() (of a transposed or sliced view)",
    "aten::_to_copy": "a dtype cast (.to(dtype) / .float() / .half())",
    "aten::clone": ".clone()",
    "aten::reshape": "reshape of a non-contiguous tensor",
    "aten::addmm": "addmm copying its bias into the output before the GEMM",
}
DTYPE_BYTES = {
    "float": 4,
    "double": 8,
    "c10::Half": 2,
    "c10::BFloat16": 2,
    "long int": 8,
    "int": 4,
    "bool": 1,
    "signed char": 1,
    "unsigned char": 1,
    "short int": 2,
}


@functools.lru_cache(maxsize=4096)  # a run repeats a few thousand signatures over millions of copies
def _bytes_of_copy(shapes: str, dtypes: str) -> int:
    """copy_(dst, src): bytes read plus bytes written, from the recorded shapes and dtypes."""
    try:
        dims, types = orjson.loads(shapes), orjson.loads(dtypes)
    except orjson.JSONDecodeError:
        return 0
    total = 0
    for dim, dtype in list(zip(dims, types, strict=False))[:2]:
        if isinstance(dim, list) and dim:
            total += int(np.prod(dim)) * DTYPE_BYTES.get(str(dtype), 4)
    return total


def check(ctx: Context) -> list[Finding]:
    k = ctx.profile.table("kernels")
    if k.num_rows == 0:
        return []
    inside = ctx.kernels_in_steps
    k_dur = k.column("duration_ns").to_numpy()
    gpu_time = ctx.steps_kernel_ns
    shapes = ctx.profile.strings("ops", "input_shapes")
    dtypes = ctx.profile.strings("ops", "input_dtypes")
    causes: Counter[str] = Counter()
    copy_ns = 0
    copy_bytes = 0
    ops: list[int] = []
    weights: list[int] = []
    k_op = k.column("op_id").to_numpy()
    is_copy = ctx.profile.strings("ops", "name").equals("aten::copy_")
    candidates = inside & (k_op >= 0)
    candidates[candidates] = is_copy[k_op[candidates]]
    cause_names = set(CAUSES)
    for i in np.flatnonzero(candidates).tolist():
        op = int(k_op[i])
        cause = ctx.ancestors_named(op, cause_names, outermost=True)
        if not cause:
            continue
        causes[CAUSES[cause]] += int(k_dur[i])
        copy_ns += int(k_dur[i])
        copy_bytes += _bytes_of_copy(shapes.at(op), dtypes.at(op))
        ops.append(op)
        weights.append(int(k_dur[i]))
    if gpu_time == 0 or copy_ns < ctx.t.copies_min_share * gpu_time:
        return []
    return [
        Finding(
            id="hidden-copies",
            title=f"Hidden device copies take {100 * copy_ns / gpu_time:.0f}% of GPU time "
            f"({duration(per_step(copy_ns, ctx))} per step)",
            cost_ns=copy_ns,
            seen=[f"{duration(v)} from {c}" for c, v in causes.most_common(3)]
            + [f"about {size(per_step(copy_bytes, ctx))} read and written per step"],
            where=ctx.where(np.asarray(ops, dtype=np.int64), np.asarray(weights, dtype=np.int64)),
            why="Each copy reads and writes the whole tensor through device memory for no arithmetic; it often "
            "comes from a layout or dtype mismatch between two ops.",
            fix="Keep tensors in the layout and dtype their consumer wants: store the weight already transposed, "
            "cast once outside the loop (under autocast, keep a bf16 copy of weights that do not change, or train "
            "in bf16), and prefer view/transpose-aware ops over .contiguous().",
            numbers={"copy_ns": float(copy_ns), "share_of_gpu": copy_ns / gpu_time, "bytes": float(copy_bytes)},
        )
    ]
