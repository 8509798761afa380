"""Run as a script by tests/unit/test_event_chunks.py: reads traces with worker processes and prints what
it got as JSON. A test process (pytest-xdist's workers run threads) is no place to fork from, and tenprof
would rightly refuse to (`can_fork_workers`); this fresh process has one thread.

    python tests/parallel_read.py '[["trace.json", 4096], ...]'  ->  [{"columns": ..., "gave_up": [...],
    "other": {...}, "device_properties": [...], "base_time_ns": N}, ...]
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import orjson

from tenprof.importers import parallel_collect
from tenprof.importers.formats import kineto_reader
from tenprof.importers.formats.kineto_reader import TraceStream
from tenprof.importers.timeline_columns import Collector


def columns(collector: Collector) -> dict[str, Any]:
    found: dict[str, Any] = {"events": collector.events, "triton": collector.triton_launches}
    for kind in ("ops", "annotations", "python", "kernels", "transfers", "api", "memory"):
        for name, values in getattr(collector, kind).data.items():
            found[f"{kind}.{name}"] = list(values)
    return found


def main() -> None:
    assert parallel_collect.can_fork_workers(), "a fresh process with one thread and no torch can fork"
    gave_up: list[bool] = []
    real = kineto_reader.collect_in_processes

    def watched(runs: Any, workers: int, *more: Any) -> Any:
        done = real(runs, workers, *more)
        gave_up.append(done is None)
        return done

    kineto_reader.collect_in_processes = watched
    results = []
    for path, block in orjson.loads(sys.argv[1]):
        gave_up.clear()
        stream = TraceStream(Path(path), block_bytes=block)
        found = columns(stream.collect(2))
        results.append(
            {
                "columns": found,
                "gave_up": list(gave_up),
                "other": stream.header.other,
                "device_properties": stream.header.device_properties,
                "base_time_ns": stream.header.base_time_ns,
            }
        )
    sys.stdout.buffer.write(orjson.dumps(results))


if __name__ == "__main__":
    main()
