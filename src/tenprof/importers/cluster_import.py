"""The ranks of a folder imported on a Dask cluster: `tenprof import FOLDER -o OUT --scheduler ADDRESS`
(`pip install 'tenprof[cluster]'`).

Each rank's import is one task, sent to the cluster's workers, which read the trace and write the rank's
profile under OUT themselves: OUT and the traces must be paths every worker sees (shared storage), as
they are for a job's own ranks. A task imports its trace in the worker's process (no processes of its
own: Dask's worker processes are daemons, which may not have children), so a worker holds one trace
at a time. `ADDRESS` is a scheduler's (`tcp://host:8786`), or `local`: a cluster of this machine's cores
(one single-threaded worker process per core), started for the import and stopped after it.

A rank that fails fails alone: its task returns the reason in one line (a trace that is not one, a
worker's exception), and the others go on. The merged report then reads the ranks' profiles as ever,
one at a time (analyses.compare.ranks): no process holds every rank's events.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tenprof.errors import TenprofError, UsageError

LOCAL = "local"
CONNECT_TIMEOUT_S = 20


def import_rank(trace: str, target: str, force: bool, rank: int) -> str:
    """One rank's import, in a worker: '' or why it failed, in one line."""
    from tenprof.importers.timeline_import import import_trace

    try:
        import_trace(Path(trace), Path(target), force, 1, rank)
    except TenprofError as exc:
        return str(exc)
    except Exception as exc:  # a worker's failure is this rank's alone
        return f"{trace}: {exc.__class__.__name__}: {exc}"
    return ""


def import_on_cluster(
    jobs: list[tuple[Path, Path, bool, int]], scheduler: str, done: Callable[[int, str], None]
) -> list[str]:
    """Each (trace, target, force, rank) imported as a task of the cluster at `scheduler`; per job, '' or
    its error. `done(index, error)` is called as each ends, in the order they end."""
    distributed = _distributed()
    errors = [""] * len(jobs)
    with _client(distributed, scheduler) as client:
        futures = [
            client.submit(import_rank, str(trace), str(target), force, rank, pure=False, key=f"tenprof-import-{i}")
            for i, (trace, target, force, rank) in enumerate(jobs)
        ]
        index = {future.key: i for i, future in enumerate(futures)}
        try:
            for future in distributed.as_completed(futures):
                i = index[future.key]
                try:
                    errors[i] = str(future.result())
                except Exception as exc:  # the task itself was lost (a worker died under it)
                    errors[i] = f"{jobs[i][0]}: the worker failed: {exc.__class__.__name__}: {exc}"
                done(i, errors[i])
        except BaseException:
            client.cancel(futures)
            raise
    return errors


def _distributed() -> Any:
    try:
        import distributed
    except ImportError:
        raise UsageError("--scheduler needs Dask's distributed: pip install 'tenprof[cluster]'") from None
    return distributed


@contextmanager
def _client(distributed: Any, scheduler: str) -> Iterator[Any]:
    """A client of the scheduler at `scheduler`, or of a local cluster of this machine's cores."""
    if scheduler == LOCAL:
        cores = os.cpu_count() or 1
        with (
            distributed.LocalCluster(
                n_workers=cores, threads_per_worker=1, processes=True, dashboard_address=None
            ) as cluster,
            distributed.Client(cluster) as client,
        ):
            yield client
        return
    try:
        client = distributed.Client(scheduler, timeout=f"{CONNECT_TIMEOUT_S}s")
    except (OSError, TimeoutError) as exc:
        raise UsageError(f"cannot reach the Dask scheduler at {scheduler}: {exc}") from None
    with client:
        yield client
