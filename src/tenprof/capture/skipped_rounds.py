"""The host sampler's skipped rounds made into samples. With its gate (capture.native_lines.SamplerGate), the
sampler skips a round when every script thread that runs torch ops made an op callback less than a period
before it: those threads were dispatching ops, whose call sites the recorder has already. Each skipped round becomes,
for each such thread, a sample at the frame of that thread's call-site record that started last at or
before the round: the op running then, or the one just before (the line the thread was running ops from).
A round before any record of its thread is left out.

Input: skipped (thread, time) pairs and the recorder's records (thread, start, end, frame), both flattened,
times on the perf clock. Output: (thread, time, frame) triples flattened, as HostSampler.samples. Pure.
"""

from __future__ import annotations

import bisect
from array import array
from collections.abc import Sequence


def samples_of_skipped(skipped: Sequence[int], records: Sequence[int]) -> array[int]:
    by_thread: dict[int, list[tuple[int, int]]] = {}
    for k in range(0, len(records) - 3, 4):
        by_thread.setdefault(records[k], []).append((records[k + 1], records[k + 3]))
    starts: dict[int, list[int]] = {}
    frames: dict[int, list[int]] = {}
    for thread, rows in by_thread.items():
        rows.sort()
        starts[thread] = [start for start, _ in rows]
        frames[thread] = [frame for _, frame in rows]
    samples = array("q")
    for k in range(0, len(skipped) - 1, 2):
        thread, ts = skipped[k], skipped[k + 1]
        at = bisect.bisect_right(starts.get(thread, []), ts) - 1
        if at >= 0:
            samples.extend((thread, ts, frames[thread][at]))
    return samples
