"""Run a script as `python SCRIPT ARGS...` would, with each `tenprof.step()` call marked on the perf clock and
nothing captured: the plain loop's own step times, to set beside the steps `tenprof run` times un-profiled at
the same step numbers (benchmarks/overhead.py, config plain, when tenprof-timed runs too).

    python benchmarks/step_marks.py MARKS.json SCRIPT [ARGS...]

MARKS.json: the perf-clock nanoseconds at the script's start and at each `tenprof.step()` call, so step n (0
for the code before the first call) lasted marks[n + 1] - marks[n], as tenprof numbers steps. Beside it,
MARKS.clocks.json: the marking thread's CPU time at each call and Python's garbage collections, as a
`tenprof run` keeps them (capture/step_clocks.py; benchmarks/step_clocks.py sets the two side by side).

A control: STEP_MARKS_PAUSE=MS:STEPS (say `28:0-5,12-14`) sleeps MS milliseconds at the end of each listed
step, before its mark, so the plain loop's host is as slow on those steps as a recording host is and the GPU
idles as it does under a profiler; the steps after them then show what such a break alone does to a loop.
"""

from __future__ import annotations

import atexit
import json
import os
import runpy
import sys
import time
from pathlib import Path
from typing import Any

from step_clocks import clocks_path  # benchmarks/, this script's folder, is first on the path

import tenprof
from tenprof.capture.step_clocks import StepClocks

marks = [time.perf_counter_ns()]
clocks = StepClocks()


def _paused_steps(spec: str) -> tuple[float, set[int]]:
    """STEP_MARKS_PAUSE's seconds and step numbers ("28:0-5,12-14" -> 0.028, {0..5, 12..14})."""
    if not spec:
        return 0.0, set()
    ms, ranges = spec.split(":", 1)
    steps: set[int] = set()
    for part in ranges.split(","):
        low, _, high = part.partition("-")
        steps.update(range(int(low), int(high or low) + 1))
    return float(ms) / 1e3, steps


PAUSE_S, PAUSED = _paused_steps(os.environ.get("STEP_MARKS_PAUSE", ""))


def _mark(*args: Any, **kwargs: Any) -> None:
    if len(marks) - 1 in PAUSED:  # the step now ending is step len(marks) - 1
        time.sleep(PAUSE_S)
    marks.append(time.perf_counter_ns())
    clocks.ended()  # nothing of a profiler's at a plain boundary: it resumes at once


def main() -> None:
    out = Path(sys.argv[1])
    sys.argv = sys.argv[2:]  # as the script sees them: its path, then its arguments
    tenprof.step = _mark  # the scripts call tenprof.step() by attribute, each step
    clocks.start()
    atexit.register(lambda: out.write_text(json.dumps(marks)))
    atexit.register(lambda: clocks_path(out).write_text(json.dumps(clocks.columns())))
    runpy.run_path(sys.argv[0], run_name="__main__")


if __name__ == "__main__":
    main()
