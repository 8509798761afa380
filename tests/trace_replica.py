"""A large Kineto trace made from a small real one: its events repeated, each copy shifted past the one
before in time and in every id that links events (External id, correlation, flow ids), so the copies
neither overlap nor join one another. The importer's totals over N copies are N times the original's.
Used by tests/unit/test_trace_replica.py (exact totals) and benchmarks/import_speed.py (sizes of
hundreds of MB), written as Kineto writes: its header keys, then one event per line."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import IO, Any

import orjson

# args holding ids that link events across copies: shifted per copy by the largest value + 1
_LINK_ARGS = ("External id", "correlation", "Record function id")


def _read(source: Path) -> dict[str, Any]:
    data = source.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return orjson.loads(data)  # type: ignore[no-any-return]


def replicate(source: Path, target: Path, copies: int = 0, target_bytes: int = 0) -> int:
    """Write `copies` copies of `source`'s events to `target` (or as many as reach `target_bytes`);
    returns how many were written."""
    trace = _read(source)
    events: list[dict[str, Any]] = trace.pop("traceEvents")
    times = [float(e["ts"]) + float(e.get("dur", 0.0)) for e in events if isinstance(e.get("ts"), (int, float))]
    starts = [float(e["ts"]) for e in events if isinstance(e.get("ts"), (int, float))]
    span = (max(times) - min(starts)) * 1.01 + 1.0 if times else 1.0  # microseconds, a gap between copies
    largest = {
        key: max((int(e["args"][key]) for e in events if isinstance((e.get("args") or {}).get(key), int)), default=0)
        for key in _LINK_ARGS
    }
    flow = max((int(e["id"]) for e in events if isinstance(e.get("id"), int)), default=0)
    encoded = [orjson.dumps(e) for e in events]
    one_copy = sum(len(e) + 2 for e in encoded)
    count = copies or max(1, -(-target_bytes // one_copy))
    with target.open("wb") as out:
        head = orjson.dumps(trace)[:-1]  # the header keys, without the closing brace
        out.write(head + (b"," if len(trace) else b"") + b'"traceEvents":[\n')
        for k in range(count):
            for i, event in enumerate(events):
                if k:
                    _write_shifted(out, event, k, span, largest, flow)
                else:
                    out.write(encoded[i])
                out.write(b",\n" if (k < count - 1 or i < len(events) - 1) else b"\n")
        out.write(b"]}\n")
    return count


def _write_shifted(
    out: IO[bytes], event: dict[str, Any], k: int, span: float, largest: dict[str, int], flow: int
) -> None:
    shifted = dict(event)
    if isinstance(event.get("ts"), (int, float)):
        shifted["ts"] = float(event["ts"]) + k * span
    if isinstance(event.get("id"), int):
        shifted["id"] = int(event["id"]) + k * (flow + 1)
    args = event.get("args")
    if isinstance(args, dict) and any(key in args for key in _LINK_ARGS):
        args = dict(args)
        for key in _LINK_ARGS:
            if isinstance(args.get(key), int) and args[key] >= 0:
                args[key] = args[key] + k * (largest[key] + 1)
        shifted["args"] = args
    out.write(orjson.dumps(shifted))
