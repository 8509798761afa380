"""Kineto events (+ tenprof's call-site sidecar when present) -> the timeline tables of a profile.

The joins, each stated once here:
- op nesting: time containment per thread (`intervals.nest`); op_id = rank by (start, thread, -end).
- kernel/transfer/API call -> op: Kineto's "External id" (the innermost record_function active at the
  launch); when that id is not an op, the launching API call's innermost enclosing op on its thread.
- kernel -> API call: CUPTI correlation id.
- backward op -> forward op: autograd sequence number, as torch links them: the latest forward op
  with that number that started before the backward op (numbers are per thread, so two threads
  running forward passes at once could be confused).
- op -> Python call path: for top-level ops, the tenprof call-site record (a torch API call on the same
  thread) whose interval covers the op's midpoint (else, for the native recorder's records, the nearest
  within the clock mapping's uncertainty), after mapping the sidecar's perf clock onto the trace clock
  with the clock-sync markers; backward ops take their forward op's path; traces recorded with
  `with_stack` use their python_function ranges instead. Nested ops inherit their top-level op's path.
- op -> scope: innermost user_annotation covering the op's start on its own thread; backward ops,
  which autograd runs on a thread of its own, fall back to the thread that opened the most scopes.
- op -> step: the ProfilerStep#N range covering its start.
"""

from __future__ import annotations

import re
import sys
from array import array
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import orjson
import pyarrow as pa

from tenprof.importers.callsites import SYNC_PREFIX, Callsites, clock_offset
from tenprof.importers.intervals import I64Array, Nesting, nest, take
from tenprof.sourcefiles import is_user_file
from tenprof.store.schema import TABLES

_STEP_PREFIX = "ProfilerStep#"
_BACKWARD_PREFIX = "autograd::engine::evaluate_function"
_MEMCPY_NAME = re.compile(r"Memcpy (\w+) \(([\w ]+?) -> ([\w ]+?)\)")
_PY_FUNCTION = re.compile(r"^(.*)\((\d+)\): (.*)$")


@dataclass
class BuildReport:
    """What the build saw and could not do; goes into meta.json and the report."""

    events: int = 0
    base_time_ns: int = 0
    device_properties: list[dict[str, Any]] = field(default_factory=list)
    clock_offset_ns: int | None = None
    clock_uncertainty_ns: int | None = None
    warnings: list[str] = field(default_factory=list)
    span_start_ns: int = 0
    span_end_ns: int = 0
    # generated Triton kernel name -> the launch metadata Inductor passes to the profiler (see
    # _TRITON_LAUNCH_ARGS); the last launch's values, with `launches` counting them
    triton_launches: dict[str, dict[str, Any]] = field(default_factory=dict)
    # what torch.profiler was asked to record, as the trace's top-level keys say (record_shapes, ...)
    recorded: list[str] = field(default_factory=list)


class _Cols:
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


def _int(value: Any, default: int = -1) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def _dim3(value: Any) -> tuple[int, int, int]:
    if isinstance(value, list) and len(value) == 3:
        return _int(value[0], 0), _int(value[1], 0), _int(value[2], 0)
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


class _Collector:
    """Sorts raw events by kind into column lists. The only per-event Python code of an import."""

    def __init__(self) -> None:
        self.ops = _Cols(
            name="s", tid="q", ts="d", dur="d", ext="q", seq="q", fwd_tid="q", shapes="s", dtypes="s", strides="s"
        )
        self.annotations = _Cols(name="s", tid="q", ts="d", dur="d")
        self.python = _Cols(name="s", tid="q", ts="d", dur="d")
        self.kernels = _Cols(
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
        self.transfers = _Cols(name="s", cat="s", bytes="q", device="q", stream="q", ts="d", dur="d", corr="q", ext="q")
        self.api = _Cols(name="s", cat="s", tid="q", ts="d", dur="d", corr="q", ext="q")
        self.memory = _Cols(ts="d", tid="q", dtype="q", device="q", addr="q", bytes="q", alloc="q", reserved="q")
        self.triton_launches: dict[str, dict[str, Any]] = {}
        self.events = 0

    def add_all(self, events: Iterable[dict[str, Any]]) -> None:
        ops, ann, py = self.ops.data, self.annotations.data, self.python.data
        kern, xfer, api, mem = self.kernels.data, self.transfers.data, self.api.data, self.memory.data
        intern = sys.intern
        for ev in events:
            self.events += 1
            ph = ev.get("ph")
            if ph != "X":
                if ph == "i" and ev.get("name") == "[memory]":
                    a = ev.get("args") or {}
                    mem["ts"].append(ev.get("ts", 0.0))
                    mem["tid"].append(_int(ev.get("tid"), 0))
                    mem["dtype"].append(_int(a.get("Device Type"), 0))
                    mem["device"].append(_int(a.get("Device Id"), -1))
                    mem["addr"].append(_int(a.get("Addr"), 0))
                    mem["bytes"].append(_int(a.get("Bytes"), 0))
                    mem["alloc"].append(_int(a.get("Total Allocated"), -1))
                    mem["reserved"].append(_int(a.get("Total Reserved"), -1))
                continue
            cat = ev.get("cat", "")
            name = intern(str(ev.get("name", "")))
            a = ev.get("args") or {}
            ts = ev.get("ts", 0.0)
            dur = ev.get("dur", 0.0)
            if cat == "cpu_op" and not name.startswith(_STEP_PREFIX):
                ops["name"].append(name)
                ops["tid"].append(_int(ev.get("tid"), 0))
                ops["ts"].append(ts)
                ops["dur"].append(dur)
                ops["ext"].append(_int(a.get("External id")))
                ops["seq"].append(_int(a.get("Sequence number")))
                ops["fwd_tid"].append(_int(a.get("Fwd thread id"), 0))
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
                kern["device"].append(_int(a.get("device", ev.get("pid")), 0))
                kern["stream"].append(_int(a.get("stream", ev.get("tid")), 0))
                kern["ts"].append(ts)
                kern["dur"].append(dur)
                kern["grid"].append(_dim3(a.get("grid")))
                kern["block"].append(_dim3(a.get("block")))
                kern["regs"].append(_int(a.get("registers per thread")))
                kern["smem"].append(_int(a.get("shared memory")))
                kern["corr"].append(_int(a.get("correlation")))
                kern["ext"].append(_int(a.get("External id")))
            elif cat in ("gpu_memcpy", "gpu_memset"):
                xfer["name"].append(name)
                xfer["cat"].append(intern(cat))
                xfer["bytes"].append(_int(a.get("bytes"), 0))
                xfer["device"].append(_int(a.get("device", a.get("inDevice", ev.get("pid"))), 0))
                xfer["stream"].append(_int(a.get("stream", ev.get("tid")), 0))
                xfer["ts"].append(ts)
                xfer["dur"].append(dur)
                xfer["corr"].append(_int(a.get("correlation")))
                xfer["ext"].append(_int(a.get("External id")))
            elif cat in ("cuda_runtime", "cuda_driver"):
                api["name"].append(name)
                api["cat"].append(intern(cat))
                api["tid"].append(_int(ev.get("tid"), 0))
                api["ts"].append(ts)
                api["dur"].append(dur)
                api["corr"].append(_int(a.get("correlation")))
                api["ext"].append(_int(a.get("External id")))
            elif cat == "user_annotation" or (cat == "cpu_op" and name.startswith(_STEP_PREFIX)):
                ann["name"].append(name)
                ann["tid"].append(_int(ev.get("tid"), 0))
                ann["ts"].append(ts)
                ann["dur"].append(dur)
            elif cat == "python_function":
                py["name"].append(name)
                py["tid"].append(_int(ev.get("tid"), 0))
                py["ts"].append(ts)
                py["dur"].append(dur)

    def _triton_launch(self, name: str, args: dict[str, Any]) -> None:
        seen = self.triton_launches.setdefault(name, {"launches": 0})
        seen["launches"] += 1
        for key in _TRITON_LAUNCH_ARGS:
            if key in args:
                seen[key] = args[key]


class _Clock:
    """Kineto's float microseconds -> int64 nanoseconds on the trace's absolute clock."""

    def __init__(self, base_ns: int) -> None:
        self.base_ns = base_ns

    def span(self, cols: _Cols) -> tuple[I64Array, I64Array]:
        start = self.base_ns + np.rint(cols.floats("ts") * 1000.0).astype(np.int64)
        dur = np.maximum(np.rint(cols.floats("dur") * 1000.0).astype(np.int64), 0)
        return start, start + dur

    def at(self, cols: _Cols) -> I64Array:
        return self.base_ns + np.rint(cols.floats("ts") * 1000.0).astype(np.int64)


class _ThreadNesting:
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


def _propagate_down(values: I64Array, parent: I64Array, depth: I64Array, where_unset: Any) -> I64Array:
    """Copy each op's value to descendants whose own value is unset, level by level."""
    out = values.copy()
    for d in range(1, int(depth.max(initial=0)) + 1):
        level = np.flatnonzero(depth == d)
        take = level[where_unset(out[level])]
        out[take] = out[parent[take]]
    return out


class _FrameTable:
    """Interns call-path nodes (parent, file, line, function) into the frames table."""

    def __init__(self) -> None:
        self.rows: list[tuple[int, int, str, int, str, int, bool]] = []
        self.index: dict[tuple[int, str, int, str], int] = {}

    def add(self, parent: int, file: str, line: int, function: str, is_user: bool) -> int:
        key = (parent, file, line, function)
        found = self.index.get(key)
        if found is not None:
            return found
        depth = self.rows[parent][5] + 1 if parent >= 0 else 0
        frame_id = len(self.rows)
        self.rows.append((frame_id, parent, file, line, function, depth, is_user))
        self.index[key] = frame_id
        return frame_id

    def table(self) -> pa.Table:
        cols: list[Any] = list(zip(*self.rows, strict=True)) if self.rows else [[] for _ in range(7)]
        return pa.table(dict(zip(TABLES["frames"].names, cols, strict=True)), schema=TABLES["frames"])


def build_timeline(
    events: Iterable[dict[str, Any]],
    base_time_ns_of: Any,
    callsites: Callsites | None = None,
) -> tuple[dict[str, pa.Table], BuildReport]:
    """Build every timeline table. `base_time_ns_of()` is called after the events are consumed."""
    col = _Collector()
    col.add_all(events)
    report = BuildReport(events=col.events, triton_launches=col.triton_launches)
    report.base_time_ns = int(base_time_ns_of())
    clock = _Clock(report.base_time_ns)

    # ---- annotations: steps, clock syncs, scopes
    ann_start, ann_end = clock.span(col.annotations)
    ann_names = col.annotations.data["name"]
    ann_tid = col.annotations.ints("tid")
    is_step = np.array([n.startswith(_STEP_PREFIX) for n in ann_names], dtype=bool)
    is_sync = np.array([n.startswith(SYNC_PREFIX) for n in ann_names], dtype=bool)
    is_scope = ~(is_step | is_sync)
    sync_starts = {ann_names[i]: int(ann_start[i]) for i in np.flatnonzero(is_sync)}

    # ---- ops
    op_start, op_end = clock.span(col.ops)
    op_tid = col.ops.ints("tid")
    order = np.lexsort((-op_end, op_tid, op_start))
    op_start, op_end, op_tid = op_start[order], op_end[order], op_tid[order]
    op_names = [col.ops.data["name"][i] for i in order]
    op_ext = col.ops.ints("ext")[order]
    op_seq = col.ops.ints("seq")[order]
    op_fwd_tid = col.ops.ints("fwd_tid")[order]
    n_ops = len(op_names)
    op_nesting = _ThreadNesting(op_tid, op_start, op_end)
    parent, depth = op_nesting.parent, op_nesting.depth
    duration = op_end - op_start
    child_time = np.zeros(n_ops, dtype=np.int64)
    has_parent = parent >= 0
    np.add.at(child_time, parent[has_parent], duration[has_parent])
    self_duration = np.maximum(duration - child_time, 0)
    top = _propagate_down(np.arange(n_ops, dtype=np.int64), parent, depth, lambda v: np.ones(len(v), bool))
    own_backward = (op_fwd_tid > 0) | np.array([n.startswith(_BACKWARD_PREFIX) for n in op_names], dtype=bool)
    is_backward = _propagate_down(own_backward.astype(np.int64), parent, depth, lambda v: v == 0).astype(bool)

    # Sequence numbers are shared by every op run while the counter stood still (e.g. init-time
    # `detach`), so, as torch itself does, a backward node's forward op is the latest forward op with
    # its sequence number that started before it.
    forward = np.full(n_ops, -1, dtype=np.int64)
    fwd_ops = np.flatnonzero((~is_backward) & (op_seq >= 0))
    if len(fwd_ops):
        by_seq = fwd_ops[np.lexsort((op_start[fwd_ops], op_seq[fwd_ops]))]
        keys_seq, keys_start = op_seq[by_seq], op_start[by_seq]
        bwd = np.flatnonzero(own_backward & (op_seq >= 0))
        for i in bwd:
            lo = np.searchsorted(keys_seq, op_seq[i], side="left")
            hi = np.searchsorted(keys_seq, op_seq[i], side="right")
            if hi > lo:
                j = lo + np.searchsorted(keys_start[lo:hi], op_start[i], side="left") - 1
                if j >= lo:
                    forward[i] = by_seq[j]
    forward = np.where(is_backward, _propagate_down(forward, parent, depth, lambda v: v < 0), -1)

    # ---- Python call paths
    frames = _FrameTable()
    top_frame = np.full(n_ops, -1, dtype=np.int64)
    top_source = np.zeros(n_ops, dtype=np.int8)  # index into source_names below
    is_top = parent < 0
    mid = op_start + (op_end - op_start) // 2
    sidecar_scopes: list[list[Any]] = []
    offset_ok = False
    shifted = callsites
    if callsites is not None and len(callsites.frames) > 0:
        found = clock_offset(callsites.syncs, sync_starts)
        offset = found[0] if found else None
        report.clock_offset_ns = offset
        report.clock_uncertainty_ns = found[1] if found else None
        if offset is None:
            report.warnings.append(
                "the clock-sync markers were not found in the trace, so Python lines could not be joined"
            )
        else:
            offset_ok = True
            shifted = callsites.shifted(offset)
            sidecar_scopes = shifted.scopes
            for row in shifted.frames:
                frames.add(int(row[1]), str(row[2]), int(row[3]), str(row[4]), bool(row[6]))
            # A native record hugs its op, so an op of a microsecond can fall just outside it by the clock
            # mapping's error; a Python record spans the whole call, and an op outside every one is not
            # from a recorded call.
            tolerance = min(int(found[1]) + 1_000, 50_000) if found and callsites.recorder == "native" else 0
            _join_callsites(shifted, op_tid, mid, is_top & ~is_backward, top_frame, top_source, tolerance_ns=tolerance)
            # A top-level op no call covers (Dynamo's `dynamo` range around a compilation, say) takes the
            # call covering its earliest covered descendant.
            unresolved = ~is_backward & (top_frame[top] < 0) & ~is_top
            inner_frame = np.full(n_ops, -1, dtype=np.int64)
            inner_source = np.zeros(n_ops, dtype=np.int8)
            _join_callsites(shifted, op_tid, mid, unresolved, inner_frame, inner_source)
            for i in np.flatnonzero(inner_frame >= 0):  # op ids are in start order: the first hit is earliest
                if top_frame[top[i]] < 0:
                    top_frame[top[i]] = inner_frame[i]
                    top_source[top[i]] = 1
    elif len(col.python):
        report.warnings.append(
            "Python paths come from the trace's with_stack ranges, which name each function by its first line, "
            "not by the line that made the call"
        )
        _join_python_stacks(col.python, clock, frames, op_tid, op_start, is_top, top_frame, top_source)
    # Backward ops: the forward op's path beats the `.backward()` call line.
    bwd_top = np.flatnonzero(is_top & is_backward & (forward >= 0))
    fwd_frames = top_frame[top[forward[bwd_top]]]
    usable = fwd_frames >= 0
    top_frame[bwd_top[usable]] = fwd_frames[usable]
    top_source[bwd_top[usable]] = 2
    # What is still without a path (autograd work with no forward op, such as AccumulateGrad) takes the
    # torch call that was running on the main Python thread at the time: usually `loss.backward()`.
    if callsites is not None and offset_ok:
        _join_callsites(
            shifted, op_tid, mid, is_top & is_backward & (top_frame < 0), top_frame, top_source, any_thread=True
        )
    op_frame = top_frame[top]
    source_names = np.array(["none", "callsite", "forward", "stack", "containment"])
    op_frame_source = source_names[top_source[top]]

    # ---- scopes
    scope_idx = np.flatnonzero(is_scope)
    sc_start, sc_end, sc_tid = ann_start[scope_idx], ann_end[scope_idx], ann_tid[scope_idx]
    sc_order = np.lexsort((-sc_end, sc_tid, sc_start))
    scope_idx, sc_start, sc_end, sc_tid = (
        scope_idx[sc_order],
        sc_start[sc_order],
        sc_end[sc_order],
        sc_tid[sc_order],
    )
    sc_names = [ann_names[i] for i in scope_idx]
    scope_nesting = _ThreadNesting(sc_tid, sc_start, sc_end)
    sc_frame, sc_insert = _match_sidecar_scopes(sc_names, sc_tid, sc_start, sc_end, sidecar_scopes)
    op_scope = scope_nesting.innermost_per_thread(op_tid, op_start)
    if len(sc_tid):
        main_scope_tid = int(np.bincount(np.unique(sc_tid, return_inverse=True)[1]).argmax())
        main_tid = int(np.unique(sc_tid)[main_scope_tid])
        missing = (op_scope < 0) & is_backward
        op_scope[missing] = scope_nesting.innermost(main_tid, op_start[missing])

    # ---- steps
    step_idx = np.flatnonzero(is_step)
    st_start, st_end = ann_start[step_idx], ann_end[step_idx]
    st_number = np.array([_int(ann_names[i][len(_STEP_PREFIX) :], -1) for i in step_idx], dtype=np.int64)
    st_order = np.argsort(st_start, kind="stable")
    st_start, st_end, st_number = st_start[st_order], st_end[st_order], st_number[st_order]
    step_nesting = nest(st_start, st_end)

    def step_at(times: I64Array) -> I64Array:
        return take(st_number, step_nesting.innermost_at(times))

    op_step = step_at(op_start)
    # Which steps ran with the capture off (to time the program un-profiled) and each step's time between
    # tenprof's own clock reads; traces from elsewhere have neither: on, unknown.
    if callsites is not None:
        st_capture_on, st_own_ns = callsites.step_marks(st_number)
    else:
        st_capture_on, st_own_ns = np.ones(len(st_number), dtype=bool), np.full(len(st_number), -1, dtype=np.int64)

    # ---- API calls
    api_start, api_end = clock.span(col.api)
    api_order = np.argsort(api_start, kind="stable")
    api_start, api_end = api_start[api_order], api_end[api_order]
    api_tid = col.api.ints("tid")[api_order]
    api_corr = col.api.ints("corr")[api_order]
    ext_to_op = {int(e): i for i, e in enumerate(op_ext) if e >= 0}
    api_op = _ops_of(col.api.ints("ext")[api_order], ext_to_op)
    unresolved = api_op < 0
    api_op[unresolved] = op_nesting.innermost_per_thread(api_tid[unresolved], api_start[unresolved])
    corr_to_api: dict[int, int] = {}
    for position, corr in enumerate(api_corr.tolist()):
        if corr >= 0:
            corr_to_api.setdefault(corr, position)

    # ---- kernels
    k_start, k_end = clock.span(col.kernels)
    k_order = np.argsort(k_start, kind="stable")
    k_start, k_end = k_start[k_order], k_end[k_order]
    k_corr = col.kernels.ints("corr")[k_order]
    k_api = np.array([corr_to_api.get(int(c), -1) for c in k_corr], dtype=np.int64)
    k_op = _ops_of(col.kernels.ints("ext")[k_order], ext_to_op)
    fallback = (k_op < 0) & (k_api >= 0)
    k_op[fallback] = api_op[k_api[fallback]]
    launch_time = np.where(k_api >= 0, take(api_start, k_api), k_start)
    k_ordinal = _ordinal_within(k_op, launch_time)
    grid = np.array(col.kernels.data["grid"], dtype=np.int64).reshape(-1, 3)[k_order]
    block = np.array(col.kernels.data["block"], dtype=np.int64).reshape(-1, 3)[k_order]

    # ---- transfers
    t_start, t_end = clock.span(col.transfers)
    t_order = np.argsort(t_start, kind="stable")
    t_start, t_end = t_start[t_order], t_end[t_order]
    t_names = [col.transfers.data["name"][i] for i in t_order]
    t_cat = [col.transfers.data["cat"][i] for i in t_order]
    t_bytes = col.transfers.ints("bytes")[t_order]
    t_corr = col.transfers.ints("corr")[t_order]
    t_op = _ops_of(col.transfers.ints("ext")[t_order], ext_to_op)
    t_api = np.array([corr_to_api.get(int(c), -1) for c in t_corr], dtype=np.int64)
    fallback = (t_op < 0) & (t_api >= 0)
    t_op[fallback] = api_op[t_api[fallback]]
    t_dur = t_end - t_start
    parsed = [_MEMCPY_NAME.match(n) for n in t_names]

    # ---- memory
    m_ts = clock.at(col.memory)
    m_tid = col.memory.ints("tid")
    m_op = op_nesting.innermost_per_thread(m_tid, m_ts)

    starts_all = [a for a in (op_start, k_start, t_start, api_start, ann_start) if len(a)]
    ends_all = [a for a in (op_end, k_end, t_end, api_end, ann_end) if len(a)]
    if starts_all:
        report.span_start_ns = int(min(a.min() for a in starts_all))
        report.span_end_ns = int(max(a.max() for a in ends_all))

    tables = {
        "ops": pa.table(
            {
                "op_id": np.arange(n_ops, dtype=np.int64),
                "name": op_names,
                "thread_id": op_tid,
                "start_ns": op_start,
                "end_ns": op_end,
                "duration_ns": duration,
                "self_duration_ns": self_duration,
                "parent_op_id": parent,
                "top_op_id": top,
                "depth": depth.astype(np.int32),
                "sequence_nr": op_seq,
                "is_backward": is_backward,
                "forward_op_id": forward,
                "input_shapes": [col.ops.data["shapes"][i] for i in order],
                "input_dtypes": [col.ops.data["dtypes"][i] for i in order],
                "input_strides": [col.ops.data["strides"][i] for i in order],
                "frame_id": op_frame,
                "frame_source": op_frame_source.tolist(),
                "scope_id": op_scope,
                "step": op_step,
                "external_id": op_ext,
            }
        ),
        "kernels": pa.table(
            {
                "kernel_id": np.arange(len(k_start), dtype=np.int64),
                "name": [col.kernels.data["name"][i] for i in k_order],
                "device": col.kernels.ints("device")[k_order].astype(np.int32),
                "stream": col.kernels.ints("stream")[k_order],
                "start_ns": k_start,
                "end_ns": k_end,
                "duration_ns": k_end - k_start,
                "grid_x": grid[:, 0].astype(np.int32),
                "grid_y": grid[:, 1].astype(np.int32),
                "grid_z": grid[:, 2].astype(np.int32),
                "block_x": block[:, 0].astype(np.int32),
                "block_y": block[:, 1].astype(np.int32),
                "block_z": block[:, 2].astype(np.int32),
                "registers_per_thread": col.kernels.ints("regs")[k_order].astype(np.int32),
                "shared_memory_bytes": col.kernels.ints("smem")[k_order],
                "correlation_id": k_corr,
                "op_id": k_op,
                "api_call_id": k_api,
                "ordinal_in_op": k_ordinal.astype(np.int32),
            }
        ),
        "transfers": pa.table(
            {
                "transfer_id": np.arange(len(t_start), dtype=np.int64),
                "name": t_names,
                "kind": ["memset" if c == "gpu_memset" else "memcpy" for c in t_cat],
                "direction": [m.group(1) if m else "" for m in parsed],
                "src_memory": [m.group(2) if m else "" for m in parsed],
                "dst_memory": [m.group(3) if m else "" for m in parsed],
                "bytes": t_bytes,
                "device": col.transfers.ints("device")[t_order].astype(np.int32),
                "stream": col.transfers.ints("stream")[t_order],
                "start_ns": t_start,
                "end_ns": t_end,
                "duration_ns": t_dur,
                "bandwidth_gbps": np.where(t_dur > 0, t_bytes / np.maximum(t_dur, 1), 0.0),
                "correlation_id": t_corr,
                "op_id": t_op,
            }
        ),
        "api_calls": pa.table(
            {
                "api_call_id": np.arange(len(api_start), dtype=np.int64),
                "name": [col.api.data["name"][i] for i in api_order],
                "api": ["driver" if col.api.data["cat"][i] == "cuda_driver" else "runtime" for i in api_order],
                "thread_id": api_tid,
                "start_ns": api_start,
                "end_ns": api_end,
                "duration_ns": api_end - api_start,
                "correlation_id": api_corr,
                "op_id": api_op,
            }
        ),
        "frames": frames.table(),
        "scopes": pa.table(
            {
                "scope_id": np.arange(len(scope_idx), dtype=np.int64),
                "name": sc_names,
                "thread_id": sc_tid,
                "start_ns": sc_start,
                "end_ns": sc_end,
                "parent_scope_id": scope_nesting.parent,
                "frame_id": sc_frame,
                "insert_depth": sc_insert.astype(np.int32),
            }
        ),
        "steps": pa.table(
            {
                "step": st_number,
                "start_ns": st_start,
                "end_ns": st_end,
                "duration_ns": st_end - st_start,
                # A step is complete when tenprof.step() closed it, not the end of profiling; for traces
                # from elsewhere, torch's schedule closes every recorded step.
                "complete": st_number < callsites.step_calls
                if callsites is not None and callsites.step_calls is not None
                else np.ones(len(st_number), dtype=bool),
                "capture_on": st_capture_on,
                "own_duration_ns": st_own_ns,
            }
        ),
        "memory": pa.table(
            {
                "ts_ns": m_ts,
                "device_type": ["cuda" if t == 1 else "cpu" for t in col.memory.data["dtype"]],
                "device": col.memory.ints("device").astype(np.int32),
                "address": col.memory.ints("addr"),
                "bytes": col.memory.ints("bytes"),
                "total_allocated_bytes": col.memory.ints("alloc"),
                "total_reserved_bytes": col.memory.ints("reserved"),
                "op_id": m_op,
            }
        ),
    }
    tables = {name: t.select(TABLES[name].names).cast(TABLES[name]) for name, t in tables.items()}
    return tables, report


def _ops_of(ext_ids: I64Array, ext_to_op: dict[int, int]) -> I64Array:
    return np.array([ext_to_op.get(int(e), -1) for e in ext_ids], dtype=np.int64)


def _ordinal_within(groups: I64Array, times: I64Array) -> I64Array:
    """0-based rank of each item among the items of its group, by time."""
    n = len(groups)
    out = np.zeros(n, dtype=np.int64)
    if n == 0:
        return out
    order = np.lexsort((times, groups))
    g = groups[order]
    new_group = np.empty(n, dtype=bool)
    new_group[0] = True
    new_group[1:] = g[1:] != g[:-1]
    group_start = np.maximum.accumulate(np.where(new_group, np.arange(n), 0))
    out[order] = np.arange(n) - group_start
    return out


def _join_callsites(
    calls: Callsites | None,
    op_tid: I64Array,
    op_mid: I64Array,
    wanted: np.ndarray[Any, np.dtype[np.bool_]],
    top_frame: I64Array,
    top_source: np.ndarray[Any, np.dtype[np.int8]],
    any_thread: bool = False,
    tolerance_ns: int = 0,
) -> None:
    """Ops in `wanted` take the frame of the torch API call covering their midpoint: on the same thread,
    or (any_thread) on the thread that made the most calls, the main Python thread. An op no call covers
    takes the nearest call within `tolerance_ns` (the clock mapping's uncertainty; given for the native
    recorder's records, which hug their op, so an op of a microsecond can fall just outside its own)."""
    if calls is None or len(calls.call_thread) == 0:
        return
    if any_thread:
        threads, counts = np.unique(calls.call_thread, return_counts=True)
        groups = [(np.flatnonzero(wanted), np.flatnonzero(calls.call_thread == threads[counts.argmax()]))]
        source = 4
    else:
        groups = [
            (np.flatnonzero(wanted & (op_tid == tid)), np.flatnonzero(calls.call_thread == tid))
            for tid in np.unique(op_tid[wanted])
        ]
        source = 1
    for sel, mine in groups:
        if len(mine) == 0 or len(sel) == 0:
            continue
        # Records nest: a compilation (recorded through Dynamo's callbacks) contains the compiler's own
        # torch calls. The innermost record covering the op's midpoint is the one that ran it.
        covering = nest(calls.call_start[mine], calls.call_end[mine]).innermost_at(op_mid[sel])
        if tolerance_ns > 0 and (covering < 0).any():
            covering = np.where(covering >= 0, covering, _nearest(calls, mine, op_mid[sel], tolerance_ns))
        ok = covering >= 0
        top_frame[sel[ok]] = calls.call_frame[mine[covering[ok]]]
        top_source[sel[ok]] = source


def _nearest(calls: Callsites, mine: I64Array, times: I64Array, tolerance_ns: int) -> I64Array:
    """For each time, the index into `mine` of the call nearest to it (by its distance to the call's
    interval) when that is at most `tolerance_ns`, else -1."""
    start, end = calls.call_start[mine], calls.call_end[mine]
    order = np.argsort(start, kind="stable")
    after = np.searchsorted(start[order], times, side="right")  # first call starting after each time
    best = np.full(len(times), -1, dtype=np.int64)
    best_distance = np.full(len(times), tolerance_ns + 1, dtype=np.int64)
    for candidate in (after - 1, after):
        valid = (candidate >= 0) & (candidate < len(order))
        index = order[np.clip(candidate, 0, len(order) - 1)]
        distance = np.maximum(np.maximum(start[index] - times, times - end[index]), 0)
        better = valid & (distance < best_distance)
        best[better], best_distance[better] = index[better], distance[better]
    return best


def _join_python_stacks(
    python: _Cols,
    clock: _Clock,
    frames: _FrameTable,
    op_tid: I64Array,
    op_start: I64Array,
    is_top: np.ndarray[Any, np.dtype[np.bool_]],
    top_frame: I64Array,
    top_source: np.ndarray[Any, np.dtype[np.int8]],
) -> None:
    """Traces recorded with `with_stack`: python_function ranges nest into call paths.

    Kineto names a Python function by its first line, not the line of the call; the build warns of it.
    """
    p_start, p_end = clock.span(python)
    p_tid = python.ints("tid")
    nesting = _ThreadNesting(p_tid, p_start, p_end)
    order = np.lexsort((nesting.depth, p_start))  # parents before children
    node = np.full(len(p_start), -1, dtype=np.int64)
    names = python.data["name"]
    for i in order:
        match = _PY_FUNCTION.match(names[i])
        file, line, func = (match.group(1), int(match.group(2)), match.group(3)) if match else ("", 0, names[i])
        par = nesting.parent[i]
        node[i] = frames.add(int(node[par]) if par >= 0 else -1, file, line, func, is_user_file(file) and bool(file))
    sel = np.flatnonzero(is_top)
    inner = nesting.innermost_per_thread(op_tid[sel], op_start[sel])
    ok = inner >= 0
    top_frame[sel[ok]] = node[inner[ok]]
    top_source[sel[ok]] = 3


def _match_sidecar_scopes(
    names: list[str], tids: I64Array, starts: I64Array, ends: I64Array, sidecar: list[list[Any]]
) -> tuple[I64Array, I64Array]:
    """Give trace scopes the call path recorded by tenprof.scope (same name and thread, nearest start)."""
    frame = np.full(len(names), -1, dtype=np.int64)
    insert = np.full(len(names), -1, dtype=np.int64)
    if not sidecar:
        return frame, insert
    grouped: dict[tuple[str, int], list[list[Any]]] = {}
    for row in sidecar:
        grouped.setdefault((str(row[0]), int(row[1])), []).append(row)
    by_key: dict[tuple[str, int], tuple[list[list[Any]], I64Array]] = {}
    for key, rows in grouped.items():
        rows.sort(key=lambda r: int(r[2]))
        by_key[key] = (rows, np.fromiter((int(r[2]) for r in rows), dtype=np.int64, count=len(rows)))
    # tenprof's perf-clock bracket (before enter .. after exit) contains the trace's range, up to the
    # clock offset's error (microseconds); the bracket that overlaps the range most is its own, even
    # when the same scope is entered again microseconds later.
    for i, (name, tid, start, end) in enumerate(zip(names, tids, starts, ends, strict=True)):
        entry = by_key.get((name, int(tid)))
        if entry is None:
            continue
        rows, row_starts = entry
        j = int(np.searchsorted(row_starts, start))
        best, best_overlap = -1, -1  # >= 0: a zero-length range inside its bracket still matches
        for k in range(max(j - 2, 0), min(j + 2, len(rows))):
            overlap = min(int(end), int(rows[k][3])) - max(int(start), int(rows[k][2]))
            if overlap > best_overlap:
                best, best_overlap = k, overlap
        if best >= 0:
            frame[i] = int(rows[best][4])
            insert[i] = int(rows[best][5])
    return frame, insert
