"""Stream the events of a Kineto / Chrome trace (`.json` or `.json.gz`) without loading it whole.

`read_trace(path)` returns a `TraceHeader` (top-level keys other than traceEvents: base time, device
properties) and an iterator over event dicts. Events come from ijson's C parser; the small top-level
keys are recovered from the first and last bytes the parser read, so one pass over the file suffices.

Errors a user can cause (missing file, truncated gzip, not JSON, no `traceEvents`) raise
`TraceFormatError` with one line saying what is wrong.
"""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, cast

import ijson
import orjson

from tenprof.errors import TraceFormatError

_EDGE_BYTES = 1 << 20


class _EdgeRecorder:
    """A read-only file wrapper that remembers the first and last `_EDGE_BYTES` bytes read."""

    def __init__(self, raw: IO[bytes]) -> None:
        self._raw = raw
        self.head = bytearray()
        self.tail = bytearray()
        self.bytes_read = 0

    def read(self, size: int = -1) -> bytes:
        chunk = self._raw.read(size)
        self.bytes_read += len(chunk)
        if len(self.head) < _EDGE_BYTES:
            self.head += chunk[: _EDGE_BYTES - len(self.head)]
        self.tail += chunk
        if len(self.tail) > 2 * _EDGE_BYTES:
            del self.tail[: len(self.tail) - _EDGE_BYTES]
        return chunk


@dataclass
class TraceHeader:
    base_time_ns: int = 0
    device_properties: list[dict[str, Any]] = field(default_factory=list)
    other: dict[str, Any] = field(default_factory=dict)


def _parse_edges(head: bytes, tail: bytes) -> dict[str, Any]:
    """Top-level keys written before and after the traceEvents array (Kineto writes both)."""
    found: dict[str, Any] = {}
    marker = head.find(b'"traceEvents"')
    if marker > 0:
        prefix = head[:marker].rstrip().rstrip(b",")
        try:
            found.update(orjson.loads(prefix + b"}"))
        except orjson.JSONDecodeError:
            pass
    end = tail.rstrip()
    # Keys after the array look like `], "traceName": "run[3].json", "deviceProperties": [...]}`; a `]`
    # may also appear inside them, so try each `]` from the right and keep the longest tail that parses.
    if end.endswith(b"}"):
        best: dict[str, Any] = {}
        close = len(end)
        while True:
            close = end.rfind(b"]", 0, close)
            if close < 0:
                break
            rest = end[close + 1 :].lstrip()
            if not rest.startswith(b","):
                continue
            try:
                parsed = orjson.loads(b"{" + rest[1:])
            except orjson.JSONDecodeError:
                continue
            if isinstance(parsed, dict) and len(parsed) >= len(best):
                best = parsed
        found.update(best)
    return found


def _open(path: Path) -> IO[bytes]:
    if not path.exists():
        raise TraceFormatError(f"{path}: no such file")
    with path.open("rb") as probe:
        magic = probe.read(2)
    if magic == b"\x1f\x8b":
        return cast(IO[bytes], gzip.open(path, "rb"))
    return path.open("rb")


class TraceStream:
    """Iterate `events`, then read `header` (complete only after the events were consumed)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.header = TraceHeader()
        self.bytes_read = 0

    def events(self) -> Iterator[dict[str, Any]]:
        handle = _open(self.path)
        recorder = _EdgeRecorder(handle)
        count = 0
        try:
            for event in ijson.items(recorder, "traceEvents.item", use_float=True):
                if isinstance(event, dict):
                    count += 1
                    yield event
        except (ijson.JSONError, ijson.IncompleteJSONError) as exc:
            raise TraceFormatError(
                f"{self.path}: not a complete JSON trace ({str(exc).splitlines()[0][:80]}); "
                "was the run cut off while writing it?"
            ) from exc
        except (EOFError, OSError, zlib.error) as exc:
            raise TraceFormatError(f"{self.path}: truncated or corrupt file ({exc.__class__.__name__})") from exc
        finally:
            handle.close()
        self.bytes_read = recorder.bytes_read
        if count == 0 and b'"traceEvents"' not in recorder.head and b'"traceEvents"' not in recorder.tail:
            raise TraceFormatError(
                f"{self.path}: no `traceEvents` array; tenprof imports torch.profiler / Kineto chrome traces"
            )
        edges = _parse_edges(bytes(recorder.head), bytes(recorder.tail))
        base = edges.pop("baseTimeNanoseconds", 0)
        self.header = TraceHeader(
            base_time_ns=int(base) if isinstance(base, (int, float)) else 0,
            device_properties=list(edges.pop("deviceProperties", []) or []),
            other=edges,
        )
