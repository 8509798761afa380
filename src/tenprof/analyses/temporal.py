"""Per-step temporal breakdown (HTA's view): each step's time split into compute, communication,
transfers and idle. The parts do not overlap: time when a compute kernel runs is compute; of the rest,
time when a collective (NCCL) kernel runs is communication; of the rest, time with a copy is
transfers; what remains is idle. They sum to the step's duration."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tenprof.importers.intervals import union_length
from tenprof.store.profile import Profile


@dataclass(frozen=True)
class StepBreakdown:
    step: int
    duration_ns: int
    compute_ns: int
    communication_ns: int
    transfers_ns: int
    idle_ns: int


def _covered(starts: np.ndarray, ends: np.ndarray, lo: int, hi: int) -> int:
    s, e = np.clip(starts, lo, hi), np.clip(ends, lo, hi)
    return union_length(s[e > s], e[e > s])


def temporal_breakdown(profile: Profile) -> list[StepBreakdown]:
    k, t, steps = profile.table("kernels"), profile.table("transfers"), profile.table("steps")
    is_comm = np.array(["nccl" in n.lower() for n in k.column("name").to_pylist()], dtype=bool)
    ks, ke = k.column("start_ns").to_numpy(), k.column("end_ns").to_numpy()
    ts, te = t.column("start_ns").to_numpy(), t.column("end_ns").to_numpy()
    out = []
    for step, lo, hi, complete in zip(
        steps.column("step").to_pylist(),
        steps.column("start_ns").to_pylist(),
        steps.column("end_ns").to_pylist(),
        steps.column("complete").to_pylist(),
        strict=True,
    ):
        if not complete:
            continue
        compute = _covered(ks[~is_comm], ke[~is_comm], lo, hi)
        with_comm = _covered(ks, ke, lo, hi)
        everything = _covered(np.concatenate([ks, ts]), np.concatenate([ke, te]), lo, hi)
        out.append(
            StepBreakdown(step, hi - lo, compute, with_comm - compute, everything - with_comm, (hi - lo) - everything)
        )
    return out
