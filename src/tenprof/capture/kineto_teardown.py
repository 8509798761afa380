"""Kineto's CUPTI teardown, seen through to its end before the capture lets the process go.

With TEARDOWN_CUPTI=1 (which tenprof sets for its runs, `tenprof.capture.timeline`), a torch.profiler
session's stop does not detach CUPTI itself: it starts a detached native thread that subscribes to the
CUDA runtime's callbacks and waits on a condition variable until the exit of the next runtime call
finalizes CUPTI and wakes it. Where the process makes no CUDA call after the stop, that thread waits for
ever, and the process's exit then blocks in the condition variable's destructor (glibc's
pthread_cond_destroy waits for its waiters): on an H200 (torch 2.11, 2026-12-02) a pytest process whose
last test was an in-process `tenprof.profile()` passed its tests and never exited, its main thread in
`exit` -> `pthread_cond_destroy`, one thread in `CuptiActivityApi::teardownContext`'s lambda.

So a stop notes the native threads the session's stop started (`threads_started_by`), and the capture's
end makes harmless runtime calls (the caller's `poke`, a device synchronize) until those threads are gone
(`see_through`); each session's start notes those still waiting (`still_running`). The thread subscribes
before it waits, and a call made before it subscribed is not seen, hence calls until it ends rather than
one. Native threads are read from /proc/self/task; where that cannot be read (not Linux) nothing is
waited for.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

TASKS_DIR = "/proc/self/task"
# The teardown ends within a runtime call of its subscription; a thread still there after this long is
# not waiting for a call (a thread of something else the stop started), and the capture stops waiting.
DEADLINE_S = 1.0
POKE_EVERY_S = 0.002


def native_threads() -> set[int]:
    """The process's native thread ids (empty where /proc cannot be read)."""
    try:
        return {int(name) for name in os.listdir(TASKS_DIR)}
    except (OSError, ValueError):
        return set()


def threads_started_by(stop: Callable[[], object]) -> set[int]:
    """The native threads that started during stop() and still run after it."""
    before = native_threads()
    stop()
    return native_threads() - before


def still_running(threads: set[int]) -> set[int]:
    """Those of `threads` that still run: a teardown still there at the next session's start had no runtime
    call finalize CUPTI in the steps between, which then ran with CUPTI attached."""
    return set(threads) & native_threads()


def see_through(threads: set[int], poke: Callable[[], None], deadline_s: float = DEADLINE_S) -> set[int]:
    """poke() until none of `threads` runs any more, or `deadline_s` has passed; the threads left."""
    left = still_running(threads)
    give_up = time.monotonic() + deadline_s
    while left and time.monotonic() < give_up:
        poke()
        time.sleep(POKE_EVERY_S)
        left &= native_threads()
    return left
