"""The steps a run times with its capture off, as the GPU saw them: CUDA events on the script's current stream
at the boundaries of each timed step, and the step's period from them.

Why: the host's clock reads how fast a step *queued* its work, not how fast the program runs. The capture's
stop drains the GPU, and in the settling and timed steps after it a loop that the GPU bounds runs its host ahead
of the GPU (compiled GPT-2 on an H100: 5.3 ms of CPU a step against about 12 ms of GPU work), so its timed steps
read 0.88-0.90 of the plain loop's same steps (docs/BENCHMARKS.md, 2026-12-07), whose host waits on a full
queue at the GPU's pace. Synchronizing around each timed step (TENPROF_TIMED_SYNC, tried and dropped) put the
host's launches and the GPU's work in series and read 1.38. An event costs the stream nothing and is
timestamped when the GPU reaches it: where the GPU is busy, the time between two of them is the GPU's pace;
where it waits for the host, the host's.

At a boundary where a timed step ends or begins, one event goes on right after the boundary's first clock read
(it closes the step ending there) and, where a timed step begins, another right before the last (it opens that
step): tenprof's own work at the boundary, B on the host's clock, lies between them. A timed step's period
is the time between its two events, except where the GPU ran out of work during the boundary before it (the
two events there read apart on the GPU: a loop the host bounds). Then the part of B in which the GPU still
finished the step before's last work (its tail: B less the GPU's idle between the two events) is taken off,
since in the program that tail runs beside the next step's host work; without this a host-bound step read
its tail longer (60-150 us on a 3 ms MLP step on an H100, 2026-12-07). Where the GPU stayed busy through the
boundary nothing is taken off: the GPU's pace is the step's.

Nothing is recorded where CUDA is not initialized (a script that never used the GPU: the host's clock is the
step's time) or where the current stream is being captured into a CUDA graph (an event there would join the
graph). Work the step puts on other streams is not waited for: a step whose last work runs on a side stream
reads short by that work's tail. `periods()` waits for the events (called once the run has stopped).
"""

from __future__ import annotations

from time import perf_counter_ns
from typing import Any

import torch

# Below this the two events at a boundary count as run back to back (the GPU busy through it): the GPU stamps
# two adjacent events a microsecond or so apart
GPU_IDLE_FLOOR_NS = 5_000


class TimedGpuPeriods:
    """Events at the boundaries of the timed steps; `periods()` -> [[step, ns], ...]."""

    def __init__(self) -> None:
        self._began: dict[int, tuple[Any, int]] = {}  # step -> (its opening event, perf clock as recorded)
        self._ended: dict[int, tuple[Any, int]] = {}  # step -> (its closing event, perf clock as recorded)

    def began(self, step: int) -> None:
        """Step `step`, timed, begins (the boundary's last clock read follows)."""
        event = _event_now()
        if event is not None:
            self._began[step] = (event, perf_counter_ns())

    def ended(self, step: int) -> None:
        """Step `step` ends (the boundary's first clock read came just before): a timed one, or the one
        before a timed one."""
        event = _event_now()
        if event is not None:
            self._ended[step] = (event, perf_counter_ns())

    def periods(self) -> list[list[int]]:
        """Each timed step with both its events: [step, its period in ns], in step order (see the module)."""
        out = []
        for step in sorted(set(self._began) & set(self._ended)):
            (opened, opened_at), (closed, _) = self._began[step], self._ended[step]
            try:
                closed.synchronize()
                took = opened.elapsed_time(closed) * 1e6
                before = self._ended.get(step - 1)
                if before is not None:
                    idle = before[0].elapsed_time(opened) * 1e6  # the GPU's wait during the boundary
                    boundary = opened_at - before[1]  # tenprof's work there, on the host's clock
                    if idle > GPU_IDLE_FLOOR_NS:
                        took -= max(0.0, boundary - idle)  # the step before's tail, run during that work
            except RuntimeError:  # events on different devices (the script changed its device in the step)
                continue
            out.append([step, round(took)])
        self._began.clear()
        self._ended.clear()
        return out


def _event_now() -> Any:
    """A timing event recorded on the current stream now, or None where there is no stream to record on."""
    if not torch.cuda.is_available() or not torch.cuda.is_initialized():  # type: ignore[no-untyped-call]
        return None
    if torch.cuda.is_current_stream_capturing():
        return None
    event = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
    event.record()
    return event
