"""sync-in-loop: host-device synchronizations inside steps (`.item()`, `.cpu()`, `print(tensor)`,
`nonzero`, explicit synchronize calls), with their Python lines and the GPU idle that follows each."""

from __future__ import annotations

from collections import Counter

import numpy as np

from tenprof.analyses.findings.context import Context, per_step
from tenprof.analyses.findings.model import Finding
from tenprof.importers.intervals import take
from tenprof.renderers.units import count, duration

# Calls that block the host until the GPU has drained (cudaMemcpy without Async is synchronous too).
SYNC_CALLS = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", "cudaMemcpy")
# The aten ops users reach these through, to name the cause in words.
CAUSES = {
    "aten::_local_scalar_dense": ".item() / float(tensor) / if tensor:",
    "aten::nonzero": "nonzero / boolean-mask indexing",
    "aten::_to_copy": ".cpu() / .to('cpu') / .numpy()",
    "aten::copy_": "a copy to the host (.cpu(), .tolist(), print(tensor))",
    "aten::masked_select": "masked_select",
    "aten::unique": "unique",
}


def check(ctx: Context) -> list[Finding]:
    api = ctx.profile.table("api_calls")
    names = api.column("name").to_pylist()
    is_sync = np.array([n in SYNC_CALLS for n in names], dtype=bool)
    start = api.column("start_ns").to_numpy()
    is_sync &= ctx.in_steps(start)
    if ctx.step_numbers[0] < 0:
        # No steps marked, so the whole recording is judged as one step: a synchronization after which
        # nothing more is launched ends the recording (the script's final torch.cuda.synchronize(), the
        # profiler's flush) and is not in a loop. With steps marked, those fall after the last step.
        launched = ctx.kernel_launch_ns
        last_launch = int(launched.max()) if len(launched) else -1
        is_sync &= api.column("end_ns").to_numpy() < last_launch
    if not is_sync.any():
        return []
    per_step_count = per_step(int(is_sync.sum()), ctx)
    if per_step_count < ctx.t.sync_min_per_step:
        return []
    idx = np.flatnonzero(is_sync)
    ends = api.column("end_ns").to_numpy()[idx]
    blocked = api.column("duration_ns").to_numpy()[idx]
    ops = api.column("op_id").to_numpy()[idx]
    gpu_start, _ = ctx.gpu_intervals
    gpu_start = np.sort(gpu_start)
    nxt = np.searchsorted(gpu_start, ends)
    # The GPU idles from the end of the wait to the next GPU work, in this step or the next (a sync at
    # the end of a step delays the next one), up to the end of the analysed steps.
    next_start = np.minimum(
        take(gpu_start, np.where(nxt < len(gpu_start), nxt, -1), ctx.analysed_end), ctx.analysed_end
    )
    idle_after = np.maximum(next_start - ends, 0)
    causes: Counter[str] = Counter()
    copy_direction = _copy_directions(ctx)
    by_copy = np.zeros(len(ops), dtype=bool)  # the wait is a blocking copy to the GPU's
    for j, op in enumerate(ops.tolist()):
        name = ctx.ancestors_named(int(op), set(CAUSES)) if op >= 0 else ""
        if op >= 0 and copy_direction.get(int(op)) == "HtoD":
            by_copy[j] = True
            causes["a blocking copy to the GPU (.to('cuda') from pageable memory or without non_blocking)"] += 1
        else:
            causes[CAUSES.get(name, "an explicit synchronize" if op < 0 else f"{ctx.op_names()[op]}")] += 1
    cost = int(idle_after.sum())
    return [
        Finding(
            id="sync-in-loop",
            title=f"{count(per_step_count)} host-device synchronizations per step, "
            f"GPU idle {duration(per_step(cost, ctx))} per step after them",
            cost_ns=cost,
            seen=[
                f"{len(idx)} synchronizing calls in {ctx.step_count} step(s); the host was blocked "
                f"{duration(int(blocked.sum()))} in them",
                "through " + ", ".join(f"{c} x{n}" for c, n in causes.most_common(3)),
                f"the GPU then waited {duration(cost)} in all for the next launch",
            ],
            where=ctx.where(ops, blocked),
            why="A synchronization empties the GPU's queue: the host waits for the GPU, then the GPU waits for the "
            "host to launch again, and the CPU can no longer run ahead of the GPU.",
            fix="Keep the value on the GPU (accumulate losses in a tensor, compare on the device) and read it once "
            "after the loop or every N steps; replace boolean-mask indexing with torch.where; avoid print(tensor) "
            "and .cpu() inside the step.",
            numbers={
                "syncs_per_step": per_step_count,
                "idle_after_ns": float(cost),
                "blocked_ns": float(blocked.sum()),
                "copy_syncs": float(by_copy.sum()),
                "copy_idle_after_ns": float(idle_after[by_copy].sum()),
            },
        )
    ]


def _copy_directions(ctx: Context) -> dict[int, str]:
    """op id -> direction (HtoD, DtoH, ...) of the copies it issued."""
    t = ctx.profile.table("transfers")
    return {
        int(op): str(d)
        for op, d in zip(t.column("op_id").to_pylist(), t.column("direction").to_pylist(), strict=True)
        if op >= 0 and d
    }
