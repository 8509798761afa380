"""Ctrl-C during an import: the parent stops, cleans up and says so in one line; worker processes never
print a traceback.

A terminal's Ctrl-C sends SIGINT to every process of the foreground group: the importer and the worker
processes it forked alike. Workers that read runs of a trace (importers.parallel_collect) ignore it and
are stopped by their parent, which gets KeyboardInterrupt where it waits for them. Between the fork and
the worker's first instruction a SIGINT would still reach Python's default handler (and print a
traceback from the worker), so it is held blocked around the forks (`sigint_held`) and the worker lets
go of it only once it ignores it (`ignore_sigint_in_worker`).

`sigint_ignored` keeps Ctrl-C out of the few steps that must not stop half-way (making the output
directory, putting the finished profile in place, removing a failed one): a Ctrl-C pressed then is
dropped, and the user presses it again.

Signal handlers belong to the main thread: elsewhere (an in-process profile's thread) these do nothing.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextmanager
def sigint_held() -> Iterator[None]:
    """SIGINT blocked (kept pending, not lost) in this thread while the block runs: processes forked in it
    start with it blocked. A Ctrl-C pressed meanwhile is raised as KeyboardInterrupt once the block ends."""
    if not _in_main_thread() or not hasattr(signal, "pthread_sigmask"):
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def ignore_sigint_in_worker() -> None:
    """A worker process's first step (a pool's initializer): ignore SIGINT, then unblock it (it was
    blocked by `sigint_held` in the parent that forked it)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


@contextmanager
def sigint_ignored() -> Iterator[None]:
    """Ctrl-C ignored while the block runs (see the module); the handler before it is put back after."""
    if not _in_main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def raise_once(signum: int, frame: object) -> None:
    """A SIGINT handler that raises KeyboardInterrupt for the first Ctrl-C and ignores the ones after it
    (the terminal's and the parent's may both arrive): the clean-up it starts is not cut short."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    raise KeyboardInterrupt
