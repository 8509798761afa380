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

from collections.abc import Callable
from pathlib import Path

from tenprof.core.cluster import as_done, dask_client
from tenprof.errors import TenprofError


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
    errors = [""] * len(jobs)
    items = [(str(trace), str(target), force, rank) for trace, target, force, rank in jobs]
    with dask_client(scheduler) as client:
        for i, result in as_done(client, import_rank, items, "import"):
            if isinstance(result, BaseException):  # the task itself was lost (a worker died under it)
                result = f"{jobs[i][0]}: the worker failed: {result.__class__.__name__}: {result}"
            errors[i] = str(result)
            done(i, errors[i])
    return errors
