"""Steps on the critical path between host and GPU (pure; no I/O).

A step's host window runs between its step marks. Where the GPU bounds the loop, the host runs ahead: between
its marks the GPU runs earlier steps' work, and before a synchronization (tenprof's drain around the steps
it times with the capture off, an `.item()`, the end of the run) the host waits outside any step while the
GPU finishes the last ones. On the critical path a step ends at the later of the host's end of it and the
end of the last kernel it launched, and the next step starts there."""

from __future__ import annotations

import numpy as np

from tenprof.analyses.timeline.overhead import kernel_launch_ns
from tenprof.core.intervals import I64Array
from tenprof.store.profile import Profile


def launching_step(lo: I64Array, hi: I64Array, launched: I64Array) -> I64Array:
    """For each launch time, the index of the step window [lo, hi) it falls in, -1 outside every one (the
    windows need not be sorted; they do not overlap)."""
    if len(lo) == 0:
        return np.full(len(launched), -1, dtype=np.int64)
    order = np.argsort(lo, kind="stable")
    pos = np.clip(np.searchsorted(lo[order], launched, side="right") - 1, 0, None)
    inside = (launched >= lo[order][pos]) & (launched < hi[order][pos])
    return np.where(inside, order[pos], -1)


def critical_path_windows(profile: Profile, lo: I64Array, hi: I64Array, numbers: I64Array) -> tuple[I64Array, I64Array]:
    """Each step's window [lo, hi) on the critical path: it ends at the later of the host's end of the step and
    the end of the last kernel the step launched, and starts where the step before it (the previous step
    number, in `numbers`) ended so. Host windows would leave the GPU's last steps before a synchronization out
    (fp32 GPT-2 under a cheap capture on an H200: 30.8 ms a step against 46 ms of kernels). A step the host
    bounds keeps its host window. The windows never overlap, so what is cut from them still adds up to the
    time the steps span."""
    if len(lo) == 0:
        return lo, hi
    k = profile.table("kernels")
    gpu_end = np.full(len(lo), np.iinfo(np.int64).min, dtype=np.int64)
    if k.num_rows:
        step = launching_step(lo, hi, kernel_launch_ns(profile))
        ok = step >= 0
        np.maximum.at(gpu_end, step[ok], k.column("end_ns").to_numpy()[ok])
    # (steps in time order; another stream's work may end before an earlier step's: ends never go back)
    end = np.maximum.accumulate(np.maximum(hi, gpu_end))
    start = lo.copy()
    follows = np.flatnonzero(numbers[1:] == numbers[:-1] + 1) + 1
    start[follows] = np.maximum(lo[follows], end[follows - 1])
    return start, np.maximum(end, start)
