"""hidden-copies: device-to-device copies that no line of the user's code asks for by name:
`.contiguous()` of a transposed view, dtype casts, `.clone()`, `reshape` of a non-contiguous tensor."""

from __future__ import annotations

import functools
from collections import Counter

import numpy as np
import numpy.typing as npt
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


def _summed(keys: npt.NDArray[np.int64], values: npt.NDArray[np.int64]) -> tuple[list[int], list[int]]:
    """The distinct keys, in the order they first come, and the sum of `values` over each."""
    distinct, first, which = np.unique(keys, return_index=True, return_inverse=True)
    sums = np.bincount(which.reshape(-1), weights=values, minlength=len(distinct)).astype(np.int64)
    arrival = np.argsort(first, kind="stable")
    return distinct[arrival].tolist(), sums[arrival].tolist()


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
    copy_bytes = 0
    k_op = k.column("op_id").to_numpy()
    names = ctx.profile.strings("ops", "name")
    is_copy = names.equals("aten::copy_")
    candidates = inside & (k_op >= 0)
    candidates[candidates] = is_copy[k_op[candidates]]
    cause_of = ctx.named_ancestors(frozenset(CAUSES), outermost=True)
    candidates[candidates] = cause_of[k_op[candidates]] >= 0
    chosen = np.flatnonzero(candidates)
    copy_op, copy_dur = k_op[chosen], k_dur[chosen].astype(np.int64)
    # per distinct cause, and per distinct (shapes, dtypes) signature: a few of each over many copies
    for code, ns in zip(*_summed(names.codes[cause_of[copy_op]], copy_dur), strict=True):
        causes[CAUSES[names.values[code]]] += ns
    signature = shapes.codes[copy_op] * len(dtypes.values) + dtypes.codes[copy_op]
    for code, copies in zip(*_summed(signature, np.ones(len(copy_op), dtype=np.int64)), strict=True):
        shape_code, dtype_code = divmod(code, len(dtypes.values))
        copy_bytes += copies * _bytes_of_copy(shapes.values[shape_code], dtypes.values[dtype_code])
    copy_ns = int(copy_dur.sum())
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
            where=ctx.where(copy_op.astype(np.int64), copy_dur),
            why="Each copy reads and writes the whole tensor through device memory for no arithmetic; it often "
            "comes from a layout or dtype mismatch between two ops.",
            fix="Keep tensors in the layout and dtype their consumer wants: store the weight already transposed, "
            "cast once outside the loop (under autocast, keep a bf16 copy of weights that do not change, or train "
            "in bf16), and prefer view/transpose-aware ops over .contiguous().",
            numbers={"copy_ns": float(copy_ns), "share_of_gpu": copy_ns / gpu_time, "bytes": float(copy_bytes)},
        )
    ]
