"""Sort a large trace's events into columns in several processes at once.

`collect_in_processes(runs, workers)` sends each run of whole events (the JSON array bytes that
importers.formats.event_chunks cuts) to a pool of worker processes, which decode it (msgspec) and sort it
into a `Collector` of its own; the parent appends the workers' columns in file order. Decoding and
sorting are the import's per-event Python work and hold the GIL, so processes, not threads, are
what use a second core. At most two runs per worker are in flight: memory stays bounded.

The parent cuts runs without decoding them, so a cut it could not verify (a `},{` at a depth other
than the array's, which Kineto never writes) is found by the worker that cannot decode it; then
`collect_in_processes` returns None and the caller reads the trace again in one process, where each
cut is checked as it is made. Workers are forked, and only where that is safe (`can_fork_workers`).

Ctrl-C: workers ignore SIGINT (importers.interrupts); the parent gets KeyboardInterrupt where it waits
for a run, lets the runs in flight come back and ends the pool, so only the parent reports the interrupt.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from multiprocessing.pool import AsyncResult, Pool
from typing import Any

import msgspec

from tenprof.importers.formats.event_chunks import Span, as_array
from tenprof.importers.formats.kineto_events import decode_events
from tenprof.importers.interrupts import ignore_sigint_in_worker, sigint_held, sigint_ignored
from tenprof.importers.timeline_columns import Collector

CLOSE_WAIT_S = 60.0  # how long the runs already sent may take to come back once the read stops


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
    pool: Pool | None = None
    pending: deque[AsyncResult[tuple[Collector, frozenset[str]] | None]] = deque()
    try:
        # a Ctrl-C pressed while the pool starts is raised as the block ends, inside this try: the pool is
        # then still ended here (not at exit, where a further Ctrl-C would cut its finalizer into a traceback)
        with sigint_held():  # the workers start with SIGINT blocked, until they ignore it
            pool = multiprocessing.get_context("fork").Pool(workers, initializer=ignore_sigint_in_worker)
        decoded = True
        for run in runs:
            pending.append(pool.apply_async(_collect_run, (run,)))
            while decoded and len(pending) > 2 * workers:
                decoded = _merge(collector, categories, pending.popleft().get(), seen)
            if not decoded:
                break
        while decoded and pending:
            decoded = _merge(collector, categories, pending.popleft().get(), seen)
        return (collector, categories) if decoded else None
    finally:
        if pool is not None:
            _close(pool, pending)


def _close(pool: Pool, pending: deque[AsyncResult[Any]]) -> None:
    """End the pool as at a normal end, whatever stopped the read (a run that did not decode, a Ctrl-C,
    an error): wait for the runs already sent (at most two a worker, each a fraction of a second), then
    close and join. Pool.terminate() with runs still queued can hang for good: its task thread may be
    blocked writing a run to workers it has just killed (seen in a test of cut runs). Only if a run
    never comes back (a worker killed from outside) is the pool terminated before it is joined."""
    with sigint_ignored():
        deadline = time.monotonic() + CLOSE_WAIT_S
        for result in pending:
            result.wait(max(0.0, deadline - time.monotonic()))
        if all(result.ready() for result in pending):
            pool.close()
            pool.join()
        # Also after a join: the pool's finalizer runs here, with Ctrl-C ignored, not later when the pool is
        # collected, where a further Ctrl-C would cut it into a traceback ("Exception ignored in: <Finalize>")
        pool.terminate()


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
