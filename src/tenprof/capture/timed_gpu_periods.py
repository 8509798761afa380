"""The steps a run times with its capture off, as the GPU saw them: a CUDA event on the script's current stream
at each boundary of a timed step, and the time between the two events that bracket each step.

Why: the host's clock reads how fast a step *queued* its work, not how fast the program runs. The capture's
stop drains the GPU, and in the settling and timed steps after it a loop that the GPU bounds runs its host ahead
of the GPU (compiled GPT-2 on an H100: 5.3 ms of CPU a step against about 12 ms of GPU work), so its timed steps
read 0.88-0.90 of the plain loop's same steps (docs/BENCHMARKS.md, 2026-12-07), whose host waits on a full
queue at the GPU's pace. Synchronizing around each timed step (TENPROF_TIMED_SYNC, tried and dropped) put the
host's launches and the GPU's work in series and read 1.38. An event costs the stream nothing and is
timestamped when the GPU reaches it: where the GPU is busy, the time between two of them is the GPU's pace;
where it waits for the host, the host's. Over a run of timed steps the periods add up to the host's time plus
what the queue grew by, the work queued and not yet done.

The event that ends a step is recorded right after the boundary's first clock read, the one that begins the
next right before its last (tenprof's own work at the boundary lies between them, as between its clock reads).
Nothing is recorded where CUDA is not initialized (a script that never used the GPU: the host's clock is the
step's time) or where the current stream is being captured into a CUDA graph (an event there would join the
graph). Work the step puts on other streams is not waited for: a step whose last work runs on a side stream
reads short by that work's tail. `periods()` waits for the events (called once the run has stopped).
"""

from __future__ import annotations

from typing import Any

import torch


class TimedGpuPeriods:
    """Events at the boundaries of the timed steps; `periods()` -> [[step, ns], ...]."""

    def __init__(self) -> None:
        self._began: dict[int, Any] = {}  # step -> the event recorded as it began
        self._ended: dict[int, Any] = {}  # step -> the event recorded as it ended

    def began(self, step: int) -> None:
        event = _event_now()
        if event is not None:
            self._began[step] = event

    def ended(self, step: int) -> None:
        if step not in self._began:
            return
        event = _event_now()
        if event is not None:
            self._ended[step] = event

    def periods(self) -> list[list[int]]:
        """Each step with both events: [step, ns between them on the GPU], in step order."""
        out = []
        for step in sorted(self._ended):
            end = self._ended[step]
            try:
                end.synchronize()
                out.append([step, round(self._began[step].elapsed_time(end) * 1e6)])
            except RuntimeError:  # the two on different devices (the script changed its device in the step)
                continue
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
