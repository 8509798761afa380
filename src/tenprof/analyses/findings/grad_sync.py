"""all-reduce-every-micro-step: gradient accumulation under DistributedDataParallel (or FSDP) that
all-reduces the gradients after every micro-batch's backward pass, though the optimizer steps once, on
the sum: every round but the last is wasted, and `model.no_sync()` around the other micro-batches
defers the all-reduce to the last one.

Read from what the wrappers and torch record in any trace: each wrapped forward pass is a
`DistributedDataParallel.forward` (or `FullyShardedDataParallel.forward`) range, each optimizer step an
`Optimizer.step#...` range, and the gradient all-reduces are NCCL AllReduce kernels, assigned to the
forward pass whose backward launched them (the latest forward started before their launch). An
accumulation window is the time between two optimizer steps (without optimizer ranges: each analysed
step, where steps were marked or told from the loop; a run judged as one step with no optimizer range
has nothing to tell its windows by, and is not judged). The check fires when, in more than half of the
windows that hold several forward passes, more than one of those forwards is followed by all-reduces.

Its cost is the wasted rounds' time on the critical path: of the all-reduce kernels launched after
every forward but a window's last, the time the GPU runs collectives and nothing else (the step
decomposition's `collective` part); an all-reduce hidden under the backward's compute costs nothing
here."""

from __future__ import annotations

import numpy as np

from tenprof.analyses.findings.context import Context, per_step
from tenprof.analyses.findings.model import Finding
from tenprof.core.intervals import coverage, merged
from tenprof.core.quantities import duration

WRAPPED_FORWARDS = ("DistributedDataParallel.forward", "FullyShardedDataParallel.forward")
OPTIMIZER_STEP = "Optimizer.step#"


def check(ctx: Context) -> list[Finding]:
    forwards = _scope_starts(ctx, lambda n: n in WRAPPED_FORWARDS)
    forwards = forwards[ctx.in_steps(forwards)]
    if len(forwards) < 2:
        return []
    windows = _window_of(ctx, forwards)
    if windows is None:
        return []
    launched, kernels = _all_reduce_launches(ctx)
    if not len(launched):
        return []
    # each all-reduce to the forward pass whose backward launched it
    owner = np.searchsorted(forwards, launched, side="right") - 1
    synced = np.zeros(len(forwards), dtype=bool)
    synced[owner[owner >= 0]] = True
    wasted = np.zeros(len(forwards), dtype=bool)
    accumulating = 0  # windows holding several forward passes
    wasteful = 0
    for window in np.unique(windows):
        members = np.flatnonzero(windows == window)
        if len(members) < 2:
            continue
        accumulating += 1
        rounds = members[synced[members]]
        if len(rounds) > 1:
            wasteful += 1
            wasted[rounds[:-1]] = True  # the last round's sum is the one the optimizer uses
    if not wasteful or wasteful <= 0.5 * accumulating:
        return []
    rounds_wasted = (owner >= 0) & wasted[np.maximum(owner, 0)]
    starts, ends = kernels[0][rounds_wasted], kernels[1][rounds_wasted]
    gpu_ns = int((ends - starts).sum())
    exposed = int(coverage(*ctx.parts["collective"], *merged(starts, ends)).sum())
    # forwards per window, the median: the analysed steps may begin or end inside a window
    micro = float(np.median(np.unique(windows, return_counts=True)[1]))
    return [
        Finding(
            id="all-reduce-every-micro-step",
            title=f"Gradients all-reduced after every micro-batch: {int(wasted.sum())} of {int(synced.sum())} "
            "all-reduce rounds are thrown away by gradient accumulation",
            cost_ns=exposed,
            seen=[
                f"{micro:.3g} wrapped forward passes per optimizer step, and all-reduces after {int(synced.sum())} "
                f"of the {len(forwards)} analysed ones; in {wasteful} of {accumulating} accumulation windows more "
                "than one round, where only the last is used",
                f"the wasted rounds' all-reduce kernels: {int(rounds_wasted.sum())}, {duration(gpu_ns)} of GPU time, "
                f"{duration(per_step(exposed, ctx))} per step with nothing else running on the GPU",
            ],
            where=ctx.where(_forward_ops(ctx, forwards[wasted]))[:3],
            why="Under gradient accumulation the optimizer steps on the sum of the micro-batches' gradients; "
            "DistributedDataParallel all-reduces after every backward pass unless told not to, so each "
            "micro-batch but the last pays a full all-reduce of every gradient for nothing.",
            fix="Run the backward passes of all micro-batches but the last inside `with model.no_sync():` (the "
            "gradients accumulate locally, and the last backward all-reduces their sum); with FSDP, the same "
            "`no_sync()` (or set_requires_gradient_sync(False) on FSDP2).",
            numbers={
                "exposed_ns": float(exposed),
                "wasted_all_reduce_gpu_ns": float(gpu_ns),
                "micro_steps_per_optimizer_step": micro,
                "wasted_rounds": float(wasted.sum()),
                "rounds": float(synced.sum()),
            },
        )
    ]


def _scope_starts(ctx: Context, chosen: object) -> np.ndarray:
    """The start times, sorted, of the scopes (record_function ranges) whose name `chosen` accepts."""
    scopes = ctx.profile.table("scopes")
    if scopes.num_rows == 0:
        return np.zeros(0, dtype=np.int64)
    picked = ctx.profile.strings("scopes", "name").where(chosen)  # type: ignore[arg-type]
    return np.sort(scopes.column("start_ns").to_numpy()[picked])


def _window_of(ctx: Context, forwards: np.ndarray) -> np.ndarray | None:
    """Each forward pass's accumulation window: how many optimizer steps began before it, else its
    analysed step; None where neither tells windows apart."""
    optimizer = _scope_starts(ctx, lambda n: n.startswith(OPTIMIZER_STEP))
    if len(optimizer):
        return np.searchsorted(optimizer, forwards, side="right")
    if ctx.step_count < 2:
        return None
    return ctx.step_index(forwards)


def _all_reduce_launches(ctx: Context) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]:
    """The NCCL all-reduce kernels' launch times, and their GPU start and end times."""
    k = ctx.profile.table("kernels")
    if k.num_rows == 0:
        return np.zeros(0, dtype=np.int64), (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
    chosen = ctx.profile.strings("kernels", "name").where(lambda n: "allreduce" in n.lower().replace("_", ""))
    return ctx.kernel_launch_ns[chosen], (
        k.column("start_ns").to_numpy()[chosen].astype(np.int64),
        k.column("end_ns").to_numpy()[chosen].astype(np.int64),
    )


def _forward_ops(ctx: Context, starts: np.ndarray) -> np.ndarray:
    """The first top-level op of each of these forward passes (for its Python line)."""
    ops = ctx.profile.table("ops")
    if ops.num_rows == 0 or not len(starts):
        return np.zeros(0, dtype=np.int64)
    op_start = ops.column("start_ns").to_numpy()
    first = np.searchsorted(op_start, starts, side="left")
    return first[first < len(op_start)].astype(np.int64)
