"""The host sampler: where every Python thread of the script is, about every millisecond, during the
timeline pass, so time the host spends outside torch ops (loading and decoding data, Python
preprocessing, sleeping, logging, waiting on a queue) has a line too.

A daemon thread wakes every `interval_ns`, reads all threads' current frames (`sys._current_frames`)
and records (native thread id, perf-clock time, call path) for each, the call path interned in the
call-site log's frame tree (same clock, same frames: the importer aligns and joins both the same way).
A builtin such as `time.sleep` has no Python frame: the sample is at the line that called it. Native
frames (C++ inside torch, a C extension) are not read. Paused while a step runs with the capture off
(so its cost is part of the profiler's measured overhead) and during tenprof's own work at each step
boundary; while it samples, the interpreter's switch interval is one period (see `paused`). Samples: `samples` array of
(thread, time, frame) triples, read by CallsiteLog.to_file.

With a gate (`TENPROF_SAMPLER_GATE=1` and the native recorder; experimental), the thread waits for its
rounds in native code without the interpreter's lock, and a round due while every script thread that runs
torch ops was running them is skipped there (`skipped`), to be given its op's call site
(capture.skipped_rounds): each round costs the script a hand-over of the lock, which in a loop of torch ops
is most of the sampler's cost. A thread that runs no ops is not sampled in skipped rounds: its next sample
stands for their time, at the line where it then is (where it waits, for a queue's feeder or a logger).
"""

from __future__ import annotations

import sys
import threading
import time
from array import array
from typing import Protocol

from tenprof.capture.frames import FrameInterner
from tenprof.capture.pause_gate import PauseGate

DEFAULT_INTERVAL_NS = 1_000_000  # 1 kHz
GATE_MAX_WAIT_NS = 50_000_000  # the gate returns at least this often, so that a stop is seen


class RoundGate(Protocol):
    """Where a gated sampler waits for its rounds (capture.native_lines.SamplerGate)."""

    def wait(self, period_ns: int, max_wait_ns: int, threads: list[int]) -> int: ...
    def pause(self, paused: bool) -> None: ...
    def skipped(self) -> array[int]: ...


# While sampling, a thread waiting for the interpreter's lock asks for it after a tenth of a period: the
# sampler, waking, takes its sample within that of when it was due. At a whole period, a stretch of pure
# Python shorter than a period between two calls that let the lock go (a torch op, a sleep(0)) was never
# sampled inside: every sample landed at the call after it, with the stretch's time.
SWITCHES_PER_PERIOD = 10


class HostSampler:
    def __init__(
        self, interner: FrameInterner, interval_ns: int = DEFAULT_INTERVAL_NS, gate: RoundGate | None = None
    ) -> None:
        self.interner = interner
        self.interval_ns = interval_ns
        self.samples = array("q")
        # with a gate, the rounds it skipped (the script's threads all running ops): (thread, time) pairs
        self.gate = gate
        self.skipped = array("q")
        self.torn_chains = 0  # samples dropped because a thread's frame chain could not be walked
        self._gate = PauseGate(paused=True)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._switch_interval = sys.getswitchinterval()
        # tenprof's own work at a step boundary runs now: rounds due are skipped, the thread is not paused
        # (pausing and resuming it at every boundary, a wake-up and a hand-over of the interpreter's lock,
        # took about 80 us of a 400 us boundary on the 2-core development machine)
        self.at_boundary = False

    @property
    def paused(self) -> bool:
        return self._gate.paused

    @paused.setter
    def paused(self, value: bool) -> None:
        # While sampling, the interpreter hands the lock to a waiting thread after a tenth of a period rather
        # than the default 5 ms (SWITCHES_PER_PERIOD): a round that waits for the script's Python code to let
        # go lands close to when it was due, so a stretch of pure-Python work is sampled where it runs (at
        # 5 ms, an 8 ms loop got 4.8 ms). Paused, the program runs with its own setting again. Before start
        # and after stop the setting is left alone: a session that ends in steps run un-profiled resumes its
        # recorders after the sampler stopped, which left an in-process profile's program at the sampler's
        # setting for the rest of its life.
        live = self._thread is not None and not self._stop.is_set()
        if self.gate is not None:
            self.gate.pause(value)
        if value:
            self._gate.close()
            if live:
                sys.setswitchinterval(self._switch_interval)
        else:
            if live:
                sys.setswitchinterval(min(self._switch_interval, self.interval_ns / 1e9 / SWITCHES_PER_PERIOD))
            self._gate.open()

    def start(self) -> None:
        self._switch_interval = sys.getswitchinterval()
        self._thread = threading.Thread(target=self._run, name="tenprof-host-sampler", daemon=True)
        self.paused = False
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._gate.open()  # wake a paused thread so that it sees the stop
        if self._thread is not None:
            self._thread.join(timeout=1.0)
        sys.setswitchinterval(self._switch_interval)
        if self.gate is not None:
            self.skipped.extend(self.gate.skipped())

    def _run(self) -> None:
        me = threading.get_ident()
        native: dict[int, int] = {}
        own = {me}
        known: set[int] = set()
        wait = self.interval_ns / 1e9
        script: list[int] = []  # the script's threads the last round sampled (OS ids), for the gate
        while not self._stop.is_set():
            if self.gate is None:
                if self._stop.wait(wait):
                    break
            elif not self.gate.wait(self.interval_ns, GATE_MAX_WAIT_NS, script) and not self.paused:
                continue  # no round due yet (the script's threads were all running ops)
            if self._stop.is_set():
                break
            if self.paused:
                self._gate.wait_while_paused()  # blocked, not polling: a paused sampler costs the program nothing
                if self._stop.is_set():
                    break
                # resumed (a step begins): sample now, not a period late
            if self.at_boundary:
                continue
            now = time.perf_counter_ns()
            frames = sys._current_frames()
            walked = []
            for ident, frame in frames.items():
                if ident in own:
                    continue
                try:
                    walked.append((ident, self.interner.sample(frame)))
                except AttributeError:
                    # A chain whose f_back is not a frame (seen on Python 3.11 with torch.compile on the CPU,
                    # a function in the chain while Dynamo evaluates a frame): that thread's sample is
                    # dropped this round; uncaught, it ended the sampler for the rest of the run.
                    self.torn_chains += 1
            idents = frames.keys() - set()
            # The frames hold their locals: let go of them as soon as the paths are read, before anything that
            # may hand the interpreter's lock to the script (a dead tensor kept alive even briefly breaks CUDA
            # graph trees' check that its pool's memory was freed), the loop's last one too. A frame whose
            # function returned meanwhile is freed here, on this thread, where the allocator reports no free
            # to the profiler: its tensors read as never freed (a false leak). Held over a round, that was
            # every sampled step's frame; now only one the script returns from while the walk above holds it,
            # which takes the lock handed over mid-walk (the OS pausing this thread on a loaded machine).
            del frames, frame
            if idents != known or any(ident not in native for ident in idents):
                # threads came or went (an ident may be reused; a thread may not be registered yet): ids to
                # native ids (what Kineto and the call-site log name threads by), and tenprof's own threads
                # (this one, the GPU clock reader, a DataLoader worker's sample writer), not sampled
                known = idents
                threads = [(t.ident, t.native_id, t.name) for t in threading.enumerate() if t.ident is not None]
                native = {ident: native_id or ident for ident, native_id, _ in threads}
                own = {ident for ident, _, name in threads if name.startswith("tenprof-")} | {me}
            mine = [(ident, path) for ident, path in walked if ident not in own]
            rows = [(native.get(ident, ident), now, self.interner.id_of(*path)) for ident, path in mine]
            script = [row[0] for row in rows]
            if not self.paused and not self.at_boundary:  # a round read as a pause or boundary began: drop it
                for row in rows:
                    self.samples.extend(row)
