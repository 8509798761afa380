"""A thread of tenprof's own on which the native capture starts and stops its GPU-activity sessions.

A torch.profiler session stands in the debug info of the thread that starts it (c10's PROFILER_STATE),
where the allocators send their memory reports and from where autograd's threads inherit it. Started on
the script's thread, the native capture's session (GPU activity alone, no memory) would stand above the
native recorder's memory reporter for every recorded window and drop the reports, and its stop would pop
whatever stood on top. Started here, it leaves the script's thread to the reporter; CUPTI records the GPU
activity of every thread whichever thread started it. Calls wait for their result, so the order of
starts, stops and the script's steps is the caller's.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")
# "tenprof-" names a thread the host sampler leaves out (it is not the script's)
THREAD_NAME = "tenprof-gpu-session"


class SessionThread:
    def __init__(self) -> None:
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=THREAD_NAME)

    def call(self, func: Callable[[], T]) -> T:
        """func() run on the thread; its result, or its exception raised here."""
        return self._pool.submit(func).result()

    def close(self) -> None:
        self._pool.shutdown(wait=True)
