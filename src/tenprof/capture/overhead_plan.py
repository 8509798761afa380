"""Which steps of a timeline run go with the capture off, so the run times its own un-profiled steps.

A profiler slows the host: every op and launch it records costs CPU time, so a CPU-bound step looks
slower, and the GPU idler, than it is. To say by how much, the timeline pass runs a few steps with
everything of its own off (ops, GPU activity, Python lines, the samplers; see TimelineSession._set_capture)
and times them with a clock read at each `tenprof.step()`; the report compares them with the recorded ones.

Without a schedule: `count` stretches of two steps, from the fourth step (index 3) and every fifth after
it (3-4, 8-9, 13-14); the second step of each is the one timed. The first runs un-profiled too but is
not timed: it settles what stopping the profiler stirred up (Kineto's processing and the trace's export,
its memory given back), which made the step right after a stop 2.2x the plain loop's on an H100, where
the steps after it ran at 0.96x (benchmarks/toggle_probe.py, 2026-11-27). Steps 0 to 2 are left alone because
they are cold (step 0 builds and compiles, the next ones may still tune), and spreading the measured
steps between recorded ones keeps drift out of the comparison; an odd spacing makes them fall on odd
and even steps alike, so a program whose steps alternate (every other step waiting for a DataLoader
whose two workers deliver together) is not timed on one kind only. Experimental, issue 36: TENPROF_SETTLING_STEPS=S
settles each stop with S steps instead of one, and TENPROF_TIMED_RUN=T times T steps in a row after them
instead of one (stretches of S + T steps, three recorded between them; the last stretch times what is left
of `count`): a break in the loop leaves its next few steps slow, so one settling step leaves the timed
one slow too (docs/BENCHMARKS.md, "over many processes, pinned").
With `--schedule`, torch records only the active window; the measured steps are then the ones after
it, from the second (the first one pays for writing the trace): there only tenprof's recorder pauses.
This module does not import torch.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from tenprof.capture.schedule import Schedule

DEFAULT_COUNT = 3
SETTLING = 1  # steps run un-profiled, untimed, before each timed one
# TENPROF_SETTLING_STEPS: more of them (experimental, issue 36). A loop's steps come back to their plain speed
# over a few steps after a break (the stop and the export, or any other), not one: on the 2-core development
# machine (CPU, 2026-12-01) a compiled MLP's timed steps ran at 1.33-1.52x the same process's plain steps with
# one settling step, 1.02-1.15x with two, 0.97-1.05x with four; the eager 16-layer MLP's (3.5 ms steps) were at
# the plain speed with one.
SETTLING_VAR = "TENPROF_SETTLING_STEPS"
TIMED_RUN_VAR = "TENPROF_TIMED_RUN"  # steps timed in a row after the settling ones (experimental)
RECORDED_BETWEEN = 3  # recorded steps between two un-profiled stretches
# a step's mark in the call-site log's step bounds (tenprof.importers.callsites.SETTLING_MARK is the last)
RECORDED, TIMED, SETTLING_STEP = 0, 1, 2


@dataclass(frozen=True)
class OverheadPlan:
    count: int = DEFAULT_COUNT
    first: int = 3
    every: int = SETTLING + 1 + RECORDED_BETWEEN
    after: int = -1  # with a schedule: the first measured step, the rest follow it
    settling: int = SETTLING
    timed_run: int = 1  # steps timed in a row in each stretch

    @staticmethod
    def for_run(
        count: int, schedule: Schedule | None, settling: int | None = None, timed_run: int | None = None
    ) -> OverheadPlan:
        """The run's plan; `settling` and `timed_run` left None are read from the environment:
        TENPROF_SETTLING_STEPS (`settling_steps`) and TENPROF_TIMED_RUN (steps timed in a row; 1 unless it is a
        whole number of at least 1)."""
        if schedule is None:
            settling = settling_steps() if settling is None else settling
            in_a_row = _whole(TIMED_RUN_VAR, 1) if timed_run is None else timed_run
            every = settling + in_a_row + RECORDED_BETWEEN
            return OverheadPlan(count=count, every=every, settling=settling, timed_run=in_a_row)
        return OverheadPlan(count=count, after=schedule.wait + schedule.warmup + schedule.active + 1)

    def _stretch(self, step: int) -> tuple[int, int]:
        """(how far `step` is into its stretch, how many steps that stretch times), (-1, 0) before the
        first stretch or after the last."""
        offset = step - self.first
        if offset < 0:
            return -1, 0
        timed = min(self.timed_run, self.count - (offset // self.every) * self.timed_run)
        return (offset % self.every, timed) if timed > 0 else (-1, 0)

    def is_off(self, step: int) -> bool:
        """Whether step number `step` (0 for the code before the first tenprof.step()) runs un-profiled."""
        if self.count <= 0:
            return False
        if self.after >= 0:
            return self.after <= step < self.after + self.count
        within, timed = self._stretch(step)
        return 0 <= within < self.settling + timed

    def is_settling(self, step: int) -> bool:
        """Whether step `step` runs un-profiled but is not timed: the first (`settling`) after the profiler stopped."""
        if self.count <= 0 or self.after >= 0:
            return False
        within, timed = self._stretch(step)
        return timed > 0 and 0 <= within < self.settling

    def state(self, step: int) -> int:
        """How step `step` runs, as the call-site log's step marks say it: RECORDED, TIMED or SETTLING."""
        if self.is_settling(step):
            return SETTLING_STEP
        return TIMED if self.is_off(step) else RECORDED


def settling_steps() -> int:
    """How many un-profiled steps settle each stop before the timed ones: TENPROF_SETTLING_STEPS where it is
    a whole number of at least 1 (as tenprof's other experimental switches, anything else means the
    default), else SETTLING."""
    return _whole(SETTLING_VAR, SETTLING)


def _whole(name: str, default: int) -> int:
    text = os.environ.get(name, "").strip()
    return int(text) if text.isdigit() and int(text) >= 1 else default
