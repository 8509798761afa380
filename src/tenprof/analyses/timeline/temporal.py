"""Per-step temporal breakdown (HTA's view): each step's time split into compute, communication,
transfers and idle. The parts do not overlap: time when a compute kernel runs is compute; of the rest,
time when a collective (NCCL) kernel runs is communication; of the rest, time with a copy is
transfers; what remains is idle. They sum to the step's duration. Steps run with the capture off are
left out where their GPU activity went off too (they would read as idle)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tenprof.core.intervals import coverage
from tenprof.store.profile import Profile


@dataclass(frozen=True)
class StepBreakdown:
    step: int
    duration_ns: int
    compute_ns: int
    communication_ns: int
    transfers_ns: int
    idle_ns: int


def temporal_breakdown(profile: Profile) -> list[StepBreakdown]:
    k, t, steps = profile.table("kernels"), profile.table("transfers"), profile.table("steps")
    is_comm = profile.strings("kernels", "name").where(lambda n: "nccl" in n.lower())
    ks, ke = k.column("start_ns").to_numpy(), k.column("end_ns").to_numpy()
    ts, te = t.column("start_ns").to_numpy(), t.column("end_ns").to_numpy()
    complete = steps.column("complete").to_numpy(zero_copy_only=False)
    if profile.meta.timeline.timed_steps_gpu is False:  # the steps timed un-profiled recorded no GPU work
        complete = complete & steps.column("capture_on").to_numpy(zero_copy_only=False)
    number = steps.column("step").to_numpy()[complete]
    lo, hi = steps.column("start_ns").to_numpy()[complete], steps.column("end_ns").to_numpy()[complete]
    compute = coverage(ks[~is_comm], ke[~is_comm], lo, hi)
    with_comm = coverage(ks, ke, lo, hi)
    everything = coverage(np.concatenate([ks, ts]), np.concatenate([ke, te]), lo, hi)
    return [
        StepBreakdown(int(n), int(b - a), int(c), int(w - c), int(e - w), int((b - a) - e))
        for n, a, b, c, w, e in zip(number, lo, hi, compute, with_comm, everything, strict=True)
    ]
