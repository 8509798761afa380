"""memory-fragmentation: the caching allocator reserved far more than it handed out, at its peak.

The timeline's allocator reports carry the allocator's reserved and allocated totals after each event.
On a CUDA device, the peak of reserved memory beyond the peak of allocated memory is memory the
allocator took from the driver while free blocks it already held could not serve the request: blocks
split and cached in sizes the next requests do not fit (alternating sizes, a growing sequence length).
(Compared at one moment, reserved above allocated is also the cache a step refills after its peak,
which is no waste.) It fires when that difference is `memory_fragmentation.min_share` of the reserved
peak and `memory_fragmentation.min_bytes` or more. Expandable segments let a segment grow in place
instead of taking a new one, so the allocator's reserve stays near the most it hands out: the
difference is what it would give back.

It costs no time but memory: it is kept with the bytes it would free (`bytes_saved`), and ranks first
(urgent) when the reserved peak came within a tenth of the card's memory, where the next larger batch
fails. After an out-of-memory error the post-mortem (out-of-memory) says it instead.
"""

from __future__ import annotations

import numpy as np

from tenprof.analyses.findings.context import Context
from tenprof.analyses.findings.model import Finding
from tenprof.core.quantities import size

NEAR_FULL = 0.9  # of the card's memory: a reserved peak above this is one larger batch from failing


def check(ctx: Context) -> list[Finding]:
    if ctx.profile.meta.run.out_of_memory is not None:
        return []
    m = ctx.profile.table("memory")
    if m.num_rows == 0:
        return []
    on_cuda = ctx.profile.strings("memory", "device_type").equals("cuda")
    reserved = m.column("total_reserved_bytes").to_numpy()
    allocated_after = m.column("total_allocated_bytes").to_numpy()
    devices = m.column("device").to_numpy()
    worst: tuple[int, int, int, int] | None = None  # spare, device, reserved peak, allocated peak's row
    for device in np.unique(devices[on_cuda & (reserved >= 0)]).tolist():
        rows = np.flatnonzero(on_cuda & (reserved >= 0) & (devices == device))
        top = int(rows[int(np.argmax(allocated_after[rows]))])
        held = int(reserved[rows].max())
        spare = held - int(allocated_after[top])
        if worst is None or spare > worst[0]:
            worst = (spare, int(device), held, top)
    if worst is None:
        return []
    spare, device, held, peak = worst
    allocated = int(allocated_after[peak])
    if spare < ctx.t.memory_fragmentation_min_share * held or spare < ctx.t.memory_fragmentation_min_bytes:
        return []
    card = next((g.total_memory_bytes for g in ctx.profile.meta.gpus if g.index == device), 0)
    near_full = card > 0 and held >= NEAR_FULL * card
    op = int(m.column("op_id")[peak].as_py())
    seen = [
        f"on cuda:{device} the allocator reserved up to {size(held)} and handed out at most {size(allocated)}"
        + (f" (in {ctx.op_name(op)})" if op >= 0 else "")
        + f": {size(spare)} ({100 * spare / held:.0f}%) of what it reserved sat in free blocks it could not use"
    ]
    if card > 0:
        seen.append(f"the card has {size(card)}; the reserved peak is {100 * held / card:.0f}% of it")
    return [
        Finding(
            id="memory-fragmentation",
            title=f"Memory fragmentation: {size(spare)} of the {size(held)} reserved on cuda:{device} is free but "
            "unusable",
            cost_ns=0,
            seen=seen,
            where=[ctx.line_of_op(op)] if op >= 0 else [],
            why="The caching allocator splits and caches blocks; when requests change size it cannot reuse them and "
            "takes new segments, so a job runs out of memory with much of it free.",
            fix="Set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (segments grow in place instead of splitting), "
            "or keep allocation sizes steady (pad variable lengths to a few buckets).",
            numbers={
                "bytes_saved": float(spare),
                "reserved_peak_bytes": float(held),
                "allocated_bytes": float(allocated),
            },
            urgent=near_full,
        )
    ]
