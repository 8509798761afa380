"""Kineto events (+ tenprof's call-site sidecar when present) -> the timeline tables of a profile.

The joins, each stated once here:
- op nesting: time containment per thread (`intervals.nest`); op_id = rank by (start, thread, -end).
- kernel/transfer/API call -> op: Kineto's "External id" (the innermost record_function active at the
  launch); when that id is not an op, or names one not running on the call's thread when it was made (some
  builds fill it with other numbers), the launching API call's innermost enclosing op on its thread.
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
- steps and scopes are cut to the profiler's recorded window where the trace says what it was (Kineto's
  `Trace` range and "Record Window End"): a range reaching past it (a step annotation of 13.34 s in a
  window of 0.355 s) holds time that was not recorded, which the findings would judge as idle. What was
  cut is said in the report's warnings.
- user metrics: a scope's numbers (tenprof.scope(..., flops=...)) come with the sidecar record matched to
  it; a Triton launch's (its launch_metadata) with the launch record whose "(user kernel)" op it got.
- GPU samples: NVML's reads, their perf-clock times moved onto the trace clock like the other records.

`build_timeline` runs the phases in that order, each a function returning its arrays (a frozen dataclass):
annotations, ops, Python call paths (tenprof.importers.call_paths), scopes, steps, API calls, kernels,
transfers; then builds each table with its own function (every table of the pass, empty when the
recording has nothing for it). Sorting the events into columns is
tenprof.importers.timeline_columns.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import numpy.typing as npt
import orjson
import pyarrow as pa

from tenprof.core.demangle import demangled_all
from tenprof.core.inductor import inside_autotuning
from tenprof.core.intervals import I64Array, IdIndex, coverage, nest, rank_within, take
from tenprof.core.rawfiles import GPU_FLOAT_COLUMNS, SYNC_PREFIX
from tenprof.core.units import duration
from tenprof.importers.call_paths import CallPaths, OpLinks, join_call_paths, recorded_paths, sidecar_scope_rows
from tenprof.importers.callsites import Callsites, clock_offset
from tenprof.importers.timeline_columns import (
    COLLECTIVE_ARGS,
    STEP_PREFIX,
    Clock,
    Collector,
    Cols,
    ThreadNesting,
    as_int,
    in_order,
    string_column,
)
from tenprof.importers.user_launches import UserLaunches, add_user_launch_ops
from tenprof.store.schema import TABLES

_BACKWARD_PREFIX = "autograd::engine::evaluate_function"
_MEMCPY_NAME = re.compile(r"Memcpy (\w+) \(([\w ]+?) -> ([\w ]+?)\)")

_Bools = np.ndarray[Any, np.dtype[np.bool_]]


@dataclass
class BuildReport:
    """What the build saw and could not do; goes into meta.json and the report."""

    events: int = 0
    base_time_ns: int = 0
    device_properties: list[dict[str, Any]] = field(default_factory=list)
    clock_offset_ns: int | None = None
    clock_uncertainty_ns: int | None = None
    warnings: list[str] = field(default_factory=list)
    # of the warnings, those saying what of the trace was left out or changed: the pass is then partial
    changed: list[str] = field(default_factory=list)
    span_start_ns: int | None = None  # None when the trace has no ranges
    span_end_ns: int | None = None
    # generated Triton kernel name -> the launch metadata Inductor passes to the profiler (see
    # timeline_columns._TRITON_LAUNCH_ARGS); the last launch's values, with `launches` counting them
    triton_launches: dict[str, dict[str, Any]] = field(default_factory=dict)
    # what torch.profiler was asked to record, as the trace's top-level keys say (record_shapes, ...)
    recorded: list[str] = field(default_factory=list)
    rank: int | None = None  # the rank the trace says it is (Kineto's distributedInfo), None when it says none
    # whether the steps run with the capture off have their GPU activity in the trace (None: no sidecar)
    timed_steps_gpu: bool | None = None
    input_sampling: dict[str, Any] | None = None  # the sidecar's (importers.callsites), None where it has none
    op_copy: dict[str, Any] | None = None  # likewise
    # the allocations that failed ("[OutOfMemory]" events), in trace order: time (ns, the trace's clock),
    # device ('cuda:0'), bytes asked for, the allocator's allocated and reserved totals then (-1: not said)
    failed_allocations: list[FailedAllocation] = field(default_factory=list)

    @property
    def span_ns(self) -> int | None:
        """The profiled window's length, None when the trace had no ranges to measure it by."""
        if self.span_start_ns is None or self.span_end_ns is None:
            return None
        return self.span_end_ns - self.span_start_ns


def build_timeline(
    col: Collector,
    base_time_ns: int,
    write: Callable[[str, pa.Table], None],
    callsites: Callsites | None = None,
    sources_as_of: float | None = None,
) -> BuildReport:
    """Build every timeline table from the trace's events sorted into columns (`TraceStream.collect`) and
    the trace's base time, handing each to `write` as soon as it is built (the largest first, and its
    columns in `col` emptied after it: a large trace's tables are not all held at once; `col` is used up).
    `sources_as_of` (epoch seconds) is when the trace was recorded: source lines changed since are not
    quoted."""
    report = BuildReport(events=col.events, triton_launches=col.triton_launches)
    report.base_time_ns = int(base_time_ns)
    clock = Clock(report.base_time_ns)
    report.failed_allocations = _failed_allocations(col.failed, clock)

    ann, cut = _cut_to_window(_annotations(col.annotations, clock), _window(col, clock))
    if cut:
        report.warnings.append(cut)
        report.changed.append(cut)
    # mangled kernel names (Kineto leaves some so) read as C++, for the launches' own ops too (user_launches)
    col.kernels.data["name"] = demangled_all(col.kernels.data["name"])
    callsites, launched = _with_user_launch_ops(col, clock, ann, callsites)
    ops = _ops(col.ops, clock)
    paths = join_call_paths(ops.links(), ann.sync_starts, col.python, clock, callsites, sources_as_of)
    report.clock_offset_ns, report.clock_uncertainty_ns = paths.clock_offset_ns, paths.clock_uncertainty_ns
    report.timed_steps_gpu = callsites.timed_steps_gpu if callsites is not None else None
    report.input_sampling = (callsites.input_sampling or None) if callsites is not None else None
    report.op_copy = (callsites.op_copy or None) if callsites is not None else None
    report.warnings.extend(paths.warnings)
    report.warnings.extend(_sidecar_warnings(callsites))
    scopes = _scopes(ann, ops, paths.sidecar_scopes)
    steps = _steps(ann, ops, callsites, paths.clock_offset_ns)
    api = _api_calls(col.api, clock, ops)
    kernels = _kernels(col.kernels, clock, ops, api)
    transfers = _transfers(col.transfers, clock, ops, api)
    _record_span(
        report,
        (ops.start, kernels.start, transfers.start, api.start, ann.start),
        (ops.end, kernels.end, transfers.end, api.end, ann.end),
    )
    tables: dict[str, Callable[[], pa.Table]] = {
        "ops": lambda: _ops_table(col.ops, ops, paths, scopes.op_scope, steps.op_step),
        "collectives": lambda: _collectives_table(col.kernels, kernels),  # before the kernels' columns go
        "kernels": lambda: _kernels_table(col.kernels, kernels),
        "transfers": lambda: _transfers_table(col.transfers, transfers),
        "api_calls": lambda: _api_calls_table(col.api, api),
        "frames": lambda: paths.frames,
        "scopes": lambda: _scopes_table(scopes),
        "steps": lambda: _steps_table(steps),
        "memory": lambda: _memory_table(col.memory, clock, ops.nesting),
        "host_samples": lambda: _host_samples_table(callsites, paths.clock_offset_ns, ops.nesting, steps),
        "user_metrics": lambda: _user_metrics_table(scopes, paths.sidecar_scopes, callsites, launched, ops),
        "gpu_samples": lambda: _gpu_samples_table(callsites, paths.clock_offset_ns, ann.sync_starts),
    }
    emptied = {"ops": col.ops, "kernels": col.kernels, "transfers": col.transfers, "api_calls": col.api}
    for name, build in tables.items():
        write(name, build().select(TABLES[name].names).cast(TABLES[name]))
        if name in emptied:
            emptied[name].data.clear()
    return report


def _with_user_launch_ops(
    col: Collector, clock: Clock, ann: _Annotations, callsites: Callsites | None
) -> tuple[Callsites | None, UserLaunches]:
    """Give kernels launched outside every op an op of their own (importers.user_launches); the script's
    own launch records that hold one join the call-site records, so those ops get their lines."""
    found = clock_offset(callsites.syncs, ann.sync_starts) if callsites is not None and callsites.frames else None
    added = add_user_launch_ops(col, clock, callsites, found[0] if found else None)
    if callsites is None or not len(added.records[0]):
        return callsites, added
    return callsites.with_calls(*added.records), added


def _sidecar_warnings(callsites: Callsites | None) -> list[str]:
    """What the capture could not record that the report should say: the GPUs' clocks, and a Triton
    kernel's launch_metadata function that raised."""
    if callsites is None:
        return []
    warnings = [callsites.gpu_warning] if callsites.gpu_warning else []
    if callsites.launch_metrics_error:
        warnings.append(
            "a Triton kernel's launch_metadata function raised, so some launches have no numbers: "
            + callsites.launch_metrics_error
        )
    return warnings


def _record_span(report: BuildReport, starts: Iterable[I64Array], ends: Iterable[I64Array]) -> None:
    """The profile's time span: the earliest start and latest end of every range of the trace."""
    starts_all = [a for a in starts if len(a)]
    ends_all = [a for a in ends if len(a)]
    if starts_all:
        report.span_start_ns = int(min(a.min() for a in starts_all))
        report.span_end_ns = int(max(a.max() for a in ends_all))


# ---- annotations: steps, clock syncs, scopes


@dataclass(frozen=True)
class _Annotations:
    """Every annotation range (user_annotation and ProfilerStep#N), in trace order, sorted into kinds."""

    names: list[str]
    tid: I64Array
    start: I64Array
    end: I64Array
    is_step: _Bools
    is_scope: _Bools
    sync_starts: dict[str, int]  # tenprof's clock-sync marker name -> its start


def _annotations(cols: Cols, clock: Clock) -> _Annotations:
    """The annotation columns -> their ranges, which are steps, which scopes, and the clock-sync starts."""
    start, end = clock.span(cols)
    names = cols.data["name"]
    is_step = np.array([n.startswith(STEP_PREFIX) for n in names], dtype=bool)
    is_sync = np.array([n.startswith(SYNC_PREFIX) for n in names], dtype=bool)
    return _Annotations(
        names=names,
        tid=cols.ints("tid"),
        start=start,
        end=end,
        is_step=is_step,
        is_scope=~(is_step | is_sync),
        sync_starts={names[i]: int(start[i]) for i in np.flatnonzero(is_sync)},
    )


def _window(col: Collector, clock: Clock) -> tuple[int | None, int | None]:
    """The profiler's recorded window on the trace clock, each end None where the trace does not say."""

    def at(us: float | None) -> int | None:
        return None if us is None else clock.base_ns + round(us * 1000.0)

    return at(col.window_start), at(col.window_end)


def _cut_to_window(ann: _Annotations, window: tuple[int | None, int | None]) -> tuple[_Annotations, str]:
    """Steps and scopes cut to the recorded window (see the module), and a line saying what was cut ('' when
    nothing was). Clock-sync markers are left as they are: they place tenprof's own records."""
    lo, hi = window
    if lo is None and hi is None:
        return ann, ""
    bounds = np.iinfo(np.int64)
    ranges = ann.is_step | ann.is_scope
    low, high = lo if lo is not None else bounds.min, hi if hi is not None else bounds.max
    start = np.where(ranges, np.clip(ann.start, low, high), ann.start)
    end = np.where(ranges, np.clip(ann.end, low, high), ann.end)
    cut = (start != ann.start) | (end != ann.end)
    if not cut.any():
        return ann, ""
    was = ann.end - ann.start
    longest = int(np.flatnonzero(cut)[np.argmax(was[cut])])
    span = f" ({duration(hi - lo)})" if lo is not None and hi is not None else ""
    line = (
        f"{int(cut.sum())} step or scope range(s) reached outside the profiler's recorded window{span} and "
        f"were cut to it; the longest, {ann.names[longest]}, from {duration(int(was[longest]))} to "
        f"{duration(int(end[longest] - start[longest]))}"
    )
    return replace(ann, start=start, end=end), line


# ---- ops


@dataclass(frozen=True)
class _Ops:
    """The ops in op_id order (start, thread, longest first), nested per thread, with their backward links."""

    order: I64Array  # op_id -> row of the op columns
    names: list[str]
    tid: I64Array
    start: I64Array
    end: I64Array
    ext: I64Array
    seq: I64Array
    nesting: ThreadNesting
    self_duration: I64Array
    top: I64Array  # the top-level op of each op (itself when top-level)
    is_backward: _Bools
    forward: I64Array  # a backward op's forward op, else -1
    ext_to_op: IdIndex  # Kineto's External id -> op_id (the last op with it)

    @property
    def parent(self) -> I64Array:
        return self.nesting.parent

    @property
    def depth(self) -> I64Array:
        return self.nesting.depth

    def links(self) -> OpLinks:
        """What the Python call-path join reads of the ops."""
        return OpLinks(self.tid, self.start, self.end, self.parent, self.top, self.is_backward, self.forward)


def _ops(cols: Cols, clock: Clock) -> _Ops:
    """The op columns -> ops sorted into op_id order, with nesting, self time, top op and backward links."""
    start, end = clock.span(cols)
    tid = cols.ints("tid")
    order = np.lexsort((-end, tid, start))
    start, end, tid = start[order], end[order], tid[order]
    names = in_order(cols.data["name"], order)
    ext = cols.ints("ext")[order]
    seq = cols.ints("seq")[order]
    fwd_tid = cols.ints("fwd_tid")[order]
    n_ops = len(names)
    nesting = ThreadNesting(tid, start, end)
    parent, depth = nesting.parent, nesting.depth
    duration = end - start
    child_time = np.zeros(n_ops, dtype=np.int64)
    has_parent = parent >= 0
    np.add.at(child_time, parent[has_parent], duration[has_parent])
    top = _propagate_down(np.arange(n_ops, dtype=np.int64), parent, depth, lambda v: np.ones(len(v), bool))
    backward_name = {n: n.startswith(_BACKWARD_PREFIX) for n in set(names)}
    own_backward = (fwd_tid > 0) | np.array([backward_name[n] for n in names], dtype=bool)
    is_backward = _propagate_down(own_backward.astype(np.int64), parent, depth, lambda v: v == 0).astype(bool)
    forward = _forward_ops(start, seq, own_backward, is_backward)
    return _Ops(
        order=order,
        names=names,
        tid=tid,
        start=start,
        end=end,
        ext=ext,
        seq=seq,
        nesting=nesting,
        self_duration=np.maximum(duration - child_time, 0),
        top=top,
        is_backward=is_backward,
        forward=np.where(is_backward, _propagate_down(forward, parent, depth, lambda v: v < 0), -1),
        ext_to_op=IdIndex(ext, keep_first=False),
    )


def _forward_ops(start: I64Array, seq: I64Array, own_backward: _Bools, is_backward: _Bools) -> I64Array:
    """The forward op of each op that is itself a backward node (by autograd sequence number), else -1."""
    # Sequence numbers are shared by every op run while the counter stood still (e.g. init-time
    # `detach`), so, as torch itself does, a backward node's forward op is the latest forward op with
    # its sequence number that started before it.
    forward = np.full(len(start), -1, dtype=np.int64)
    fwd_ops = np.flatnonzero((~is_backward) & (seq >= 0))
    bwd = np.flatnonzero(own_backward & (seq >= 0))
    if len(fwd_ops) and len(bwd):
        # (sequence number, start) pairs as one sortable int64: the start's rank among all starts (ties
        # share one) below the number, so "latest with that number, started before" is one binary search
        start_rank = np.unique(start, return_inverse=True)[1].astype(np.int64).reshape(-1)
        scale = int(start_rank.max(initial=0)) + 1
        fwd_keys = seq[fwd_ops] * scale + start_rank[fwd_ops]
        by_key = np.argsort(fwd_keys, kind="stable")
        fwd_keys, fwd_sorted = fwd_keys[by_key], fwd_ops[by_key]
        pos = np.searchsorted(fwd_keys, seq[bwd] * scale + start_rank[bwd], side="left") - 1
        found = pos >= 0
        found[found] = seq[fwd_sorted[pos[found]]] == seq[bwd[found]]
        forward[bwd[found]] = fwd_sorted[pos[found]]
    return forward


def _propagate_down(values: I64Array, parent: I64Array, depth: I64Array, where_unset: Any) -> I64Array:
    """Copy each op's value to descendants whose own value is unset, level by level."""
    out = values.copy()
    for d in range(1, int(depth.max(initial=0)) + 1):
        level = np.flatnonzero(depth == d)
        take = level[where_unset(out[level])]
        out[take] = out[parent[take]]
    return out


def _ops_table(cols: Cols, ops: _Ops, paths: CallPaths, op_scope: I64Array, op_step: I64Array) -> pa.Table:
    """The ops table: a row per op, in op_id order, with its call path, scope, step and whether it is
    one of autotuning's benchmark runs."""
    return pa.table(
        {
            "op_id": np.arange(len(ops.names), dtype=np.int64),
            "name": string_column(cols.data["name"], ops.order),
            "thread_id": ops.tid,
            "start_ns": ops.start,
            "end_ns": ops.end,
            "duration_ns": ops.end - ops.start,
            "self_duration_ns": ops.self_duration,
            "parent_op_id": ops.parent,
            "top_op_id": ops.top,
            "depth": ops.depth.astype(np.int32),
            "sequence_nr": ops.seq,
            "is_backward": ops.is_backward,
            "forward_op_id": ops.forward,
            "input_shapes": string_column(cols.data["shapes"], ops.order),
            "input_dtypes": string_column(cols.data["dtypes"], ops.order),
            "input_strides": string_column(cols.data["strides"], ops.order),
            "input_values": string_column(cols.data["values"], ops.order),
            "frame_id": paths.op_frame,
            "frame_source": paths.op_frame_source,
            "scope_id": op_scope,
            "step": op_step,
            "external_id": ops.ext,
            # once here, so the importers and analyses that leave benchmark launches out all agree
            "is_autotuning": inside_autotuning(ops.names, ops.parent),
        }
    )


# ---- scopes


@dataclass(frozen=True)
class _Scopes:
    """The scopes (user annotations) in scope_id order, nested per thread, and each op's scope."""

    names: list[str]
    tid: I64Array
    start: I64Array
    end: I64Array
    parent: I64Array
    frame: I64Array  # the call path tenprof.scope recorded, else -1
    insert: I64Array  # where in that call path the scope begins, else -1
    op_scope: I64Array  # op_id -> scope_id, or -1
    record: I64Array  # scope_id -> index of tenprof.scope's record of it in the sidecar's scopes, or -1


def _scopes(ann: _Annotations, ops: _Ops, sidecar_scopes: list[list[Any]]) -> _Scopes:
    """The scope annotations -> scopes with their recorded call paths, and the innermost scope of each op."""
    scope_idx = np.flatnonzero(ann.is_scope)
    sc_start, sc_end, sc_tid = ann.start[scope_idx], ann.end[scope_idx], ann.tid[scope_idx]
    sc_order = np.lexsort((-sc_end, sc_tid, sc_start))
    scope_idx, sc_start, sc_end, sc_tid = scope_idx[sc_order], sc_start[sc_order], sc_end[sc_order], sc_tid[sc_order]
    sc_names = [ann.names[i] for i in scope_idx]
    nesting = ThreadNesting(sc_tid, sc_start, sc_end)
    sc_record = sidecar_scope_rows(sc_names, sc_tid, sc_start, sc_end, sidecar_scopes)
    sc_frame, sc_insert = recorded_paths(sc_record, sidecar_scopes)
    op_scope = nesting.innermost_per_thread(ops.tid, ops.start)
    if len(sc_tid):
        main_scope_tid = int(np.bincount(np.unique(sc_tid, return_inverse=True)[1]).argmax())
        main_tid = int(np.unique(sc_tid)[main_scope_tid])
        missing = (op_scope < 0) & ops.is_backward
        op_scope[missing] = nesting.innermost(main_tid, ops.start[missing])
    return _Scopes(sc_names, sc_tid, sc_start, sc_end, nesting.parent, sc_frame, sc_insert, op_scope, sc_record)


def _scopes_table(scopes: _Scopes) -> pa.Table:
    """The scopes table: a row per scope, in scope_id order."""
    return pa.table(
        {
            "scope_id": np.arange(len(scopes.names), dtype=np.int64),
            "name": scopes.names,
            "thread_id": scopes.tid,
            "start_ns": scopes.start,
            "end_ns": scopes.end,
            "parent_scope_id": scopes.parent,
            "frame_id": scopes.frame,
            "insert_depth": scopes.insert.astype(np.int32),
        }
    )


# ---- steps


@dataclass(frozen=True)
class _Steps:
    """The ProfilerStep#N ranges in start order, what tenprof recorded of each, and each op's step."""

    number: I64Array
    start: I64Array
    end: I64Array
    complete: _Bools
    capture_on: _Bools
    own_ns: I64Array
    gpu_ns: I64Array  # timed steps: the period between tenprof's CUDA events at their boundaries, else -1
    op_step: I64Array  # op_id -> step number, or -1
    tokens: I64Array  # what tenprof.step(tokens=N) said the step held, -1 when not given


def _steps(ann: _Annotations, ops: _Ops, callsites: Callsites | None, offset_ns: int | None) -> _Steps:
    """The step annotations -> steps (with tenprof's marks when `callsites` is given) and the step of each op.
    Steps run with the profiler stopped have no annotation: tenprof's clock reads at their boundaries
    (moved onto the trace clock by `offset_ns`) give them."""
    step_idx = np.flatnonzero(ann.is_step)
    st_start, st_end = ann.start[step_idx], ann.end[step_idx]
    st_number = np.array([as_int(ann.names[i][len(STEP_PREFIX) :], -1) for i in step_idx], dtype=np.int64)
    if callsites is not None and offset_ns is not None:
        number, start, end = callsites.unrecorded_steps(st_number)
        st_number = np.concatenate([st_number, number])
        st_start, st_end = np.concatenate([st_start, start + offset_ns]), np.concatenate([st_end, end + offset_ns])
    st_order = np.argsort(st_start, kind="stable")
    st_start, st_end, st_number = st_start[st_order], st_end[st_order], st_number[st_order]
    op_step = take(st_number, nest(st_start, st_end).innermost_at(ops.start))
    # Which steps ran with the capture off (to time the program un-profiled) and each step's time between
    # tenprof's own clock reads; traces from elsewhere have neither: on, unknown.
    unknown = np.full(len(st_number), -1, dtype=np.int64)
    if callsites is not None:
        st_capture_on, st_own_ns = callsites.step_marks(st_number)
        st_gpu_ns = callsites.gpu_periods(st_number)
    else:
        st_capture_on, st_own_ns, st_gpu_ns = np.ones(len(st_number), dtype=bool), unknown, unknown.copy()
    # A step is complete when tenprof.step() closed it, not the end of profiling; for traces
    # from elsewhere, torch's schedule closes every recorded step.
    complete = (
        st_number < callsites.step_calls
        if callsites is not None and callsites.step_calls is not None
        else np.ones(len(st_number), dtype=bool)
    )
    # the k-th tenprof.step() call ends ProfilerStep#k
    given = np.asarray(callsites.step_tokens if callsites is not None else [], dtype=np.int64)
    tokens = np.full(len(st_number), -1, dtype=np.int64)
    known = (st_number >= 0) & (st_number < len(given))
    tokens[known] = given[st_number[known]]
    return _Steps(st_number, st_start, st_end, complete, st_capture_on, st_own_ns, st_gpu_ns, op_step, tokens)


def _steps_table(steps: _Steps) -> pa.Table:
    """The steps table: a row per step, in start order."""
    return pa.table(
        {
            "step": steps.number,
            "start_ns": steps.start,
            "end_ns": steps.end,
            "duration_ns": steps.end - steps.start,
            "complete": steps.complete,
            "capture_on": steps.capture_on,
            "tokens": steps.tokens,
            "own_duration_ns": steps.own_ns,
            "gpu_period_ns": steps.gpu_ns,
        }
    )


# ---- API calls


@dataclass(frozen=True)
class _ApiCalls:
    """The CUDA runtime/driver calls in start order (api_call_id), with the op that made each."""

    order: I64Array  # api_call_id -> row of the API call columns
    tid: I64Array
    start: I64Array
    end: I64Array
    corr: I64Array
    op: I64Array
    corr_to_api: IdIndex  # CUPTI correlation id -> the first api_call_id with it


def _api_calls(cols: Cols, clock: Clock, ops: _Ops) -> _ApiCalls:
    """The API call columns -> calls in start order, each joined to its op (by External id, else the
    innermost op running on its thread)."""
    api_start, api_end = clock.span(cols)
    api_order = np.argsort(api_start, kind="stable")
    api_start, api_end = api_start[api_order], api_end[api_order]
    api_tid = cols.ints("tid")[api_order]
    api_corr = cols.ints("corr")[api_order]
    api_op = ops.ext_to_op.find(cols.ints("ext")[api_order])
    unresolved = ~_running(ops, api_op, api_tid, api_start)
    api_op[unresolved] = ops.nesting.innermost_per_thread(api_tid[unresolved], api_start[unresolved])
    return _ApiCalls(api_order, api_tid, api_start, api_end, api_corr, api_op, IdIndex(api_corr, keep_first=True))


def _api_calls_table(cols: Cols, api: _ApiCalls) -> pa.Table:
    """The api_calls table: a row per CUDA runtime/driver call, in api_call_id order."""
    return pa.table(
        {
            "api_call_id": np.arange(len(api.start), dtype=np.int64),
            "name": string_column(cols.data["name"], api.order),
            "api": ["driver" if cat == "cuda_driver" else "runtime" for cat in in_order(cols.data["cat"], api.order)],
            "thread_id": api.tid,
            "start_ns": api.start,
            "end_ns": api.end,
            "duration_ns": api.end - api.start,
            "correlation_id": api.corr,
            "op_id": api.op,
        }
    )


# ---- kernels


@dataclass(frozen=True)
class _Kernels:
    """The kernels in start order (kernel_id), with their launching API call and op."""

    order: I64Array  # kernel_id -> row of the kernel columns
    start: I64Array
    end: I64Array
    corr: I64Array
    api: I64Array
    op: I64Array
    ordinal: I64Array  # rank among its op's kernels, by launch time
    grid: I64Array  # (n, 3)
    block: I64Array  # (n, 3)


def _kernels(cols: Cols, clock: Clock, ops: _Ops, api: _ApiCalls) -> _Kernels:
    """The kernel columns -> kernels in start order, each joined to its API call (correlation id) and op
    (External id, else its API call's op: `_launched`)."""
    k_order, k_start, k_end, k_corr, k_api, k_op = _launched(cols, clock, ops, api)
    launch_time = np.where(k_api >= 0, take(api.start, k_api), k_start)
    return _Kernels(
        order=k_order,
        start=k_start,
        end=k_end,
        corr=k_corr,
        api=k_api,
        op=k_op,
        ordinal=rank_within(k_op, launch_time),
        grid=np.array(cols.data["grid"], dtype=np.int64).reshape(-1, 3)[k_order],
        block=np.array(cols.data["block"], dtype=np.int64).reshape(-1, 3)[k_order],
    )


def _kernels_table(cols: Cols, kernels: _Kernels) -> pa.Table:
    """The kernels table: a row per kernel, in kernel_id order."""
    order, grid, block = kernels.order, kernels.grid, kernels.block
    return pa.table(
        {
            "kernel_id": np.arange(len(kernels.start), dtype=np.int64),
            "name": string_column(cols.data["name"], order),
            "device": cols.ints("device")[order].astype(np.int32),
            "stream": cols.ints("stream")[order],
            "start_ns": kernels.start,
            "end_ns": kernels.end,
            "duration_ns": kernels.end - kernels.start,
            "grid_x": grid[:, 0].astype(np.int32),
            "grid_y": grid[:, 1].astype(np.int32),
            "grid_z": grid[:, 2].astype(np.int32),
            "block_x": block[:, 0].astype(np.int32),
            "block_y": block[:, 1].astype(np.int32),
            "block_z": block[:, 2].astype(np.int32),
            "registers_per_thread": cols.ints("regs")[order].astype(np.int32),
            "shared_memory_bytes": cols.ints("smem")[order],
            "correlation_id": kernels.corr,
            "op_id": kernels.op,
            "api_call_id": kernels.api,
            "ordinal_in_op": kernels.ordinal.astype(np.int32),
        }
    )


def _collectives_table(cols: Cols, kernels: _Kernels) -> pa.Table:
    """A row per kernel whose args say it is a collective's (the `comm` column, timeline_columns.
    COLLECTIVE_ARGS), in kernel_id order, with its place among its group's collectives on this rank."""
    texts = in_order(cols.data["comm"], kernels.order)
    rows = [k for k, text in enumerate(texts) if text]
    values = [_collective_values(texts[k]) for k in rows]
    groups = [str(v[1]) for v in values]
    seen: dict[str, int] = {}
    seq = []
    for group in groups:  # rows are in start order
        seq.append(seen.get(group, 0))
        seen[group] = seq[-1] + 1
    return pa.table(
        {
            "kernel_id": np.array(rows, dtype=np.int64),
            "collective": [str(v[0]) for v in values],
            "group": groups,
            "group_description": [str(v[2]) for v in values],
            "group_ranks": [str(v[3]) for v in values],
            "group_size": np.array([_int_or(v[4]) for v in values], dtype=np.int32),
            "in_elements": np.array([_int_or(v[5]) for v in values], dtype=np.int64),
            "out_elements": np.array([_int_or(v[6]) for v in values], dtype=np.int64),
            "element_type": [str(v[7]) for v in values],
            "seq": np.array(seq, dtype=np.int64),
        }
    )


def _collective_values(text: str) -> list[object]:
    """The COLLECTIVE_ARGS of one kernel from its JSON array: '' for what is absent or not a plain value."""
    try:
        values = orjson.loads(text)
    except orjson.JSONDecodeError:
        values = []
    values = values if isinstance(values, list) else []
    values += [None] * (len(COLLECTIVE_ARGS) - len(values))
    # the group's ranks may be written as a list: kept as its JSON text
    return [
        "" if v is None or isinstance(v, dict) else orjson.dumps(v).decode() if isinstance(v, list) else v
        for v in values[: len(COLLECTIVE_ARGS)]
    ]


def _int_or(value: object, default: int = -1) -> int:
    """A whole number given as a number or as its text; `default` for anything else."""
    text = str(value)
    return int(text) if text.lstrip("-").isdigit() and not isinstance(value, bool) else default


# ---- transfers


@dataclass(frozen=True)
class _Transfers:
    """The memcpys and memsets in start order (transfer_id), with the op that made each."""

    order: I64Array  # transfer_id -> row of the transfer columns
    start: I64Array
    end: I64Array
    corr: I64Array
    op: I64Array


def _transfers(cols: Cols, clock: Clock, ops: _Ops, api: _ApiCalls) -> _Transfers:
    """The transfer columns -> transfers in start order, each joined to its op (External id, else its
    launching API call's op)."""
    t_order, t_start, t_end, t_corr, _, t_op = _launched(cols, clock, ops, api)
    return _Transfers(t_order, t_start, t_end, t_corr, t_op)


def _transfers_table(cols: Cols, transfers: _Transfers) -> pa.Table:
    """The transfers table: a row per memcpy or memset, in transfer_id order, with its direction and bandwidth
    parsed from the name and timing."""
    order = transfers.order
    names = in_order(cols.data["name"], order)
    t_bytes = cols.ints("bytes")[order]
    t_dur = transfers.end - transfers.start
    parsed = [_MEMCPY_NAME.match(n) for n in names]
    return pa.table(
        {
            "transfer_id": np.arange(len(transfers.start), dtype=np.int64),
            "name": names,
            "kind": ["memset" if cat == "gpu_memset" else "memcpy" for cat in in_order(cols.data["cat"], order)],
            "direction": [m.group(1) if m else "" for m in parsed],
            "src_memory": [m.group(2) if m else "" for m in parsed],
            "dst_memory": [m.group(3) if m else "" for m in parsed],
            "bytes": t_bytes,
            "device": cols.ints("device")[order].astype(np.int32),
            "stream": cols.ints("stream")[order],
            "start_ns": transfers.start,
            "end_ns": transfers.end,
            "duration_ns": t_dur,
            "bandwidth_gbps": np.where(t_dur > 0, t_bytes / np.maximum(t_dur, 1), 0.0),
            "correlation_id": transfers.corr,
            "op_id": transfers.op,
        }
    )


# ---- memory


@dataclass(frozen=True)
class FailedAllocation:
    ts_ns: int
    device: str
    bytes: int
    allocated_bytes: int
    reserved_bytes: int


# c10::DeviceType's numbers in a memory event's "Device Type", as PyTorch names the devices: a ROCm build
# reports its GPUs' allocations as HIP (6), and calls those GPUs "cuda" devices like CUDA's (1)
_DEVICE_KINDS = {0: "cpu", 1: "cuda", 6: "cuda", 12: "xpu", 13: "mps", 15: "hpu", 19: "mtia"}


def device_kind(device_type: int) -> str:
    """The device kind of a memory event's "Device Type" ("device7" for one PyTorch has no name for here)."""
    return _DEVICE_KINDS.get(device_type, f"device{device_type}")


def _failed_allocations(cols: Cols, clock: Clock) -> list[FailedAllocation]:
    """The "[OutOfMemory]" events, in trace order."""
    if not len(cols):
        return []
    kinds = [device_kind(t) for t in cols.data["dtype"]]
    devices = [f"{k}:{i}" if i >= 0 else k for k, i in zip(kinds, cols.data["device"], strict=True)]
    found = zip(
        clock.at(cols).tolist(), devices, cols.data["bytes"], cols.data["alloc"], cols.data["reserved"], strict=True
    )
    return [FailedAllocation(int(t), d, int(b), int(a), int(r)) for t, d, b, a, r in found]


def _memory_table(cols: Cols, clock: Clock, op_nesting: ThreadNesting) -> pa.Table:
    """The memory table: a row per allocator sample, in trace order, with the innermost op running on its
    thread."""
    m_ts = clock.at(cols)
    return pa.table(
        {
            "ts_ns": m_ts,
            "device_type": [device_kind(t) for t in cols.data["dtype"]],
            "device": cols.ints("device").astype(np.int32),
            "address": cols.ints("addr"),
            "bytes": cols.ints("bytes"),
            "total_allocated_bytes": cols.ints("alloc"),
            "total_reserved_bytes": cols.ints("reserved"),
            "op_id": op_nesting.innermost_per_thread(cols.ints("tid"), m_ts),
        }
    )


# ---- host samples


def _host_samples_table(
    callsites: Callsites | None, offset_ns: int | None, op_nesting: ThreadNesting, steps: _Steps
) -> pa.Table:
    """The host sampler's samples on the trace clock, each with the innermost op its thread was running
    (none where the clocks could not be aligned: they could not be placed)."""
    if callsites is None or offset_ns is None or not len(callsites.sample_ts):
        return TABLES["host_samples"].empty_table()
    ts = callsites.sample_ts + offset_ns
    thread = callsites.sample_thread
    process = callsites.sample_process
    op = op_nesting.innermost_per_thread(thread, ts)
    op[process != 0] = -1  # a worker process runs no op of the trace's (thread ids are unique anyway)
    return pa.table(
        {
            "ts_ns": ts,
            "thread_id": thread,
            "frame_id": callsites.sample_frame,
            "op_id": op,
            "weight_ns": _sample_weights(
                thread, ts, process, callsites.sample_interval_ns, _paused(steps), steps.start
            ),
            "process_id": process,
        }
    )


def _paused(steps: _Steps) -> tuple[I64Array, I64Array]:
    """The steps run with the capture off: the script's sampler is paused in them (workers' are not)."""
    off = ~np.asarray(steps.capture_on, dtype=bool)
    return steps.start[off], steps.end[off]


def _sample_weights(
    thread: I64Array,
    ts: I64Array,
    process: I64Array,
    interval_ns: int,
    paused: tuple[I64Array, I64Array],
    step_starts: I64Array,
) -> I64Array:
    """The time each sample stands for: since the thread's previous sample. The sampler is a Python
    thread: it runs when it gets the interpreter lock, so a round comes late when the script holds the
    lock (Python code runs up to the switch interval, 5 ms, before letting go), and the late sample is
    taken where the script then is: the time it waited for is the script's time there. (Counting it
    forward instead would give a sleep, which lets go of the lock at once, the time of the Python code
    after it.) The first sample of a thread, and the first after a pause (a step run with the capture
    off; the script's own process only: workers are never paused), stand for one period. In the script's
    process, a sample stands for no time before the start of its step: the sampler pauses during
    tenprof's work at each step boundary, and the rounds missed then are not the script's time at the
    next line sampled."""
    weight = np.full(len(ts), interval_ns, dtype=np.int64)
    order = np.lexsort((ts, thread))
    before, after = ts[order][:-1], ts[order][1:]
    mine = process[order][1:] == 0
    starts = np.sort(step_starts)
    k = np.searchsorted(starts, after, side="right") - 1
    step_start = np.where(k >= 0, starts[np.clip(k, 0, None)] if len(starts) else 0, np.iinfo(np.int64).min)
    before = np.where(mine, np.maximum(before, step_start), before)
    gap = after - before
    same = np.diff(thread[order]) == 0
    crosses = coverage(paused[0], paused[1], before, after) > 0 if len(paused[0]) else np.zeros(len(gap), bool)
    crosses &= mine
    usable = same & (gap > 0) & ~crosses
    weight[order[1:][usable]] = gap[usable]
    return weight


# ---- user metrics and GPU samples


def _user_metrics_table(
    scopes: _Scopes, sidecar_scopes: list[list[Any]], callsites: Callsites | None, launched: UserLaunches, ops: _Ops
) -> pa.Table:
    """The numbers the user attached: per scope range, those given to tenprof.scope (in its sidecar record);
    per launch of the script's own Triton kernels, those its launch_metadata gave (the launch record's op)."""
    owner: list[str] = []
    owner_id: list[int] = []
    metric: list[str] = []
    value: list[float] = []
    for scope_id, row in enumerate(scopes.record.tolist()):
        record = sidecar_scopes[row] if row >= 0 else ()
        if len(record) > 6 and isinstance(record[6], dict):
            for name, number in record[6].items():
                owner.append("scope")
                owner_id.append(scope_id)
                metric.append(str(name))
                value.append(float(number))
    if callsites is not None and callsites.launch_metrics and len(launched.record_index):
        op_id_of_row = np.empty(len(ops.order), dtype=np.int64)
        op_id_of_row[ops.order] = np.arange(len(ops.order), dtype=np.int64)
        op_of_record = dict(zip(launched.record_index.tolist(), op_id_of_row[launched.op_row].tolist(), strict=True))
        for index, name, number in callsites.launch_metrics:
            op = op_of_record.get(int(index))
            if op is not None:  # a launch in a step run with the capture off has no op
                owner.append("launch")
                owner_id.append(op)
                metric.append(str(name))
                value.append(float(number))
    return pa.table({"owner": owner, "owner_id": owner_id, "metric": metric, "value": value}, TABLES["user_metrics"])


def _gpu_samples_table(callsites: Callsites | None, offset_ns: int | None, sync_starts: dict[str, int]) -> pa.Table:
    """NVML's reads of the GPUs on the trace clock, in time order (none where the clocks could not be
    aligned: they could not be placed). The clock mapping is the call paths' one, or, for a recording
    with no call paths to join (lines off), found here from the same markers."""
    if callsites is None or not len(callsites.gpu_ts):
        return TABLES["gpu_samples"].empty_table()
    if offset_ns is None:
        found = clock_offset(callsites.syncs, sync_starts)
        offset_ns = found[0] if found is not None else None
    if offset_ns is None:
        return TABLES["gpu_samples"].empty_table()
    order = np.argsort(callsites.gpu_ts, kind="stable")
    n = len(order)
    columns: dict[str, Any] = {
        "ts_ns": callsites.gpu_ts[order] + offset_ns,
        "device": callsites.gpu_device[order].astype(np.int32),
    }
    # a value NVML could not read (NaN in the log, -1 for the reasons) is null: not recorded
    for name in GPU_FLOAT_COLUMNS:
        values = callsites.gpu_values.get(name, np.zeros(0))
        columns[name] = pa.array(values[order] if len(values) == n else np.full(n, np.nan), from_pandas=True)
    reasons = callsites.gpu_reasons[order] if len(callsites.gpu_reasons) == n else np.full(n, -1, dtype=np.int64)
    columns["clock_reasons"] = pa.array(reasons, mask=reasons < 0)
    return pa.table(columns)


def _launched(
    cols: Cols, clock: Clock, ops: _Ops, api: _ApiCalls
) -> tuple[I64Array, I64Array, I64Array, I64Array, I64Array, I64Array]:
    """GPU activity (kernels or copies) in start order: (order, start, end, correlation id, launching API
    call, op), the op by External id where it names one running where the launch was made, else its API
    call's op."""
    start, end = clock.span(cols)
    order = np.argsort(start, kind="stable")
    start, end = start[order], end[order]
    corr = cols.ints("corr")[order]
    api_call = api.corr_to_api.find(corr)
    op = ops.ext_to_op.find(cols.ints("ext")[order])
    # the launching call's op where the External id names none, or one not running where the call was made
    # (without a call, the id is all there is)
    wrong = ~_running(ops, op, take(api.tid, api_call, -1), take(api.start, api_call, 0))
    fallback = wrong & (api_call >= 0)
    op[fallback] = api.op[api_call[fallback]]
    return order, start, end, corr, api_call, op


def _running(ops: _Ops, op: I64Array, tid: I64Array, at: I64Array) -> npt.NDArray[np.bool_]:
    """Whether each op an External id named (-1: none) was running on thread `tid` at time `at`, as the op a
    call was made in must be. Some builds fill the id with numbers that name unrelated ops: a torch 2.3 trace
    of an A100 (a Switch Transformer's forward pass) gave each launch its CUPTI correlation id, so each
    launch whose id matched an op's (225 of 484) went to that op (13.62 ms of GPU time to aten::view, the
    first embedding lookup's 322 ms launch to an aten::as_strided that ran 25 ms later); those calls take
    their enclosing op instead."""
    ok = op >= 0
    linked = op[ok]
    ok[ok] = (ops.tid[linked] == tid[ok]) & (ops.start[linked] <= at[ok]) & (ops.end[linked] >= at[ok])
    return ok
