"""Kineto events -> column buffers, one set per kind of event, and the primitives the timeline build
applies to them (tenprof.importers.timeline_builder).

- `Collector.add_all` sorts the trace's events by kind into `Cols`: the only per-event Python code of an
  import. It keeps each kind's events in trace order; nothing is joined or sorted here. Older Kineto's
  category names (`Kernel`, `Runtime`, `Operator`, ...) are read as the newer ones. It also keeps the
  profiler's recorded window (Kineto's `Trace` ranges and its "Record Window End" mark).
- `Collector.drop_bad_times` leaves out the events whose time or duration cannot be right (not a
  number, negative, too large for the clock) and counts them by reason: the importer says so, and
  never clamps or wraps a number silently.
- `Clock` turns Kineto's float microseconds into int64 nanoseconds on the trace's absolute clock.
- `ThreadNesting` nests ranges by time containment per thread and finds the innermost range at a time.
"""

from __future__ import annotations

import math
import sys
from array import array
from collections.abc import Iterable
from typing import Any, TypeGuard

import msgspec
import numpy as np
import orjson
import pyarrow as pa

from tenprof.core.intervals import I64Array, Nesting, nest
from tenprof.importers.formats.kineto_events import Event, EventArgs

STEP_PREFIX = "ProfilerStep#"
OUT_OF_MEMORY_EVENT = "[OutOfMemory]"  # profile_memory's instant event for an allocation that failed

# Kineto's category names before torch 1.10 (as torch-tb-profiler reads them) -> today's
OLD_CATEGORIES = {
    "Operator": "cpu_op",
    "Kernel": "kernel",
    "Runtime": "cuda_runtime",
    "Memcpy": "gpu_memcpy",
    "Memset": "gpu_memset",
    "Python": "python_function",
}


_WINDOW_CATEGORY = "Trace"  # Kineto's range for each profiling window: "PyTorch Profiler (0)"
_WINDOW_END = "Record Window End"  # the instant Kineto marks the end of recording with

# Bounds on an event's times (microseconds, Kineto's unit) beyond which it cannot be from a profile: a
# duration of more than a week, or a time whose nanoseconds leave int64 once the base time is added
MAX_DURATION_US = 7 * 24 * 3600 * 1e6
MAX_TIME_US = 2.0**62 / 1000.0

# Why an event was left out (`Collector.drop_bad_times`), worded to follow "N events with ..."
BAD_TIME = "a time that is not a number"
FAR_TIME = "a time out of any clock's range"
BAD_DURATION = "a duration that is not a number"
NEGATIVE_DURATION = "a negative duration"
LONG_DURATION = "a duration of more than a week"


def _old_annotation(name: str) -> bool:
    """Before torch 1.10, Kineto wrote torch's own annotations in the ops' category ("Operator"):
    'ProfilerStep#5', 'enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__', 'Optimizer.step#SGD.step'.
    They are a name, '#', a name, without an op's namespace ('aten::', 'autograd::engine::...'); the
    autograd nodes of those traces ('AddmmBackward') have no '#'."""
    return name.startswith(STEP_PREFIX) or ("#" in name and "::" not in name)


class Cols:
    """Column buffers for one kind of event, appended in the hot loop and turned into arrays once.

    Numbers go to typed arrays (8 bytes each) and strings are interned, so a trace of millions of
    events costs tens of bytes per event, not hundreds."""

    def __init__(self, **types: str) -> None:
        # types: column -> "d" (float), "q" (int) or "s" (string)
        self.data: dict[str, Any] = {n: (array(t) if t in "dq" else []) for n, t in types.items()}

    def __len__(self) -> int:
        return len(next(iter(self.data.values())))

    def ints(self, name: str) -> I64Array:
        return np.asarray(self.data[name], dtype=np.int64)

    def floats(self, name: str) -> np.ndarray[Any, np.dtype[np.float64]]:
        return np.asarray(self.data[name], dtype=np.float64)

    def keep(self, rows: np.ndarray[Any, np.dtype[np.bool_]]) -> None:
        """Keep only the rows where `rows` is True, in every column."""
        for name, values in self.data.items():
            if isinstance(values, array):
                self.data[name] = array(values.typecode, np.asarray(values)[rows].tobytes())
            else:
                self.data[name] = [v for v, kept in zip(values, rows.tolist(), strict=True) if kept]


def _move_ids_past(earlier: list[Cols], later: list[Cols], key: str) -> None:
    """Add to the ids (column `key`, those above 0) of the `later` columns the largest id of the `earlier`
    ones, where the later ids would otherwise meet earlier ones."""
    top = max((int(c.ints(key).max()) for c in earlier if len(c)), default=0)
    low = min((int(v[v > 0].min()) for v in (c.ints(key) for c in later) if (v > 0).any()), default=top + 1)
    if low > top:
        return
    for cols in later:
        ids = cols.ints(key)
        cols.data[key] = array("q", np.where(ids > 0, ids + top, ids).tobytes())


def in_order(values: list[str], order: I64Array) -> list[str]:
    """values[order] as a list (a Python int indexes a list several times faster than a numpy one)."""
    return [values[i] for i in order.tolist()]


def string_column(values: list[str], order: I64Array) -> pa.Array:
    """values[order] as an Arrow string column. Each distinct string is converted once (names, shapes and
    dtypes repeat over millions of rows): codes are reordered and expanded in Arrow, not in Python."""
    distinct = list(dict.fromkeys(values))
    code_of = {value: code for code, value in enumerate(distinct)}
    codes = np.array([code_of[v] for v in values], dtype=np.int32)[order]
    return pa.DictionaryArray.from_arrays(codes, pa.array(distinct, pa.string())).cast(pa.string())


def as_int(value: Any, default: int = -1) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def _dim3(value: list[int] | None) -> tuple[int, int, int]:
    if value is not None and len(value) == 3:
        return value[0], value[1], value[2]
    return 0, 0, 0


# What Inductor's launcher records with each Triton launch it makes under the profiler (args of the
# cpu_op named after the kernel): kernel_flop and kernel_num_gb only when the kernel declares them
# (TORCHINDUCTOR_BENCHMARK_KERNEL=1 or profile_bandwidth).
_TRITON_LAUNCH_ARGS = (
    "kernel_file",
    "num_warps",
    "num_stages",
    "kernel_kwargs",
    "kernel_flop",
    "kernel_num_gb",
)


class Collector:
    """Sorts raw events by kind into column lists. The only per-event Python code of an import."""

    def __init__(self) -> None:
        self.ops = Cols(
            name="s",
            tid="q",
            ts="d",
            dur="d",
            ext="q",
            seq="q",
            fwd_tid="q",
            shapes="s",
            dtypes="s",
            strides="s",
            values="s",  # Kineto's "Concrete Inputs", as JSON text ('' when the trace has none)
        )
        self.annotations = Cols(name="s", tid="q", ts="d", dur="d")
        self.python = Cols(name="s", tid="q", ts="d", dur="d")
        self.kernels = Cols(
            name="s",
            device="q",
            stream="q",
            ts="d",
            dur="d",
            grid="s",
            block="s",
            regs="q",
            smem="q",
            corr="q",
            ext="q",
            comm="s",  # a collective's metadata (COLLECTIVE_ARGS) as a JSON array, '' for other kernels
        )
        self.transfers = Cols(name="s", cat="s", bytes="q", device="q", stream="q", ts="d", dur="d", corr="q", ext="q")
        self.api = Cols(name="s", cat="s", tid="q", ts="d", dur="d", corr="q", ext="q")
        self.memory = Cols(ts="d", tid="q", dtype="q", device="q", addr="q", bytes="q", alloc="q", reserved="q")
        # allocations that failed (profile_memory's "[OutOfMemory]" events): bytes the size asked for
        self.failed = Cols(ts="d", dtype="q", device="q", bytes="q", alloc="q", reserved="q")
        self.triton_launches: dict[str, dict[str, Any]] = {}
        self.events = 0
        # the profiler's recorded window, Kineto's microseconds (None: the trace does not say)
        self.window_start: float | None = None
        self.window_end: float | None = None

    def add_all(self, batches: Iterable[list[Event]]) -> None:
        for batch in batches:
            self.add_batch(batch)

    def _tables(self) -> tuple[Cols, ...]:
        return (
            self.ops,
            self.annotations,
            self.python,
            self.kernels,
            self.transfers,
            self.api,
            self.memory,
            self.failed,
        )

    def extend(self, later: Collector) -> None:
        """Append the columns of `later`, which sorted the events that follow this one's in the trace."""
        for mine, theirs in zip(self._tables(), later._tables(), strict=True):
            for name, values in theirs.data.items():
                mine.data[name] += values
        for name, launch in later.triton_launches.items():
            seen = self.triton_launches.setdefault(name, {"launches": 0})
            launch_count = seen["launches"] + launch["launches"]
            seen.update(launch)  # the last launch's values, as add_batch keeps them
            seen["launches"] = launch_count
        self.events += later.events
        self._widen_window(later.window_start, later.window_end)

    def append_part(self, later: Collector, shift_us: float) -> None:
        """Append the columns of a later part of the same recording (a session started after this one's
        stopped), its times moved by `shift_us` onto this part's base time. Its External ids and
        correlation ids, which join API calls, kernels and ops within a part, are moved past this one's
        where the two overlap (a new session may count them from 1 again); 0 and below mean none and stay."""
        if shift_us:
            for cols in later._tables():
                cols.data["ts"] = array("d", (np.asarray(cols.data["ts"]) + shift_us).tobytes())
        for key in ("ext", "corr"):
            mine = [c for c in (self.ops, self.kernels, self.transfers, self.api) if key in c.data]
            theirs = [c for c in (later.ops, later.kernels, later.transfers, later.api) if key in c.data]
            _move_ids_past(mine, theirs, key)
        window = (later.window_start, later.window_end)
        later.window_start, later.window_end = (None if w is None else w + shift_us for w in window)
        self.extend(later)

    def _widen_window(self, start: float | None, end: float | None) -> None:
        """Take in a range of the recorded window; a bound that cannot be a time is not one."""
        if _usable_time(start):
            self.window_start = start if self.window_start is None else min(self.window_start, start)
        if _usable_time(end):
            self.window_end = end if self.window_end is None else max(self.window_end, end)

    def add_batch(self, batch: list[Event]) -> None:
        """Sort one run of events (trace order) into the columns: grouped by kind in one pass, then each
        column filled by a comprehension over its group, which costs far less than an append per value."""
        self.events += len(batch)
        ops: list[Event] = []
        ranges: list[Event] = []  # user annotations and ProfilerStep# ops (same columns)
        python: list[Event] = []
        kernels: list[Event] = []
        transfers: list[Event] = []
        api: list[Event] = []
        memory: list[Event] = []
        by_cat = {"kernel": kernels, "gpu_memcpy": transfers, "gpu_memset": transfers, "cuda_runtime": api}
        by_cat |= {"cuda_driver": api, "user_annotation": ranges, "python_function": python}
        by_cat |= {old: by_cat[new] for old, new in OLD_CATEGORIES.items() if new in by_cat}
        for ev in batch:
            if ev.ph == "X":
                cat = ev.cat
                if cat == "cpu_op":
                    (ranges if ev.name.startswith(STEP_PREFIX) else ops).append(ev)
                elif cat == "Operator":
                    (ranges if _old_annotation(ev.name) else ops).append(ev)
                else:
                    group = by_cat.get(cat)
                    if group is not None:
                        group.append(ev)
                    elif cat == _WINDOW_CATEGORY and 0 <= ev.dur <= MAX_DURATION_US:
                        self._widen_window(ev.ts, ev.ts + ev.dur)
            elif ev.ph == "i":
                if ev.name == "[memory]":
                    memory.append(ev)
                elif ev.name == OUT_OF_MEMORY_EVENT:
                    self._add_failed(ev)
                elif ev.name == _WINDOW_END:
                    self._widen_window(None, ev.ts)
        if ops:
            self._add_ops(ops)
        if kernels:
            self._add_kernels(kernels)
        if transfers:
            self._add_transfers(transfers)
        if api:
            self._add_api(api)
        for group, cols in ((ranges, self.annotations), (python, self.python)):
            if group:
                _add_common(cols.data, group, with_tid=True)
        if memory:
            self._add_memory(memory)

    def _add_ops(self, ops: list[Event]) -> None:
        data = self.ops.data
        _add_common(data, ops, with_tid=True)
        args = [e.args for e in ops]
        data["ext"].fromlist([a.external_id for a in args])
        data["seq"].fromlist([a.sequence for a in args])
        data["fwd_tid"].fromlist([a.fwd_thread for a in args])
        data["shapes"] += self._json_texts([a.input_dims for a in args])
        data["dtypes"] += self._json_texts([a.input_types for a in args])
        data["strides"] += self._json_texts([a.input_strides for a in args])
        data["values"] += self._json_texts([a.concrete_inputs for a in args])
        for e in ops:
            if e.args.kernel_backend:
                self._triton_launch(e.name, e.args)

    def _add_kernels(self, kernels: list[Event]) -> None:
        data = self.kernels.data
        _add_common(data, kernels, with_tid=False)
        args = [e.args for e in kernels]
        data["device"].fromlist([_thread(e.pid) if e.args.device is None else e.args.device for e in kernels])
        data["stream"].fromlist([_thread(e.tid) if e.args.stream is None else e.args.stream for e in kernels])
        data["grid"] += [_dim3(a.grid) for a in args]
        data["block"] += [_dim3(a.block) for a in args]
        data["regs"].fromlist([a.registers for a in args])
        data["smem"].fromlist([a.shared_memory for a in args])
        data["corr"].fromlist([a.correlation for a in args])
        data["ext"].fromlist([a.external_id for a in args])
        data["comm"] += self._json_texts([_collective_args(a) for a in args])

    def _add_transfers(self, transfers: list[Event]) -> None:
        data = self.transfers.data
        _add_common(data, transfers, with_tid=False)
        args = [e.args for e in transfers]
        data["cat"] += [sys.intern(OLD_CATEGORIES.get(e.cat, e.cat)) for e in transfers]
        data["bytes"].fromlist([a.bytes for a in args])
        data["device"].fromlist([_copy_device(e) for e in transfers])
        data["stream"].fromlist([_thread(e.tid) if e.args.stream is None else e.args.stream for e in transfers])
        data["corr"].fromlist([a.correlation for a in args])
        data["ext"].fromlist([a.external_id for a in args])

    def _add_api(self, api: list[Event]) -> None:
        data = self.api.data
        _add_common(data, api, with_tid=True)
        data["cat"] += [sys.intern(OLD_CATEGORIES.get(e.cat, e.cat)) for e in api]
        data["corr"].fromlist([e.args.correlation for e in api])
        data["ext"].fromlist([e.args.external_id for e in api])

    def _add_failed(self, failed: Event) -> None:
        """An allocation that failed (an "[OutOfMemory]" instant event), rare: one at a time."""
        data, args = self.failed.data, failed.args
        data["ts"].append(failed.ts)
        data["dtype"].append(args.device_type)
        data["device"].append(args.device_id)
        data["bytes"].append(args.alloc_bytes)
        data["alloc"].append(args.total_allocated)
        data["reserved"].append(args.total_reserved)

    def _add_memory(self, samples: list[Event]) -> None:
        """Allocator samples (profile_memory's "[memory]" instant events)."""
        data = self.memory.data
        args = [e.args for e in samples]
        data["ts"].fromlist([e.ts for e in samples])
        data["tid"].fromlist([_thread(e.tid) for e in samples])
        data["dtype"].fromlist([a.device_type for a in args])
        data["device"].fromlist([a.device_id for a in args])
        data["addr"].fromlist([a.addr for a in args])
        data["bytes"].fromlist([a.alloc_bytes for a in args])
        data["alloc"].fromlist([a.total_allocated for a in args])
        data["reserved"].fromlist([a.total_reserved for a in args])

    @property
    def timed_events(self) -> int:
        """How many events were sorted into a kind that has times (ranges and memory samples)."""
        return sum(len(cols) for cols in self._tables())

    def drop_bad_times(self) -> dict[str, int]:
        """Leave out every event whose start or duration cannot be right; how many, by reason (in the
        order the reasons are checked: an event counts once, for the first)."""
        left_out: dict[str, int] = {}
        for cols in self._tables():
            reason = _bad_times(cols)
            if reason is None:
                continue
            counts = np.bincount(reason[reason >= 0], minlength=len(_REASONS))
            for label, count in zip(_REASONS, counts.tolist(), strict=True):
                if count:
                    left_out[label] = left_out.get(label, 0) + count
            cols.keep(reason < 0)
        return left_out

    def _json_texts(self, raws: list[msgspec.Raw]) -> list[str]:
        """Compact JSON text of `args` values kept raw ("" when absent), one string per distinct text:
        traces written with and without spaces give the same text."""
        keys = list(map(bytes, raws))
        try:
            return [_TEXTS[key] for key in keys]
        except KeyError:  # texts not seen before: each made once, then the whole run again
            if len(_TEXTS) > _TEXTS_KEPT:
                forget_texts()
            for key in set(keys).difference(_TEXTS):
                _TEXTS[key] = _compact_json(key)
            return [_TEXTS[key] for key in keys]

    def _triton_launch(self, name: str, args: EventArgs) -> None:
        seen = self.triton_launches.setdefault(name, {"launches": 0})
        seen["launches"] += 1
        for key in _TRITON_LAUNCH_ARGS:
            raw = getattr(args, key)
            if raw:
                seen[key] = orjson.loads(bytes(raw))


# Raw `args` JSON -> its compact text, kept for the process's life (a worker sorts many runs): a run repeats
# a few thousand shapes, and a trace with more than _TEXTS_KEPT starts the cache again rather than grow it
_TEXTS: dict[bytes, str] = {b"": ""}
_TEXTS_KEPT = 1 << 18


# a collective kernel's args, in this order, as the `comm` column's JSON array
COLLECTIVE_ARGS = (
    "collective_name",
    "group_name",
    "group_description",
    "group_ranks",
    "group_size",
    "in_elements",
    "out_elements",
    "element_type",
)
_NO_COLLECTIVE = msgspec.Raw(b"")


def _collective_args(args: EventArgs) -> msgspec.Raw:
    """The COLLECTIVE_ARGS of a kernel's args as one raw JSON array (null where absent); empty for a kernel
    that is no collective's."""
    if not args.collective_name:
        return _NO_COLLECTIVE
    values = (bytes(getattr(args, name)) or b"null" for name in COLLECTIVE_ARGS)
    return msgspec.Raw(b"[" + b",".join(values) + b"]")


def _compact_json(raw: bytes) -> str:
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return ""
    return "" if value is None else sys.intern(orjson.dumps(value).decode())


def forget_texts() -> None:
    """Empty the shape-text cache (after a trace, in a process that goes on: an in-process profile's)."""
    _TEXTS.clear()
    _TEXTS[b""] = ""


def _usable_time(value: float | None) -> TypeGuard[float]:
    return value is not None and math.isfinite(value) and abs(value) <= MAX_TIME_US


_REASONS = (BAD_TIME, FAR_TIME, BAD_DURATION, NEGATIVE_DURATION, LONG_DURATION)


def _bad_times(cols: Cols) -> np.ndarray[Any, np.dtype[np.int64]] | None:
    """Per row, the index in `_REASONS` of why its times cannot be right, -1 when they can; None when
    every row is fine (the common case: nothing to copy)."""
    if not len(cols):
        return None
    ts = cols.floats("ts")
    dur = cols.floats("dur") if "dur" in cols.data else np.zeros(len(ts))
    with np.errstate(invalid="ignore"):  # NaN compares False: each test below is written to catch it
        checks = (
            ~np.isfinite(ts),
            np.abs(ts) > MAX_TIME_US,
            ~np.isfinite(dur),
            dur < 0,
            dur > MAX_DURATION_US,
        )
    reason = np.full(len(ts), -1, dtype=np.int64)
    for index in range(len(checks) - 1, -1, -1):  # the first reason that applies wins
        reason[checks[index]] = index
    return reason if (reason >= 0).any() else None


def _thread(value: int | str) -> int:
    """A pid or tid as a number (Kineto writes numbers; some traces name a thread instead: 0)."""
    return value if isinstance(value, int) else as_int(value, 0)


def _add_common(data: dict[str, Any], events: list[Event], with_tid: bool) -> None:
    """The name, start and duration columns every kind has (and the thread, for host-side kinds)."""
    intern = sys.intern
    data["name"] += [intern(e.name) for e in events]
    data["ts"].fromlist([e.ts for e in events])
    data["dur"].fromlist([e.dur for e in events])
    if with_tid:
        data["tid"].fromlist([e.tid if e.tid.__class__ is int else _thread(e.tid) for e in events])


def _copy_device(e: Event) -> int:
    a = e.args
    device = a.device if a.device is not None else a.in_device
    return device if device is not None else _thread(e.pid)


class Clock:
    """Kineto's float microseconds -> int64 nanoseconds on the trace's absolute clock."""

    def __init__(self, base_ns: int) -> None:
        self.base_ns = base_ns

    def span(self, cols: Cols) -> tuple[I64Array, I64Array]:
        start = self.base_ns + np.rint(cols.floats("ts") * 1000.0).astype(np.int64)
        # negative durations were left out, and said, before (Collector.drop_bad_times): this changes none
        dur = np.maximum(np.rint(cols.floats("dur") * 1000.0).astype(np.int64), 0)
        return start, start + dur

    def at(self, cols: Cols) -> I64Array:
        return self.base_ns + np.rint(cols.floats("ts") * 1000.0).astype(np.int64)


class ThreadNesting:
    """Per-thread nesting of a set of ranges, with lookups by (thread, time)."""

    def __init__(self, tids: I64Array, starts: I64Array, ends: I64Array) -> None:
        self.parent = np.full(len(tids), -1, dtype=np.int64)
        self.depth = np.zeros(len(tids), dtype=np.int64)
        self.by_thread: dict[int, tuple[I64Array, Nesting]] = {}
        for tid in np.unique(tids):
            members = np.flatnonzero(tids == tid)
            nesting = nest(starts[members], ends[members])
            local_parent = nesting.parent
            self.parent[members] = np.where(local_parent >= 0, members[np.clip(local_parent, 0, None)], -1)
            self.depth[members] = nesting.depth
            self.by_thread[int(tid)] = (members, nesting)

    def innermost(self, tid: int, times: I64Array) -> I64Array:
        entry = self.by_thread.get(tid)
        if entry is None:
            return np.full(len(times), -1, dtype=np.int64)
        members, nesting = entry
        local = nesting.innermost_at(times)
        return np.where(local >= 0, members[np.clip(local, 0, None)], -1)

    def innermost_per_thread(self, tids: I64Array, times: I64Array) -> I64Array:
        out = np.full(len(times), -1, dtype=np.int64)
        for tid in np.unique(tids):
            sel = np.flatnonzero(tids == tid)
            out[sel] = self.innermost(int(tid), times[sel])
        return out
