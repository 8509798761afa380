"""Stream the events of a Kineto / Chrome trace (`.json`, `.json.gz`, `.json.zst`) without loading it whole.

`TraceStream(path).events()` yields `kineto_events.Event`s in file order (`batches()` the same in lists,
`collect(workers)` sorts them into the importer's columns, in several processes for a large trace);
afterwards `header` holds the top-level keys other than traceEvents (base time, device properties, ...),
which Kineto writes before and after the events. The file is read once, in blocks cut at event
boundaries (importers.formats.event_chunks) and decoded by msgspec into typed events (importers.formats.kineto_events):
memory for the reading stays at a few blocks.

Errors a user can cause (missing file, a folder, truncated gzip, not JSON, no `traceEvents`, JSON that
is not a torch.profiler / Kineto trace such as tenprof's own Perfetto export) raise `TraceFormatError`
with one line saying what is wrong; only a file that breaks off is asked whether the run writing it
was cut off. A file that is not a Kineto trace is refused once the stream has shown it: tenprof's
export at once, other JSON when its first `HEAD_LIMIT` bytes of events hold none of Kineto's categories
and no Kineto key came before them (else at the end), so the events already yielded must be discarded.
Nothing that is not a trace is read past its first megabytes (importers.formats.event_chunks).
zstd needs the optional `zstandard` package (or Python 3.14's compression.zstd); without it, one line
says so.
"""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, TypeVar, cast

import orjson

from tenprof.errors import TraceFormatError
from tenprof.importers.formats import event_chunks
from tenprof.importers.formats.event_chunks import BLOCK_BYTES, EventChunks, EventTooLong, NotJson, Span, check_not_json
from tenprof.importers.formats.kineto_events import Event, decode_events
from tenprof.importers.formats.zstd_input import ZSTD_ERRORS, ZSTD_MAGIC, open_zstd
from tenprof.importers.parallel_collect import can_fork_workers, collect_in_processes
from tenprof.importers.timeline_columns import Collector, forget_texts

_HEAD_BYTES = 1 << 20
T = TypeVar("T")


@dataclass
class TraceHeader:
    base_time_ns: int = 0
    device_properties: list[dict[str, Any]] = field(default_factory=list)
    other: dict[str, Any] = field(default_factory=dict)


def _keys_before(head: bytes) -> dict[str, Any]:
    """Top-level keys written before the traceEvents array (Kineto's schemaVersion, distributedInfo, ...),
    from `head`, the bytes before the array's key."""
    prefix = head.strip().rstrip(b",")
    if not prefix.startswith(b"{"):
        return {}
    try:
        found = orjson.loads(prefix + b"}")
    except orjson.JSONDecodeError:
        return {}
    return found if isinstance(found, dict) else {}


def trace_rank(path: Path) -> int | None:
    """The rank a distributed run's trace says it is (Kineto's `distributedInfo`, written before the
    events), read from the file's first bytes; None when it says none or cannot be read."""
    try:
        with _open(path) as handle:
            head = handle.read(_HEAD_BYTES)
    except (TraceFormatError, OSError, EOFError, zlib.error):
        return None
    marker = head.find(b'"traceEvents"')
    info = _keys_before(head[:marker]).get("distributedInfo") if marker > 0 else None
    return valid_rank(info.get("rank") if isinstance(info, dict) else None)


MAX_RANK = (1 << 31) - 1  # torch's ranks are C ints


def valid_rank(value: object) -> int | None:
    """`value` as a rank when it is one: a whole number from 0 to MAX_RANK (not a bool, a float, a string
    or a path: a rank names a folder, `rankNNNNN`, so nothing else may reach one)."""
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if 0 <= value <= MAX_RANK else None


def _open(path: Path) -> IO[bytes]:
    if not path.exists():
        raise TraceFormatError(f"{path}: no such file")
    if path.is_dir():
        raise TraceFormatError(f"{path} is a directory; give the trace file itself{_trace_in(path)}")
    kind = compression(path)
    if kind == "gzip":
        return cast(IO[bytes], gzip.open(path, "rb"))
    if kind == "zstd":
        return open_zstd(path)
    return path.open("rb")


def compression(path: Path) -> str | None:
    """How `path` is compressed, by its first bytes: "gzip", "zstd", or None for plain JSON."""
    with path.open("rb") as probe:
        magic = probe.read(4)
    if magic[:2] == b"\x1f\x8b":
        return "gzip"
    return "zstd" if magic == ZSTD_MAGIC else None


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
            # older Kineto's names (torch 1.8-1.9), which the importer reads as their newer ones
            "Operator",
            "Kernel",
            "Runtime",
            "Memcpy",
            "Memset",
        }
    )
    EXPORT_CATEGORIES = frozenset({"op", "scope", "step", "cuda_api", "transfer", "launch"})

    def __init__(self, path: Path) -> None:
        self.path = path
        self.is_kineto = False
        self._header_checked = False

    def see_categories(self, head: bytes, categories: Iterable[str]) -> None:
        """Look at the keys before the events (read by then), then at events' categories;
        TraceFormatError for tenprof's own export, which is recognised as soon as it shows."""
        if not self._header_checked:
            self._header_checked = True
            if self.has_header_keys(_keys_before(head)):
                self.is_kineto = True
                return
        seen = set(categories)  # Kineto's own categories win over the export's: the same in any order
        if seen & self.CATEGORIES:
            self.is_kineto = True
        elif seen & self.EXPORT_CATEGORIES:
            raise TraceFormatError(
                f"{self.path} is a Perfetto trace that tenprof exported, not a torch.profiler trace; open it "
                "in ui.perfetto.dev, or import the trace torch.profiler wrote (a profile keeps it in "
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

    def refuse_early(self, offset: int) -> None:
        """Refuse a file whose first `HEAD_LIMIT` bytes of events (read up to `offset`) showed nothing of
        Kineto's: a Kineto trace shows its categories in every run of events, and a large JSON file that
        is not a trace is not read to its end to find that out."""
        if not self.is_kineto and offset > event_chunks.HEAD_LIMIT:
            raise self.refuse()


class TraceStream:
    """Iterate `events` (or `batches`, or `collect` them into columns), then read `header` (complete only
    after the events were consumed)."""

    def __init__(self, path: Path, block_bytes: int = BLOCK_BYTES) -> None:
        self.path = path
        self.block_bytes = block_bytes  # how much of the file each run of events holds (tests cut it small)
        self.header = TraceHeader()
        self.bytes_read = 0

    def events(self) -> Iterator[Event]:
        for batch in self.batches():
            yield from batch

    def batches(self) -> Iterator[list[Event]]:
        """The events in runs of a block of the file each (see importers.formats.event_chunks)."""
        check = _KinetoCheck(self.path)
        with self._reading(decode_events) as chunks:
            for batch in chunks:
                if not check.is_kineto:
                    check.see_categories(chunks.head, (event.cat for event in batch))
                    check.refuse_early(chunks.offset)
                yield batch
        self._finish(chunks, check)

    def collect(self, workers: int = 1) -> Collector:
        """Every event sorted into columns, by `workers` processes when more than one (see
        importers.parallel_collect; a trace it cannot cut without decoding is read again in this one)."""
        if workers > 1 and can_fork_workers():
            check = _KinetoCheck(self.path)
            plain = self.path.is_file() and compression(self.path) is None  # workers read its runs themselves
            job = _Job(str(self.path) if plain else None)
            try:
                with self._reading(job, spans=plain) as chunks:
                    done = collect_in_processes(iter(chunks), workers, self._early_check(check, chunks))
            except TraceFormatError:
                # cuts are not proven here (a `},{` inside a string can pass for one), nor can a pool always
                # start: whatever went wrong, the one-process reader below decides, with its own error
                done = None
            if done is not None:
                collector, categories = done
                check.see_categories(chunks.head, categories)
                self._finish(chunks, check)
                return collector
        collector = Collector()
        try:
            collector.add_all(self.batches())
        finally:
            forget_texts()  # the shape texts of this trace: not kept in a process that goes on
        return collector

    def _early_check(self, check: _KinetoCheck, chunks: EventChunks[Any]) -> Callable[[frozenset[str]], None]:
        """What the parallel reader calls with the categories of each run it merged, in file order (see
        `_KinetoCheck.refuse_early`; the runs merged trail the runs cut, so this reads a little further)."""
        merged = [0]

        def seen(categories: frozenset[str]) -> None:
            merged[0] += 1
            if not check.is_kineto:
                check.see_categories(chunks.head, categories)
                check.refuse_early(merged[0] * self.block_bytes)

        return seen

    @contextmanager
    def _reading(self, decode: Callable[[Any], T], spans: bool = False) -> Iterator[EventChunks[T]]:
        """The file's events in runs, with each way reading it can fail turned into one clear error."""
        handle = _open(self.path)
        chunks = EventChunks(handle, decode, self.block_bytes, spans)
        try:
            yield chunks
        except NotJson as exc:
            raise check_not_json(exc, self.path) from exc
        except EventTooLong as exc:
            raise TraceFormatError(
                f"{self.path}: {exc}; not a trace tenprof can read (torch.profiler's events take kilobytes)"
            ) from exc
        except EOFError as exc:  # gzip's stream ended before its end marker
            raise TraceFormatError(
                f"{self.path}: the compressed file breaks off; was the run cut off while writing it?"
            ) from exc
        except (OSError, zlib.error) as exc:
            raise TraceFormatError(f"{self.path}: truncated or corrupt file ({exc.__class__.__name__})") from exc
        except ZSTD_ERRORS as exc:
            raise TraceFormatError(f"{self.path}: truncated or corrupt zstd file ({exc})") from exc
        finally:
            handle.close()
            self.bytes_read = chunks.bytes_read

    def _finish(self, chunks: EventChunks[Any], check: _KinetoCheck) -> None:
        """Read the header keys once the events are through; refuse what is not a Kineto trace."""
        if not chunks.found_array:
            if chunks.found_key:
                raise check.refuse()
            if chunks.head_cut:
                raise TraceFormatError(
                    f"{self.path}: no `traceEvents` array in its first {event_chunks.HEAD_LIMIT >> 20} MB; tenprof "
                    "imports torch.profiler / Kineto chrome traces"
                )
            try:
                orjson.loads(chunks.head)
            except orjson.JSONDecodeError as exc:
                # orjson says "unexpected end of data" (or "EOF") where the text breaks off
                truncated = "end of data" in str(exc) or "EOF" in str(exc)
                raise check_not_json(NotJson(str(exc), truncated), self.path) from exc
            raise TraceFormatError(
                f"{self.path}: no `traceEvents` array; tenprof imports torch.profiler / Kineto chrome traces"
            )
        edges = _keys_before(chunks.head)
        edges.update(_keys_after(chunks.after))
        if not check.is_kineto and not check.has_header_keys(edges):  # some Kineto keys follow the events
            raise check.refuse()
        base = edges.pop("baseTimeNanoseconds", 0)
        self.header = TraceHeader(
            base_time_ns=int(base) if isinstance(base, (int, float)) else 0,
            device_properties=list(edges.pop("deviceProperties", []) or []),
            other=edges,
        )


class _Job:
    """What a worker is sent for a run: the run's bytes, or the file and the run's place in it."""

    def __init__(self, path: str | None) -> None:
        self.path = path

    def __call__(self, run: bytes | Span) -> bytes | tuple[str, Span]:
        if isinstance(run, Span):
            assert self.path is not None  # spans are asked for only with a path to read them from
            return self.path, run
        return run


def _keys_after(after: bytes) -> dict[str, Any]:
    """The top-level keys written after the events array (`, "traceName": ..., "deviceProperties": [...]}`)."""
    rest = after.strip()
    if not rest.startswith(b","):
        return {}
    try:
        parsed = orjson.loads(b"{" + rest[1:])
    except orjson.JSONDecodeError:
        return {}
    return parsed if isinstance(parsed, dict) else {}
