"""Sort a large trace's events into columns in several processes at once.

`collect_in_processes(runs, workers)` sends each run of whole events (the JSON array bytes that
importers.event_chunks cuts) to a pool of worker processes, which decode it (msgspec) and sort it
into a `Collector` of its own; the parent appends the workers' columns in file order. Decoding and
sorting are the import's per-event Python work and hold the GIL, so processes, not threads, are
what use a second core. At most two runs per worker are in flight: memory stays bounded.

The parent cuts runs without decoding them, so a cut it could not verify (a `},{` at a depth other
than the array's, which Kineto never writes) is found by the worker that cannot decode it; then
`collect_in_processes` returns None and the caller reads the trace again in one process, where each
cut is checked as it is made. Workers are forked, and only where that is safe (`can_fork_workers`).

Ctrl-C: workers ignore SIGINT (importers.interrupts); the parent gets KeyboardInterrupt where it waits
for a run, and leaving the pool terminates them, so only the parent reports the interrupt.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from multiprocessing.pool import AsyncResult

import msgspec

from tenprof.importers.event_chunks import Span, as_array
from tenprof.importers.interrupts import ignore_sigint_in_worker, sigint_held
from tenprof.importers.kineto_events import decode_events
from tenprof.importers.timeline_columns import Collector


def _collect_run(run: bytes | tuple[str, Span]) -> tuple[Collector, frozenset[str]] | None:
    """A worker's job: the columns of one run (its bytes as a JSON array, or where it lies in an
    uncompressed file, read here), and the categories it held; None when it is not JSON."""
    if isinstance(run, tuple):
        path, (offset, length) = run
        with open(path, "rb") as file:  # page-cached: cheaper than passing the bytes through a pipe
            file.seek(offset)
            run = as_array(file.read(length))
    try:
        events = decode_events(run)
    except msgspec.DecodeError:
        return None
    collector = Collector()
    collector.add_batch(events)
    return collector, frozenset({e.cat for e in events})


def can_fork_workers() -> bool:
    """Whether worker processes can be forked safely from this one: a single thread (a fork copies
    other threads' locks held, never released) and no torch loaded (an in-process profile runs in the
    user's process, whose torch threads hold such locks). Spawning instead would import the user's own
    script again in each worker, so where forking is unsafe the trace is read in this process."""
    return hasattr(os, "fork") and threading.active_count() == 1 and "torch" not in sys.modules


def collect_in_processes(
    runs: Iterator[bytes | tuple[str, Span]], workers: int, seen: Callable[[frozenset[str]], None] | None = None
) -> tuple[Collector, set[str]] | None:
    """Every run's columns appended in order, and every category seen; None when a run did not decode.
    `seen` is called with each run's categories as it is merged, in order (it may raise to stop)."""
    collector = Collector()
    categories: set[str] = set()
    with ExitStack() as stack:
        # the workers start with SIGINT blocked, until they ignore it; a Ctrl-C held meanwhile is raised
        # as the block ends, with the pool already on the stack that terminates it
        with sigint_held():
            pool = stack.enter_context(
                multiprocessing.get_context("fork").Pool(workers, initializer=ignore_sigint_in_worker)
            )
        pending: deque[AsyncResult[tuple[Collector, frozenset[str]] | None]] = deque()
        for run in runs:
            pending.append(pool.apply_async(_collect_run, (run,)))
            while len(pending) > 2 * workers:
                if not _merge(collector, categories, pending.popleft().get(), seen):
                    return None
        while pending:
            if not _merge(collector, categories, pending.popleft().get(), seen):
                return None
    return collector, categories


def _merge(
    collector: Collector,
    categories: set[str],
    result: tuple[Collector, frozenset[str]] | None,
    seen: Callable[[frozenset[str]], None] | None,
) -> bool:
    if result is None:
        return False
    part, found = result
    collector.extend(part)
    categories |= found
    if seen is not None:
        seen(found)
    return True
