"""Work spread over a Dask cluster (the `cluster` extra: Dask's `distributed`), for the imports and the
merged report of many ranks.

`dask_client(address)` is a client of the scheduler at `address` (`tcp://host:8786`), or of a cluster of
this machine's cores (`local`: one single-threaded worker process per core, started here and stopped
after). `as_done(client, fn, items)` runs `fn(item)` as one task per item and yields (index, result or
the exception the task ended with) in the order they end, cancelling the rest if the caller stops (Ctrl-C).
What the tasks read and write must be paths every worker sees.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from tenprof.errors import UsageError

LOCAL = "local"
CONNECT_TIMEOUT_S = 20


def distributed_module() -> Any:
    try:
        import distributed
    except ImportError:
        raise UsageError("--scheduler needs Dask's distributed: pip install 'tenprof[cluster]'") from None
    return distributed


@contextmanager
def dask_client(scheduler: str) -> Iterator[Any]:
    """A client of the scheduler at `scheduler`, or of a local cluster of this machine's cores."""
    distributed = distributed_module()
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


def as_done(
    client: Any, fn: Callable[..., Any], items: Sequence[tuple[Any, ...]], name: str
) -> Iterator[tuple[int, Any]]:
    """`fn(*item)` for each item as a task; (index, result, or the exception that ended the task) as each
    ends."""
    distributed = distributed_module()
    futures = [client.submit(fn, *item, pure=False, key=f"tenprof-{name}-{i}") for i, item in enumerate(items)]
    index = {future.key: i for i, future in enumerate(futures)}
    try:
        for future in distributed.as_completed(futures):
            try:
                yield index[future.key], future.result()
            except Exception as exc:  # the task raised, or was lost with its worker
                yield index[future.key], exc
    except BaseException:
        client.cancel(futures)
        raise
