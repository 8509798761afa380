"""pageable-transfer: host<->device copies from pageable memory inside steps, and how much of their time
no kernel overlapped (the GPU did nothing else meanwhile)."""

from __future__ import annotations

import numpy as np

from tenprof.analyses.findings.context import Context, per_step
from tenprof.analyses.findings.model import Finding
from tenprof.core.intervals import coverage
from tenprof.core.quantities import duration, size


def exposed_ns(starts: np.ndarray, ends: np.ndarray, k_start: np.ndarray, k_end: np.ndarray) -> int:
    """Time inside the intervals that no kernel covers."""
    return int(((ends - starts) - coverage(k_start, k_end, starts, ends)).sum())


def check(ctx: Context) -> list[Finding]:
    t = ctx.profile.table("transfers")
    if t.num_rows == 0:
        return []
    start, end = t.column("start_ns").to_numpy(), t.column("end_ns").to_numpy()
    pageable = np.array(
        [
            s == "Pageable" or d == "Pageable"
            for s, d in zip(t.column("src_memory").to_pylist(), t.column("dst_memory").to_pylist(), strict=True)
        ],
        dtype=bool,
    ) & ctx.in_steps(ctx.transfer_issue_ns)
    moved = int(t.column("bytes").to_numpy()[pageable].sum())
    if not pageable.any() or per_step(moved, ctx) < ctx.t.transfers_min_pageable_bytes_per_step:
        return []
    k = ctx.profile.table("kernels")
    exposed = exposed_ns(start[pageable], end[pageable], k.column("start_ns").to_numpy(), k.column("end_ns").to_numpy())
    took = int(t.column("duration_ns").to_numpy()[pageable].sum())
    directions = sorted(set(np.array(t.column("direction").to_pylist(), dtype=object)[pageable].tolist()))
    bandwidth = moved / took if took else 0.0
    ops = t.column("op_id").to_numpy()[pageable]
    return [
        Finding(
            id="pageable-transfer",
            title=f"{size(per_step(moved, ctx))} per step copied through pageable host memory "
            f"({', '.join(directions)}), {duration(per_step(exposed, ctx))} per step not overlapped",
            cost_ns=exposed,
            seen=[
                f"{int(pageable.sum())} copies, {size(moved)} in {duration(took)} ({bandwidth:.1f} GB/s)",
                f"{duration(exposed)} of that time no kernel ran on the GPU",
            ],
            where=ctx.where(ops, t.column("duration_ns").to_numpy()[pageable]),
            why="A copy from pageable memory is staged through a driver buffer and is synchronous for the host: "
            "it is slower than from pinned memory and cannot overlap compute.",
            fix="Allocate the host tensors pinned (tensor.pin_memory(), DataLoader(pin_memory=True)) and copy with "
            ".to('cuda', non_blocking=True), ideally on a side stream one step ahead.",
            numbers={"bytes_per_step": per_step(moved, ctx), "exposed_ns": float(exposed), "gbps": bandwidth},
        )
    ]
