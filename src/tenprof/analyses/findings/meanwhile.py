"""What the host sampler saw in some windows of GPU idle time: the script's main thread's lines, most
time first, and, where it waited for DataLoader workers, the workers' lines (sampled in their own
processes). Shared by the checks that name why the host launched nothing (idle-gaps, data-loading)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tenprof.analyses.findings.context import Context
from tenprof.analyses.timeline.host import WORKERS, host_lines, main_thread, sampled, worker_processes
from tenprof.core.intervals import I64Array
from tenprof.core.quantities import duration


@dataclass(frozen=True)
class Meanwhile:
    seen: list[str]  # evidence lines
    where: list[str]  # the lines to look at, the one to fix first
    fix: str = ""  # advice that replaces the generic one, when the samples say more
    worker_line: str = ""  # the workers' busiest line, "function() at file:line", when they were sampled


def host_meanwhile(ctx: Context, lo: I64Array, hi: I64Array) -> Meanwhile:
    """From the host sampler, over the windows [lo, hi); nothing without samples."""
    if not len(lo) or not sampled(ctx.profile):
        return Meanwhile([], [])
    lo, hi = np.asarray(lo, dtype=np.int64), np.asarray(hi, dtype=np.int64)
    found = [h for h in host_lines(ctx.profile, lo, hi, main_thread(ctx.profile)) if h.line != "(no line of yours)"]
    if not found:
        return Meanwhile([], [])
    steps = max(ctx.step_count, 1)
    said = ", ".join(
        f"{h.function}() at {h.line} {duration(h.ns / steps)} per step"
        + (f", waiting for {h.waiting_for}" if h.waiting_for else "")
        + (" (in a torch op)" if h.in_torch_op else "")
        for h in found[:3]
    )
    seen = [f"meanwhile the host was in {said} (sampled)"]
    where = list(dict.fromkeys(h.line for h in found))[:3]  # a line in and out of a torch op is one line
    if found[0].waiting_for != WORKERS:
        return Meanwhile(seen, where)
    workers = worker_processes(ctx.profile, lo, hi)
    busy = [h for h in host_lines(ctx.profile, lo, hi, workers=True) if h.line != "(no line of yours)"]
    if not busy:
        seen.append(
            f"the DataLoader's {workers} worker processes were sampled but ran none of your lines then"
            if workers
            else "the DataLoader's worker processes were not sampled"
        )
        return Meanwhile(seen, where)
    top = busy[0]
    seen.append(
        f"the DataLoader's {workers} worker process(es) were meanwhile in "
        + ", ".join(f"{h.function}() at {h.line} {duration(h.ns / steps)} per step" for h in busy[:3])
        + " (worker time, sampled in the workers)"
    )
    fix = (
        f"The GPU waits for the DataLoader, whose workers spend their time in {top.function}() at {top.line}: "
        "make that faster (decode or transform less per item, cache), or start more workers (num_workers) "
        "so batches are ready ahead of the step; pin_memory=True and non_blocking copies for the transfer."
    )
    return Meanwhile(seen, list(dict.fromkeys([top.line, *where])), fix, f"{top.function}() at {top.line}")
