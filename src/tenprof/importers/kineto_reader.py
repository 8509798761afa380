"""Stream the events of a Kineto / Chrome trace (`.json` or `.json.gz`) without loading it whole.

`read_trace(path)` returns a `TraceHeader` (top-level keys other than traceEvents: base time, device
properties) and an iterator over event dicts. Events come from ijson's C parser; the small top-level
keys are recovered from the first and last bytes the parser read, so one pass over the file suffices.

Errors a user can cause (missing file, a folder, truncated gzip, not JSON, no `traceEvents`, JSON that
is not a torch.profiler / Kineto trace such as tenprof's own Perfetto export) raise `TraceFormatError`
with one line saying what is wrong. A file that is not a Kineto trace is refused once the stream has
shown it (at the end, unless it is tenprof's export), so the events already yielded must be discarded.
"""

from __future__ import annotations

import gzip
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, cast

import ijson
import orjson

from tenprof.errors import TraceFormatError

_EDGE_BYTES = 1 << 20
_LINE_OF_A_BRACKET = re.compile(rb"\n[ \t]*\]")


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
    # may also appear inside them, so the longest tail that parses is wanted: try each `]` from the left
    # and stop at the first that parses. (A `]` inside the events fails to parse within its own event, so
    # each wrong try is short; trying from the right parsed the whole tail again and again.)
    if end.endswith(b"}"):
        # Kineto ends the array with a `]` alone on its line, less indented than the events' own lines:
        # tried first, it spares the search below, which copies the rest of the tail for every `]` it tries
        alone = [m.end() for m in _LINE_OF_A_BRACKET.finditer(end)]
        if alone:
            rest = end[alone[-1] :].lstrip()
            if rest.startswith(b","):
                try:
                    parsed = orjson.loads(b"{" + rest[1:])
                except orjson.JSONDecodeError:
                    parsed = None
                if isinstance(parsed, dict):
                    found.update(parsed)
                    return found
        close = -1
        while True:
            close = end.find(b"]", close + 1)
            if close < 0:
                break
            rest = end[close + 1 :].lstrip()
            if not rest.startswith(b","):
                continue
            try:
                parsed = orjson.loads(b"{" + rest[1:])
            except orjson.JSONDecodeError:
                continue
            if isinstance(parsed, dict):
                found.update(parsed)
                break
    return found


def trace_rank(path: Path) -> int | None:
    """The rank a distributed run's trace says it is (Kineto's `distributedInfo`, written before the
    events), read from the file's first bytes; None when it says none or cannot be read."""
    try:
        with _open(path) as handle:
            head = handle.read(_EDGE_BYTES)
    except (TraceFormatError, OSError, EOFError, zlib.error):
        return None
    info = _parse_edges(head, b"").get("distributedInfo")
    rank = info.get("rank") if isinstance(info, dict) else None
    return rank if isinstance(rank, int) and rank >= 0 else None


def _open(path: Path) -> IO[bytes]:
    if not path.exists():
        raise TraceFormatError(f"{path}: no such file")
    if path.is_dir():
        raise TraceFormatError(f"{path} is a directory; give the trace file itself{_trace_in(path)}")
    with path.open("rb") as probe:
        magic = probe.read(2)
    if magic == b"\x1f\x8b":
        return cast(IO[bytes], gzip.open(path, "rb"))
    return path.open("rb")


def _trace_in(folder: Path) -> str:
    """' (e.g. NAME)' naming a trace file in `folder` (tensorboard_trace_handler writes a folder of them)."""
    found = sorted(folder.glob("*.json.gz")) + sorted(folder.glob("*.json"))
    return f" (e.g. {found[0]})" if found else " (.json or .json.gz)"


class _KinetoCheck:
    """Tells a torch.profiler / Kineto trace from other Chrome-format JSON while the events stream by.

    Kineto writes `schemaVersion` (and baseTimeNanoseconds, deviceProperties) before its events, and its
    events carry categories only it uses (cpu_op on any trace, CPU-only ones included). tenprof's own
    Perfetto export (renderers/perfetto.py) has neither: its categories are op, scope, step, cuda_api,
    transfer, launch and kernel; so `kernel`, which both write, proves nothing.
    """

    HEADER_KEYS = ("schemaVersion", "baseTimeNanoseconds", "deviceProperties")
    CATEGORIES = frozenset(
        {
            "cpu_op",
            "user_annotation",
            "gpu_user_annotation",
            "python_function",
            "cuda_runtime",
            "cuda_driver",
            "gpu_memcpy",
            "gpu_memset",
            "ac2g",
            "cpu_instant_event",
            "Trace",
        }
    )
    EXPORT_CATEGORIES = frozenset({"op", "scope", "step", "cuda_api", "transfer", "launch"})

    def __init__(self, path: Path) -> None:
        self.path = path
        self.is_kineto = False
        self._header_checked = False

    def see(self, event: dict[str, Any], recorder: _EdgeRecorder) -> None:
        """Look at one event, and with the first one at the keys before the events (read by then);
        TraceFormatError for tenprof's own export, which is recognised as soon as it shows."""
        if not self._header_checked:
            self._header_checked = True
            if self.has_header_keys(_parse_edges(bytes(recorder.head), b"")):
                self.is_kineto = True
                return
        cat = event.get("cat")
        if cat in self.CATEGORIES:
            self.is_kineto = True
        elif cat in self.EXPORT_CATEGORIES:
            raise TraceFormatError(
                f"{self.path} is a Perfetto trace that tenprof exported, not a torch.profiler trace; open it in "
                "ui.perfetto.dev, or import the trace torch.profiler wrote (a profile keeps it in "
                "timeline/raw/kineto_trace.json.gz)"
            )

    def has_header_keys(self, keys: dict[str, Any]) -> bool:
        return any(key in keys for key in self.HEADER_KEYS)

    def refuse(self) -> TraceFormatError:
        return TraceFormatError(
            f"{self.path}: not a torch.profiler / Kineto trace (no cpu_op or cuda_runtime events, none of "
            f"Kineto's keys {', '.join(self.HEADER_KEYS)}); tenprof imports what torch.profiler's "
            "export_chrome_trace or tensorboard_trace_handler writes"
        )


class TraceStream:
    """Iterate `events`, then read `header` (complete only after the events were consumed)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.header = TraceHeader()
        self.bytes_read = 0

    def events(self) -> Iterator[dict[str, Any]]:
        handle = _open(self.path)
        recorder = _EdgeRecorder(handle)
        check = _KinetoCheck(self.path)
        count = 0
        try:
            for event in ijson.items(recorder, "traceEvents.item", use_float=True):
                if isinstance(event, dict):
                    count += 1
                    if not check.is_kineto:
                        check.see(event, recorder)
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
        if not check.is_kineto and not check.has_header_keys(edges):  # some Kineto keys follow the events
            raise check.refuse()
        base = edges.pop("baseTimeNanoseconds", 0)
        self.header = TraceHeader(
            base_time_ns=int(base) if isinstance(base, (int, float)) else 0,
            device_properties=list(edges.pop("deviceProperties", []) or []),
            other=edges,
        )
