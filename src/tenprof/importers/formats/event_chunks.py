"""Cut the `traceEvents` array of a trace into runs of whole events as the file is read, and decode each.

`EventChunks(handle, decode)` iterates what `decode` makes of each run (a JSON array `[ev, ev, ...]` of
about one block, 4 MiB, of the file), in file order. Afterwards `head` holds the bytes before the
array (the keys Kineto writes first; the whole file when it has no events array, `found_array` False)
and `after` the bytes after it (the keys it writes last).

A thread reads, and decompresses, the next blocks while the caller decodes (zlib and zstd let go of the
GIL), at most two blocks ahead: memory stays at a few blocks whatever the size of the file.

Where a run may end: JSON strings cannot hold a raw newline, so a `},` followed by a newline or by `{`
(`},{` inside a string aside) is an event's end when it lies at the array's depth. The last such place
in the buffer is tried first; a wrong guess cannot decode (it leaves an event open or a string
unterminated), and a run that does not decode is cut again by the exact scan (`_scan`), which follows
strings, escapes and depth over the whole buffer with NumPy. The end of the array is always found by
the exact scan. `decode` must raise `msgspec.DecodeError` for bytes that are not a JSON array.

What is not a trace is refused within the first megabytes, never read whole: the keys before the
events take kilobytes (`HEAD_LIMIT`), and so do the keys after them; a run in which no event ends
within `MAX_EVENT_BYTES` raises `EventTooLong` (a torch.profiler event takes kilobytes, and each exact
scan reads the whole buffer: an event of 200 MB would cost minutes). `NotJson.truncated` tells a file
that breaks off (a run cut off while writing it) from one that is malformed.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator
from typing import IO, Any, Generic, NamedTuple, TypeVar

import msgspec
import numpy as np

from tenprof.errors import TraceFormatError

BLOCK_BYTES = 1 << 22
HEAD_LIMIT = 4 << 20  # a trace's keys before (or after) its events take kilobytes: past this, it is no trace
MAX_EVENT_BYTES = 16 << 20  # the largest event seen in real traces is 7 KB; past this, it is no trace
_AHEAD = 2  # blocks read before the decoder asks for them
_BLANK = b" \t\r\n"
_KEY = b'"traceEvents"'

_QUOTE, _BACKSLASH = ord('"'), ord("\\")
_SPECIAL = np.zeros(256, dtype=bool)
_SPECIAL[list(b'{}[]"\\')] = True
_DEPTH_STEP = np.zeros(256, dtype=np.int8)
_DEPTH_STEP[list(b"{[")] = 1
_DEPTH_STEP[list(b"}]")] = -1

T = TypeVar("T")


class NotJson(Exception):
    """The bytes before the events or the events themselves are not JSON; `truncated` when they break
    off at the end of the file (the JSON is fine as far as it goes) rather than being malformed."""

    def __init__(self, message: str, truncated: bool = False) -> None:
        super().__init__(message)
        self.truncated = truncated


class EventTooLong(Exception):
    """No event of the array ends within `MAX_EVENT_BYTES` of the one before: not a trace."""

    def __init__(self, offset: int) -> None:
        super().__init__(f"no event ends within {MAX_EVENT_BYTES >> 20} MB after byte {offset}")
        self.offset = offset


class _Prefetch:
    """Blocks of `handle` read in a thread, at most `_AHEAD` ahead; errors re-raised where read."""

    def __init__(self, handle: IO[bytes], block: int) -> None:
        self._queue: queue.Queue[bytes | BaseException] = queue.Queue(maxsize=_AHEAD)
        self._stop = threading.Event()
        self.bytes_read = 0
        self._thread = threading.Thread(target=self._read, args=(handle, block), daemon=True)
        self._thread.start()

    def _read(self, handle: IO[bytes], block: int) -> None:
        while not self._stop.is_set():
            try:
                data: bytes | BaseException = handle.read(block)
            except BaseException as exc:  # handed to the reader, who raises it where it reads
                data = exc
            while not self._stop.is_set():
                try:
                    self._queue.put(data, timeout=0.1)
                    break
                except queue.Full:
                    continue
            if not isinstance(data, bytes) or not data:
                return

    def __iter__(self) -> Iterator[bytes]:
        while True:
            data = self._queue.get()
            if isinstance(data, BaseException):
                raise data
            if not data:
                return
            self.bytes_read += len(data)
            yield data

    def close(self) -> None:
        self._stop.set()
        self._thread.join()


class EventChunks(Generic[T]):
    """Iterate `decode(run)` for the runs of whole events of the trace in `handle` (see the module)."""

    def __init__(
        self, handle: IO[bytes], decode: Callable[[Any], T], block: int = BLOCK_BYTES, spans: bool = False
    ) -> None:
        self._handle = handle
        self._decode = decode
        self._block = block
        # spans: `decode` gets each run's place in the file, a `Span`, rather than its bytes as an array
        # (the processes that decode read it themselves: an uncompressed file only)
        self._spans = spans
        self._base = 0  # the file offset of the buffer's first byte
        self.head = b""
        self.after = b""
        self.found_key = False
        self.found_array = False
        self.head_cut = False
        self.bytes_read = 0

    def __iter__(self) -> Iterator[T]:
        blocks = _Prefetch(self._handle, self._block)
        try:
            yield from self._runs(iter(blocks))
        finally:
            blocks.close()
            self.bytes_read = blocks.bytes_read

    def _runs(self, blocks: Iterator[bytes]) -> Iterator[T]:
        buf = self._start(blocks)
        if not self.found_array:
            return
        for block in blocks:
            buf += block
            cut = _guess_cut(buf)
            if cut > 0:
                try:
                    decoded = self._decode(self._run(buf, cut))
                except msgspec.DecodeError:
                    pass  # a wrong guess: the exact scan below
                else:
                    yield decoded
                    buf = self._after_run(buf, cut)
                    continue
            end, close = _scan(buf)
            if close >= 0:
                yield self._decoded(buf, close)
                self.after = _bounded(buf[close + 1 :], blocks)
                return
            if end > 0:
                yield self._decoded(buf, end)
                buf = self._after_run(buf, end)
            elif len(buf) > MAX_EVENT_BYTES:
                raise EventTooLong(self._base)
        end, close = _scan(buf)
        if close < 0:
            raise NotJson("the events array is not closed", truncated=True)
        yield self._decoded(buf, close)
        self.after = buf[close + 1 :]

    def _run(self, buf: bytes, end: int) -> bytes | Span:
        """The run buf[:end] as `decode` takes it."""
        return Span(self._base, end) if self._spans else as_array(buf[:end])

    def _after_run(self, buf: bytes, end: int) -> bytes:
        self._base += end
        return buf[end:]

    def _decoded(self, buf: bytes, end: int) -> T:
        try:
            return self._decode(self._run(buf, end))
        except msgspec.DecodeError as exc:
            raise NotJson(str(exc)) from exc

    def _start(self, blocks: Iterator[bytes]) -> bytes:
        """Read up to the `[` opening the events; the bytes after it. Sets head: the bytes before the key,
        or when there is no events array, the file (its first `HEAD_LIMIT` bytes: `head_cut` then says so,
        and a file that is not a trace, a model's weights say, is not read whole)."""
        buf = b""
        for block in blocks:
            searched = max(0, len(buf) - len(_KEY))
            buf += block
            key = buf.find(_KEY, searched)
            if key < 0:
                if len(buf) > HEAD_LIMIT:
                    self.head, self.head_cut = buf, True
                    return b""
                continue
            colon = _skip_blank(buf, key + len(_KEY))
            opening = _skip_blank(buf, colon + 1) if colon < len(buf) else len(buf)
            if opening >= len(buf):
                continue  # the block ended between the key and its value
            self.found_key = True
            if buf[colon : colon + 1] != b":" or buf[opening : opening + 1] != b"[":
                break  # a key of that name whose value is not an array: no events (and no need to read on)
            self.head, self.found_array = buf[:key], True
            self._base = opening + 1
            return buf[opening + 1 :]
        self.head = buf
        return b""

    @property
    def offset(self) -> int:
        """How far into the (decompressed) file the runs yielded so far reach."""
        return self._base


def _bounded(start: bytes, blocks: Iterator[bytes]) -> bytes:
    """`start` and the blocks after it, up to `HEAD_LIMIT` bytes: the keys after the events take
    kilobytes, so a file that goes on for longer after its events is not read to its end (those keys
    are then not read)."""
    parts = [start]
    size = len(start)
    for block in blocks:
        if size > HEAD_LIMIT:
            return b""
        parts.append(block)
        size += len(block)
    return b"".join(parts)


def _skip_blank(buf: bytes, at: int) -> int:
    while at < len(buf) and buf[at] in _BLANK:
        at += 1
    return at


class Span(NamedTuple):
    """Where a run of events lies in an uncompressed file."""

    offset: int
    length: int


def as_array(run: bytes) -> bytes:
    """A run of events (what lies between two cuts: a leading comma, events, commas) as a JSON array."""
    first = _skip_blank(run, 0)
    if run[first : first + 1] == b",":
        first = _skip_blank(run, first + 1)
    return b"".join((b"[", memoryview(run)[first:], b"]"))


def _guess_cut(buf: bytes) -> int:
    """Just after the last `}` that looks like an event's end (see the module): a `},` whose next
    non-blank byte opens the next event; -1 when there is none. Looks in the buffer's last 64 KiB
    first, where an event ends unless events are longer than that."""
    window = 1 << 16
    end = len(buf)
    while end > 0:
        start = max(0, end - window)
        found = max(buf.rfind(b"},\n", start, end), buf.rfind(b"},{", start, end), buf.rfind(b"}, {", start, end))
        if found < 0:
            if start == 0:
                break
            end, window = start + 3, window * 4  # the patterns' length - 1 bytes of overlap
            continue
        after = _skip_blank(buf, found + 2)
        if buf[after : after + 1] == b"{":
            return found + 1
        end = found + 2
    return -1


def _scan(buf: bytes) -> tuple[int, int]:
    """(just after the last `}` ending an element of the array, the index of the `]` closing it), each
    -1 when absent. `buf` starts inside the array, outside any string, at the array's depth."""
    data = np.frombuffer(buf, dtype=np.uint8)
    at = np.flatnonzero(_SPECIAL[data])
    chars = data[at]
    backslashes = at[chars == _BACKSLASH]
    if len(backslashes):
        # in a run of backslashes each escapes the next: the character after an odd run is escaped
        breaks = np.flatnonzero(np.diff(backslashes) != 1)
        run_first = np.r_[backslashes[0], backslashes[breaks + 1]]
        run_last = np.r_[backslashes[breaks], backslashes[-1]]
        escaped = (run_last + 1)[(run_last - run_first) % 2 == 0]
        keep = (chars != _BACKSLASH) & ~np.isin(at, escaped)
        at, chars = at[keep], chars[keep]
    quotes = chars == _QUOTE
    in_string = (np.cumsum(quotes) - quotes) % 2 == 1
    structural = ~quotes & ~in_string
    where = at[structural]
    step = _DEPTH_STEP[chars[structural]].astype(np.int64)
    depth = np.cumsum(step)
    element_ends = where[(depth == 0) & (step < 0)]
    closes = where[depth < 0]
    close = int(closes[0]) if len(closes) else -1
    if close >= 0:
        element_ends = element_ends[element_ends < close]
    return (int(element_ends[-1]) + 1 if len(element_ends) else -1), close


def check_not_json(exc: NotJson, path: object) -> TraceFormatError:
    """The one-line error for a trace whose JSON breaks off (with the likely cause: the run that wrote it
    was stopped) or is malformed (no guess: it may be no trace at all)."""
    detail = (str(exc).splitlines() or [""])[0][:80]
    if exc.truncated:
        return TraceFormatError(f"{path}: not a complete JSON trace ({detail}); was the run cut off while writing it?")
    return TraceFormatError(f"{path}: not valid JSON ({detail}); tenprof imports torch.profiler / Kineto chrome traces")
