"""Per step, the script's main-thread CPU time and Python's garbage collections: a diagnostic of the steps a
run times with its capture off, set beside a plain run's same steps (benchmarks/step_clocks.py).

Compiled GPT-2's un-profiled steps read 1.16x (H200) and 1.20x (H100) its plain loop over many processes
(docs/BENCHMARKS.md); set beside a plain run's same steps on two H100 hosts (2026-12-07) they read 0.88 to
1.31, and none of the readings below showed a cost of tenprof's. Three readings tell the kinds of cause
apart: the main thread's CPU time over a step (more of it: more work on the thread, a slower code path or a
colder cache; the same with a longer step: waiting, for the interpreter's lock, the GPU or the kernel), the
whole process's CPU time over it (what the process's other threads took meanwhile: work of a profiler's
still running beside the step, on the same cores) and the collections Python's garbage collector ran in it
(a heap grown by the recording makes each full collection longer).

At each step boundary, on the thread that calls `tenprof.step()`, `ended()` reads that thread's CPU time
(and the process's) right after the boundary's first perf-clock read and `resumed()` right before its last
(tenprof's own work at the boundary lies between the two, as between its two clock reads); `gc.callbacks`
notes each collection's perf-clock start and end and its generation. A CPU-time read took 0.46 us (thread)
and 0.49 us (process) on the 2-core development machine (a system call, where the perf clock's read takes
0.04), four a step; the GC callback runs twice a collection. Both run in recorded and un-recorded steps
alike, and the plain side (benchmarks/step_marks.py) installs the same. The sidecar key `step_clocks` keeps
`columns()`.

A diagnostic, off unless TENPROF_THREAD_CLOCKS=1: at each boundary's first read, every thread of the process
too, by name (/proc/self/task/TID/schedstat: its time on a CPU, ns; comm: its name), and the calling
thread's context switches (voluntary: it waited; involuntary: another thread took its CPU, a sign of
threads crowding the cores the process may use). Compiled GPT-2's timed steps on some H100 hosts ran their
main thread with 1.5x a plain run's CPU time (2026-12-07) whichever of tenprof's own threads were off: this
says which threads ran meanwhile. Linux only; about 15 us a thread a read.
No torch here.
"""

from __future__ import annotations

import gc
import os
import threading
import time
from typing import Any

THREAD_CLOCKS_VAR = "TENPROF_THREAD_CLOCKS"  # 1: every thread's CPU time at each boundary (the module says why)
TASKS = "/proc/self/task"

# A long run collects often (a training loop: a few young collections a step); past this many the rest are
# counted, not kept, so that the sidecar stays small (about 3 MB of JSON at the cap)
MAX_COLLECTIONS = 100_000


# The callbacks of the clocks started in this process: a forked child (a DataLoader worker) drops them, as its
# collections are none of the script's steps, and a callback left to run in a child's finalization is Python
# code the child never asked for (a worker's segmentation fault was once seen in a full CI run, 2026-12-07)
_INSTALLED: list[Any] = []


def _drop_in_child() -> None:
    for callback in _INSTALLED:
        if callback in gc.callbacks:
            gc.callbacks.remove(callback)
    _INSTALLED.clear()


os.register_at_fork(after_in_child=_drop_in_child)


class StepClocks:
    """The thread CPU time at each step mark and the collections between `start()` and `stop()`."""

    def __init__(self) -> None:
        self.thread_cpu_ns: list[list[int]] = []  # per boundary: the thread's CPU time as it began and ended
        self.process_cpu_ns: list[list[int]] = []  # per boundary: the process's, all threads, likewise
        self.collections: list[list[int]] = []  # [perf-clock start, end, generation] per collection
        self.collections_dropped = 0  # past MAX_COLLECTIONS
        self._open: tuple[int, int] | None = None  # the collection under way: (start, generation)
        self._installed = False
        self.by_thread = os.environ.get(THREAD_CLOCKS_VAR) == "1" and os.path.isdir(TASKS)
        self.thread_names: dict[str, str] = {}  # TID -> its name, for the threads seen at any boundary
        self.threads_cpu_ns: list[dict[str, int]] = []  # per boundary: TID -> its time on a CPU so far
        self.switches: list[list[int]] = []  # per boundary: the calling thread's [voluntary, involuntary]

    def start(self) -> None:
        if not self._installed:
            gc.callbacks.append(self._on_collection)
            _INSTALLED.append(self._on_collection)
            self._installed = True

    def stop(self) -> None:
        if self._installed:
            if self._on_collection in gc.callbacks:  # a forked child has dropped it already
                gc.callbacks.remove(self._on_collection)
            if self._on_collection in _INSTALLED:
                _INSTALLED.remove(self._on_collection)
            self._installed = False

    def ended(self) -> None:
        now, whole = time.thread_time_ns(), time.process_time_ns()
        self.thread_cpu_ns.append([now, now])
        self.process_cpu_ns.append([whole, whole])
        if self.by_thread:
            self._read_threads()

    def _read_threads(self) -> None:
        cpu: dict[str, int] = {}
        for tid in os.listdir(TASKS):
            try:
                with open(f"{TASKS}/{tid}/schedstat") as f:
                    cpu[tid] = int(f.read().split()[0])
                if tid not in self.thread_names:
                    with open(f"{TASKS}/{tid}/comm") as f:
                        self.thread_names[tid] = f.read().strip()
            except (OSError, ValueError, IndexError):  # a thread that ended meanwhile
                continue
        self.threads_cpu_ns.append(cpu)
        counts = [0, 0]
        with open(f"{TASKS}/{threading.get_native_id()}/status") as f:
            for line in f:
                if line.startswith("voluntary_ctxt_switches"):
                    counts[0] = int(line.split()[1])
                elif line.startswith("nonvoluntary_ctxt_switches"):
                    counts[1] = int(line.split()[1])
        self.switches.append(counts)

    def resumed(self) -> None:
        if self.thread_cpu_ns:
            self.thread_cpu_ns[-1][1] = time.thread_time_ns()
            self.process_cpu_ns[-1][1] = time.process_time_ns()

    def columns(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "thread_cpu_ns": self.thread_cpu_ns,
            "process_cpu_ns": self.process_cpu_ns,
            "collections": self.collections,
            "collections_dropped": self.collections_dropped,
        }
        if self.by_thread:
            data["threads"] = {
                "names": self.thread_names,
                "cpu_ns": self.threads_cpu_ns,
                "switches": self.switches,
                # the script's thread: its TID is not always the lowest (TIDs wrap around like process ids)
                "main": str(threading.main_thread().native_id),
            }
        return data

    def _on_collection(self, phase: str, info: dict[str, Any]) -> None:
        now = time.perf_counter_ns()
        if phase == "start":
            self._open = (now, int(info.get("generation", -1)))
        elif self._open is not None:
            began, generation = self._open
            self._open = None
            if len(self.collections) < MAX_COLLECTIONS:
                self.collections.append([began, now, generation])
            else:
                self.collections_dropped += 1
