"""exposed-communication: for a share of each step the GPU runs collectives and nothing else.

Read from the step decomposition's `collective` part (analyses.timeline.step_time): the instants the GPU
runs only communication kernels (NCCL's and RCCL's, other libraries' collectives, expert-parallel
dispatch and combine: op_kinds.is_collective). That time is either communication the compute does not
hide, or this rank waiting inside a collective for slower ranks to reach it; one rank's profile cannot tell
the two apart, the merged report of every rank's profile can (its straggler check), and the finding says
so. Its cost is that time, of the collectives the analysed steps launched; where
all-reduce-every-micro-step fired, the wasted rounds' share is that finding's (causes). A public MI300X
trace of DDP training with activation checkpointing (AMD-AGI/TraceLens's tests) spent 66% of its step
there, and its first finding was a 0.8 ms kernel variance. The fix follows what the recording ran: with a
backward, data-parallel training (overlap the gradients' collectives with it); without one (inference, a
tensor- or expert-parallel forward: a public trace of a 4-layer Llama split over two RTX 4090s spent 79% of
its forward in ReduceScatter and AllGather), the collectives sit between the layers by design, so fewer
ranks, faster links or asynchronous tensor parallelism; on GeForce cards, which have neither peer-to-peer
access nor NVLink, collectives pass through host memory."""

from __future__ import annotations

import numpy as np

from tenprof.analyses.findings.context import Context, per_step
from tenprof.analyses.findings.model import Finding
from tenprof.analyses.op_kinds import is_collective
from tenprof.analyses.timeline.step_time import length
from tenprof.core.intervals import coverage
from tenprof.core.quantities import duration

NAMES_SHOWN = 3
NO_OP = "(no op)"  # what Context.where says for a kernel launched outside every op


def check(ctx: Context) -> list[Finding]:
    blocks = ctx.parts["collective"]
    if not ctx.analysed_ns or length(blocks) < ctx.t.exposed_communication_min_share * ctx.analysed_ns:
        return []
    k = ctx.profile.table("kernels")
    # the collectives the analysed steps launched: one launched before them, or in a step left to the
    # slow-step check (a first all-reduce that waits for every rank to start), may still run in them
    kernel_names = ctx.profile.strings("kernels", "name")
    chosen = np.flatnonzero(kernel_names.where(is_collective) & ctx.kernels_in_steps)
    start = k.column("start_ns").to_numpy()[chosen].astype(np.int64)
    end = k.column("end_ns").to_numpy()[chosen].astype(np.int64)
    alone = coverage(*blocks, start, end).astype(np.int64)  # each collective's time with nothing else running
    exposed = int(alone.sum())
    if exposed < ctx.t.exposed_communication_min_share * ctx.analysed_ns:
        return []
    names = kernel_names.values
    codes = kernel_names.codes[chosen]
    by_name = np.bincount(codes, weights=alone, minlength=len(names))
    top = [int(c) for c in np.argsort(-by_name, kind="stable")[:NAMES_SHOWN] if by_name[c] > 0]
    share = exposed / ctx.analysed_ns
    ranks = ctx.profile.meta.world_size
    seen = [
        f"the GPU runs collectives and nothing else {duration(per_step(exposed, ctx))} per step: {100 * share:.0f}% "
        f"of the {ctx.step_count} analysed step(s)",
        "most of it in " + ", ".join(f"{_short(names[c])} {duration(by_name[c])}" for c in top),
    ]
    if ranks > 1:
        seen.append(
            f"one of {ranks} ranks: time in a collective is also this rank waiting for the slowest to arrive, "
            "which the merged report of every rank's profile tells apart (tenprof report on their folder)"
        )
    ops = k.column("op_id").to_numpy()[chosen]
    return [
        Finding(
            id="exposed-communication",
            title=f"Communication not hidden: the GPU runs only collectives {100 * share:.0f}% of each step",
            cost_ns=exposed,
            seen=seen,
            # collectives launched outside any op (a process group's own thread) name no line: the others do
            where=[line for line in ctx.where(ops, alone, limit=4) if line != NO_OP][:3],
            why="While a collective runs alone the GPU computes nothing: either the communication is not overlapped "
            "with compute (issued after it, or too large for it), or this rank waits in it for another rank.",
            fix=_fix(ctx),
            numbers={"exposed_ns": float(exposed), "share": share, "ranks": float(ranks)},
        )
    ]


STRAGGLER_FIRST = (
    "First make sure no rank is slower than the others (the merged report of all ranks names a straggler and its "
    "cause). "
)


def _fix(ctx: Context) -> str:
    """Data-parallel training's fix where the recording runs a backward; a model-parallel forward's otherwise."""
    if ctx.profile.table("ops").column("is_backward").to_numpy(zero_copy_only=False).any():
        return STRAGGLER_FIRST + (
            "Then hide the communication under compute: let DDP overlap its all-reduces with the backward pass (no "
            "synchronization inside it; tune bucket_cap_mb; gradient_as_bucket_view=True), prefetch with FSDP "
            "(forward_prefetch, backward_prefetch), give each collective more compute to hide under (a larger "
            "micro-batch; gradient accumulation with no_sync()), or send less (bf16 gradients through a DDP "
            "communication hook)."
        )
    geforce = any("GeForce" in gpu.name for gpu in ctx.profile.meta.gpus)
    return STRAGGLER_FIRST + (
        "With no backward recorded, these are a model-parallel forward's collectives (tensor or expert "
        "parallelism), which sit between the layers' compute by design: split over fewer ranks where the model "
        "fits, give each collective more work (a larger batch), overlap it (asynchronous tensor parallelism), or "
        "send less (activations in bf16)"
        + (
            "; these GeForce cards have neither peer-to-peer access nor NVLink, so every collective passes through "
            "host memory: a card that holds the model alone, or cards with NVLink, avoid it."
            if geforce
            else "."
        )
    )


def _short(name: str) -> str:
    return name if len(name) <= 60 else name[:57] + "..."
