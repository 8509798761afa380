"""The host sampler: where every Python thread of the script is, about every millisecond, during the
timeline pass, so time the host spends outside torch ops (loading and decoding data, Python
preprocessing, sleeping, logging, waiting on a queue) has a line too.

A daemon thread wakes every `interval_ns`, reads all threads' current frames (`sys._current_frames`)
and records (native thread id, perf-clock time, call path) for each, the call path interned in the
call-site log's frame tree (same clock, same frames: the importer aligns and joins both the same way).
A builtin such as `time.sleep` has no Python frame: the sample is at the line that called it. Native
frames (C++ inside torch, a C extension) are not read. Paused while a step runs with the capture off
(so its cost is part of the profiler's measured overhead) and during tenprof's own work at each step
boundary. Samples: `samples` array of
(thread, time, frame) triples, read by CallsiteLog.to_file.
"""

from __future__ import annotations

import sys
import threading
import time
from array import array

from tenprof.capture.callsites import FrameInterner

DEFAULT_INTERVAL_NS = 1_000_000  # 1 kHz


class HostSampler:
    def __init__(self, interner: FrameInterner, interval_ns: int = DEFAULT_INTERVAL_NS) -> None:
        self.interner = interner
        self.interval_ns = interval_ns
        self.samples = array("q")
        self.paused = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="tenprof-host-sampler", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=1.0)

    def _run(self) -> None:
        me = threading.get_ident()
        native: dict[int, int] = {}
        wait = self.interval_ns / 1e9
        while not self._stop.wait(wait):
            if self.paused:
                continue
            now = time.perf_counter_ns()
            frames = sys._current_frames()
            if any(ident not in native for ident in frames):
                # a new thread: ids to native ids (what Kineto and the call-site log name threads by)
                native = {t.ident: t.native_id or t.ident for t in threading.enumerate() if t.ident is not None}
            rows = [
                (native.get(ident, ident), now, self.interner.path_id(frame))
                for ident, frame in frames.items()
                if ident != me
            ]
            if not self.paused:  # paused while this round was read: it may straddle the pause, drop it
                for row in rows:
                    self.samples.extend(row)
