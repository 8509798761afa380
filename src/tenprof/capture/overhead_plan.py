"""Which steps of a timeline run go with the capture off, so the run times its own un-profiled steps.

A profiler slows the host: every op and launch it records costs CPU time, so a CPU-bound step looks
slower, and the GPU idler, than it is. To say by how much, the timeline pass runs a few steps with
everything of its own off (ops, GPU activity, Python lines, the samplers; see TimelineSession._set_capture)
and times them with a clock read at each `tenprof.step()`; the report compares them with the recorded ones.

Without a schedule: stretches of three settling steps and three timed ones in a row, the first from the
seventh step (index 6), with three recorded steps between stretches (6-11, 15-20, 24-29, ...), until `count`
steps are timed (the last stretch times what is left): the default count of 3 is one stretch, steps 9-11
timed. Steps 0 to 2 are recorded because they are cold (step 0 builds and compiles, the next ones may still
tune), and 3 to 5 so that even a short run keeps three steady recorded steps, which every finding stands on,
ahead of the stretch (a 10-step run records 0-5 and times 9). The settling steps run un-profiled but untimed:
a break in a loop (the profiler's stop, its processing and the trace's export, or even a sleep) leaves the
next few steps slow, wearing off with steps run rather than time; one settling step and one timed (this plan
until 2026-12-01) left a compiled GPT-2's timed steps at 1.21x its plain loop's on an H200 where three and
three left them at 1.02x, and a compiled MLP's on the CPU at 1.27x against 1.06x (docs/BENCHMARKS.md,
"Settling steps on the GPU"). Timing three in a row rather than one per stretch costs the same un-recorded
steps with one restart of the profiler instead of three, and falls on odd and even steps alike, so a program
whose steps alternate (every other step waiting for a DataLoader whose two workers deliver together) is not
timed on one kind only. TENPROF_SETTLING_STEPS=S and TENPROF_TIMED_RUN=T change the settling and timed steps
of each stretch.
With `--schedule`, torch records only the active window; the measured steps are then the ones after
it, from the second (the first one pays for writing the trace): there only tenprof's recorder pauses.
This module does not import torch.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from tenprof.capture.schedule import Schedule

DEFAULT_COUNT = 3
SETTLING = 3  # steps run un-profiled, untimed, before the timed ones of each stretch
# One was too few: a loop's steps come back to their plain speed over a few steps after a break, not one. On
# the 2-core development machine (CPU, 2026-12-01) a compiled MLP's timed steps ran at 1.33-1.52x the same
# process's plain steps with one settling step, 1.02-1.15x with two, 0.97-1.05x with four.
TIMED_RUN = 3  # steps timed in a row after the settling ones
SETTLING_VAR = "TENPROF_SETTLING_STEPS"
TIMED_RUN_VAR = "TENPROF_TIMED_RUN"
COLD = 3  # the first steps, recorded: compiling, tuning, first allocations
RECORDED_BETWEEN = 3  # recorded steps before the first stretch (after the cold ones) and between two
# a step's mark in the call-site log's step bounds (tenprof.importers.callsites.SETTLING_MARK is the last)
RECORDED, TIMED, SETTLING_STEP = 0, 1, 2


@dataclass(frozen=True)
class OverheadPlan:
    count: int = DEFAULT_COUNT
    first: int = COLD + RECORDED_BETWEEN
    every: int = SETTLING + TIMED_RUN + RECORDED_BETWEEN
    after: int = -1  # with a schedule: the first measured step, the rest follow it
    settling: int = SETTLING
    timed_run: int = TIMED_RUN  # steps timed in a row in each stretch

    @staticmethod
    def for_run(
        count: int, schedule: Schedule | None, settling: int | None = None, timed_run: int | None = None
    ) -> OverheadPlan:
        """The run's plan; `settling` and `timed_run` left None are read from the environment:
        TENPROF_SETTLING_STEPS (`settling_steps`) and TENPROF_TIMED_RUN (steps timed in a row; TIMED_RUN unless
        it is a whole number of at least 1)."""
        if schedule is None:
            settling = settling_steps() if settling is None else settling
            in_a_row = _whole(TIMED_RUN_VAR, TIMED_RUN) if timed_run is None else timed_run
            every = settling + in_a_row + RECORDED_BETWEEN
            return OverheadPlan(count=count, every=every, settling=settling, timed_run=in_a_row)
        return OverheadPlan(count=count, after=schedule.wait + schedule.warmup + schedule.active + 1)

    @property
    def label(self) -> str:
        """How each stretch is planned, '3 settling, 3 timed' (the benchmarks' results are named by it)."""
        return f"{self.settling} settling, {self.timed_run} timed"

    @property
    def steps_to_time_one(self) -> int:
        """How many steps a run needs for its first timed step (without a schedule)."""
        return self.first + self.settling + 1

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
        """Whether step `step` runs un-profiled but is not timed: the first `settling` of its stretch."""
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
