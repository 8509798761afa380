"""Kineto events -> column buffers, one set per kind of event, and the primitives the timeline build
applies to them (tenprof.importers.timeline_builder).

- `Collector.add_all` sorts the trace's events by kind into `Cols`: the only per-event Python code of an
  import. It keeps each kind's events in trace order; nothing is joined or sorted here.
- `Clock` turns Kineto's float microseconds into int64 nanoseconds on the trace's absolute clock.
- `ThreadNesting` nests ranges by time containment per thread and finds the innermost range at a time.
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Iterable
from typing import Any

import numpy as np
import orjson

from tenprof.core.intervals import I64Array, Nesting, nest

STEP_PREFIX = "ProfilerStep#"


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


def as_int(value: Any, default: int = -1) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def _dim3(value: Any) -> tuple[int, int, int]:
    if isinstance(value, list) and len(value) == 3:
        return as_int(value[0], 0), as_int(value[1], 0), as_int(value[2], 0)
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
            name="s", tid="q", ts="d", dur="d", ext="q", seq="q", fwd_tid="q", shapes="s", dtypes="s", strides="s"
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
        )
        self.transfers = Cols(name="s", cat="s", bytes="q", device="q", stream="q", ts="d", dur="d", corr="q", ext="q")
        self.api = Cols(name="s", cat="s", tid="q", ts="d", dur="d", corr="q", ext="q")
        self.memory = Cols(ts="d", tid="q", dtype="q", device="q", addr="q", bytes="q", alloc="q", reserved="q")
        self.triton_launches: dict[str, dict[str, Any]] = {}
        self.events = 0

    def add_all(self, events: Iterable[dict[str, Any]]) -> None:
        ops, ann, py = self.ops.data, self.annotations.data, self.python.data
        kern, xfer, api = self.kernels.data, self.transfers.data, self.api.data
        intern = sys.intern
        for ev in events:
            self.events += 1
            ph = ev.get("ph")
            if ph != "X":
                if ph == "i" and ev.get("name") == "[memory]":
                    self._memory_sample(ev)
                continue
            cat = ev.get("cat", "")
            name = intern(str(ev.get("name", "")))
            a = ev.get("args") or {}
            ts = ev.get("ts", 0.0)
            dur = ev.get("dur", 0.0)
            if cat == "cpu_op" and not name.startswith(STEP_PREFIX):
                ops["name"].append(name)
                ops["tid"].append(as_int(ev.get("tid"), 0))
                ops["ts"].append(ts)
                ops["dur"].append(dur)
                ops["ext"].append(as_int(a.get("External id")))
                ops["seq"].append(as_int(a.get("Sequence number")))
                ops["fwd_tid"].append(as_int(a.get("Fwd thread id"), 0))
                dims = a.get("Input Dims")
                ops["shapes"].append(intern(orjson.dumps(dims).decode()) if dims is not None else "")
                types = a.get("Input type")
                ops["dtypes"].append(intern(orjson.dumps(types).decode()) if types is not None else "")
                strides = a.get("Input Strides")
                ops["strides"].append(intern(orjson.dumps(strides).decode()) if strides is not None else "")
                if "kernel_backend" in a:
                    self._triton_launch(name, a)
            elif cat == "kernel":
                kern["name"].append(name)
                kern["device"].append(as_int(a.get("device", ev.get("pid")), 0))
                kern["stream"].append(as_int(a.get("stream", ev.get("tid")), 0))
                kern["ts"].append(ts)
                kern["dur"].append(dur)
                kern["grid"].append(_dim3(a.get("grid")))
                kern["block"].append(_dim3(a.get("block")))
                kern["regs"].append(as_int(a.get("registers per thread")))
                kern["smem"].append(as_int(a.get("shared memory")))
                kern["corr"].append(as_int(a.get("correlation")))
                kern["ext"].append(as_int(a.get("External id")))
            elif cat in ("gpu_memcpy", "gpu_memset"):
                xfer["name"].append(name)
                xfer["cat"].append(intern(cat))
                xfer["bytes"].append(as_int(a.get("bytes"), 0))
                xfer["device"].append(as_int(a.get("device", a.get("inDevice", ev.get("pid"))), 0))
                xfer["stream"].append(as_int(a.get("stream", ev.get("tid")), 0))
                xfer["ts"].append(ts)
                xfer["dur"].append(dur)
                xfer["corr"].append(as_int(a.get("correlation")))
                xfer["ext"].append(as_int(a.get("External id")))
            elif cat in ("cuda_runtime", "cuda_driver"):
                api["name"].append(name)
                api["cat"].append(intern(cat))
                api["tid"].append(as_int(ev.get("tid"), 0))
                api["ts"].append(ts)
                api["dur"].append(dur)
                api["corr"].append(as_int(a.get("correlation")))
                api["ext"].append(as_int(a.get("External id")))
            elif cat in ("user_annotation", "python_function") or (cat == "cpu_op" and name.startswith(STEP_PREFIX)):
                ranges = py if cat == "python_function" else ann  # the two take the same columns
                ranges["name"].append(name)
                ranges["tid"].append(as_int(ev.get("tid"), 0))
                ranges["ts"].append(ts)
                ranges["dur"].append(dur)

    def _memory_sample(self, ev: dict[str, Any]) -> None:
        """An allocator sample (profile_memory's "[memory]" instant event)."""
        mem = self.memory.data
        a = ev.get("args") or {}
        mem["ts"].append(ev.get("ts", 0.0))
        mem["tid"].append(as_int(ev.get("tid"), 0))
        mem["dtype"].append(as_int(a.get("Device Type"), 0))
        mem["device"].append(as_int(a.get("Device Id"), -1))
        mem["addr"].append(as_int(a.get("Addr"), 0))
        mem["bytes"].append(as_int(a.get("Bytes"), 0))
        mem["alloc"].append(as_int(a.get("Total Allocated"), -1))
        mem["reserved"].append(as_int(a.get("Total Reserved"), -1))

    def _triton_launch(self, name: str, args: dict[str, Any]) -> None:
        seen = self.triton_launches.setdefault(name, {"launches": 0})
        seen["launches"] += 1
        for key in _TRITON_LAUNCH_ARGS:
            if key in args:
                seen[key] = args[key]


class Clock:
    """Kineto's float microseconds -> int64 nanoseconds on the trace's absolute clock."""

    def __init__(self, base_ns: int) -> None:
        self.base_ns = base_ns

    def span(self, cols: Cols) -> tuple[I64Array, I64Array]:
        start = self.base_ns + np.rint(cols.floats("ts") * 1000.0).astype(np.int64)
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
