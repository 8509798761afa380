"""Ops -> Python call paths, for the timeline build (tenprof.importers.timeline_builder).

`join_call_paths` takes the ops in op_id order (`OpLinks`) and returns `CallPaths`: the frames table
(call-path nodes, interned by parent, file, line and function) and, for each op, the frame of its top-level
op and where that came from (`FRAME_SOURCES`). Nested ops inherit their top-level op's path. A top-level op's
path comes from, in order:
- tenprof's call-site records, once their perf clock is mapped onto the trace clock with the clock-sync
  markers: the native recorder's records (one per top-level op) in order, on a thread with as many of
  them as ops; else the record (a torch API call on the op's thread) covering the op's midpoint, else, for
  the native recorder's records, the nearest within the mapping's uncertainty; an op no record covers takes
  the record covering its earliest covered descendant;
- without records, the trace's with_stack python_function ranges, nested into call paths;
- for backward ops, their forward op's path, else the record running on the main Python thread.
The result also carries the clock mapping found and the warnings for the build report.
`match_sidecar_scopes` gives scopes the call path tenprof.scope recorded (`sidecar_scope_rows`: which record
is each scope's, for the numbers given to it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from tenprof.core.intervals import I64Array, nest
from tenprof.importers.callsites import Callsites, clock_offset
from tenprof.importers.timeline_columns import Clock, Cols, ThreadNesting
from tenprof.sourcefiles import is_user_file, line_text
from tenprof.store.schema import TABLES

_PY_FUNCTION = re.compile(r"^(.*)\((\d+)\): (.*)$")

# matching the native recorder's records to ops in order: at most this share of the pairs may stray from
# their common offset by more than the clock mapping's error
ORDER_MAX_OFF = 0.1
# An op outside every native record, further from the nearest than the clock mapping's error, still takes
# that record where nothing else can be its op: no op inside it, it the only record within this distance,
# the next-nearest at least ISOLATED_RATIO times as far. The mapping's error at a run's first ops can exceed
# the uncertainty its markers give: in a test run on the loaded 2-core machine a module-level parameter
# initialisation, more than 100 us from any other op, lost its line once, while the same run's records put
# on their own clock (no mapping) gave it.
ISOLATED_MAX_NS = 1_000_000
ISOLATED_RATIO = 4

# where a top-level op's frame came from; an op's source is an index into this
FRAME_SOURCES = ("none", "callsite", "forward", "stack", "containment")


@dataclass(frozen=True)
class OpLinks:
    """What the join reads of the ops, each array indexed by op_id (ops in start order)."""

    tid: I64Array
    start: I64Array
    end: I64Array
    parent: I64Array  # -1 for a top-level op
    top: I64Array  # the top-level op of each op (itself when top-level)
    is_backward: np.ndarray[Any, np.dtype[np.bool_]]
    forward: I64Array  # a backward op's forward op, else -1


@dataclass(frozen=True)
class CallPaths:
    """The frames table and each op's frame (its top-level op's), with what the build report needs."""

    frames: pa.Table
    op_frame: I64Array  # op_id -> frame_id, or -1
    op_frame_source: list[str]  # op_id -> one of FRAME_SOURCES
    sidecar_scopes: list[list[Any]]  # tenprof.scope's records, on the trace clock (empty when not mapped)
    clock_offset_ns: int | None = None
    clock_uncertainty_ns: int | None = None
    warnings: tuple[str, ...] = ()


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

    def table(self, sources_as_of: float | None = None) -> pa.Table:
        cols: list[Any] = list(zip(*self.rows, strict=True)) if self.rows else [[] for _ in range(7)]
        # the user's lines keep their text: `tenprof diff` matches lines by it after the file is edited
        texts = [line_text(file, line, sources_as_of) if user else None for _, _, file, line, _, _, user in self.rows]
        cols.append(texts)
        return pa.table(dict(zip(TABLES["frames"].names, cols, strict=True)), schema=TABLES["frames"])


class _TopPaths:
    """The frames found so far and, per op, the frame and source (index into FRAME_SOURCES) given to it as
    a top-level op; the joins below fill them in turn."""

    def __init__(self, ops: OpLinks) -> None:
        self.ops = ops
        self.is_top = ops.parent < 0
        self.mid = ops.start + (ops.end - ops.start) // 2
        self.frames = _FrameTable()
        self.frame = np.full(len(ops.tid), -1, dtype=np.int64)
        self.source = np.zeros(len(ops.tid), dtype=np.int8)


def join_call_paths(
    ops: OpLinks,
    sync_starts: dict[str, int],
    python: Cols,
    clock: Clock,
    callsites: Callsites | None,
    sources_as_of: float | None = None,
) -> CallPaths:
    """Join each op to a Python call path (see the module docstring). `sync_starts`: the trace's clock-sync
    marker name -> start; `python`: the trace's python_function ranges."""
    paths = _TopPaths(ops)
    found: tuple[int, int] | None = None
    shifted: Callsites | None = None  # the call-site records on the trace clock, once it is known
    warnings: list[str] = []
    if callsites is not None and len(callsites.frames) > 0:
        found = clock_offset(callsites.syncs, sync_starts)
        if found is None:
            warnings.append("the clock-sync markers were not found in the trace, so Python lines could not be joined")
        else:
            shifted = callsites.shifted(found[0])
            _from_callsites(paths, shifted, found[1], native=callsites.recorder == "native")
    elif len(python):
        warnings.append(
            "Python paths come from the trace's with_stack ranges, which name each function by its first line, "
            "not by the line that made the call"
        )
        _join_python_stacks(python, clock, paths.frames, ops.tid, ops.start, paths.is_top, paths.frame, paths.source)
    _for_backward(paths, shifted)
    return CallPaths(
        frames=paths.frames.table(sources_as_of),
        op_frame=paths.frame[ops.top],
        op_frame_source=np.array(FRAME_SOURCES)[paths.source[ops.top]].tolist(),
        sidecar_scopes=shifted.scopes if shifted is not None else [],
        clock_offset_ns=found[0] if found else None,
        clock_uncertainty_ns=found[1] if found else None,
        warnings=tuple(warnings),
    )


def _from_callsites(paths: _TopPaths, shifted: Callsites, uncertainty_ns: int, native: bool) -> None:
    """Add the records' call paths to the frames and give the top-level forward ops theirs."""
    ops, top = paths.ops, paths.ops.top
    for row in shifted.frames:
        # Whose file a frame is, decided again here: a recording made before a rule was added (Inductor's
        # generated files are not the user's) is read with today's rules.
        paths.frames.add(int(row[1]), str(row[2]), int(row[3]), str(row[4]), bool(row[6]) and is_user_file(str(row[2])))
    # A native record hugs its op, so an op of a microsecond can fall just outside it by the clock
    # mapping's error; a Python record spans the whole call, and an op outside every one is not
    # from a recorded call.
    tolerance = min(int(uncertainty_ns) + 1_000, 50_000) if native else 0
    forward_top = paths.is_top & ~ops.is_backward
    if native:
        _join_in_order(shifted, ops.tid, ops.start, forward_top, paths.frame, paths.source, int(uncertainty_ns))
    unjoined = forward_top & (paths.frame < 0)
    _join_callsites(shifted, ops.tid, paths.mid, unjoined, paths.frame, paths.source, tolerance_ns=tolerance)
    # A top-level op no call covers (Dynamo's `dynamo` range around a compilation, say) takes the
    # call covering its earliest covered descendant.
    unresolved = ~ops.is_backward & (paths.frame[top] < 0) & ~paths.is_top
    inner_frame = np.full(len(top), -1, dtype=np.int64)
    inner_source = np.zeros(len(top), dtype=np.int8)
    _join_callsites(shifted, ops.tid, paths.mid, unresolved, inner_frame, inner_source)
    for i in np.flatnonzero(inner_frame >= 0):  # op ids are in start order: the first hit is earliest
        if paths.frame[top[i]] < 0:
            paths.frame[top[i]] = inner_frame[i]
            paths.source[top[i]] = 1


def _join_in_order(
    calls: Callsites,
    op_tid: I64Array,
    op_start: I64Array,
    wanted: np.ndarray[Any, np.dtype[np.bool_]],
    top_frame: I64Array,
    top_source: np.ndarray[Any, np.dtype[np.int8]],
    uncertainty_ns: int,
) -> None:
    """The native recorder makes one record per top-level op: on a thread with as many records as ops
    wanted, the n-th op takes the n-th record's frame. Matched by time instead, back-to-back ops of a few
    microseconds took their neighbours' lines wherever the clock mapping's error (tens of microseconds on
    a busy CPU) exceeded their spacing. Used only where nearly all pairs (ORDER_MAX_OFF) keep one offset,
    within that error of the mapping (a record missing here and one extra there would shift all after it)."""
    for tid in np.unique(op_tid[wanted]).tolist():
        sel = np.flatnonzero(wanted & (op_tid == tid))  # op ids: in start order
        mine = np.flatnonzero(calls.call_thread == tid)
        if len(mine) != len(sel) or len(sel) == 0:
            continue
        mine = mine[np.argsort(calls.call_start[mine], kind="stable")]
        offset = op_start[sel] - calls.call_start[mine]
        # a few pairs off (a first call's lazy set-up inside its record) are no shift; a record missing
        # and one extra would move every pair between them
        if np.mean(np.abs(offset - np.median(offset)) > uncertainty_ns + 1_000) > ORDER_MAX_OFF:
            continue
        top_frame[sel] = calls.call_frame[mine]
        top_source[sel] = 1


def _for_backward(paths: _TopPaths, shifted: Callsites | None) -> None:
    """Give the top-level backward ops a path: their forward op's, else the call running on the main thread
    (when the records were mapped onto the trace clock, `shifted`)."""
    ops = paths.ops
    # Backward ops: the forward op's path beats the `.backward()` call line.
    bwd_top = np.flatnonzero(paths.is_top & ops.is_backward & (ops.forward >= 0))
    fwd_frames = paths.frame[ops.top[ops.forward[bwd_top]]]
    usable = fwd_frames >= 0
    paths.frame[bwd_top[usable]] = fwd_frames[usable]
    paths.source[bwd_top[usable]] = 2
    # What is still without a path (autograd work with no forward op, such as AccumulateGrad) takes the
    # torch call that was running on the main Python thread at the time: usually `loss.backward()`.
    if shifted is not None:
        unresolved = paths.is_top & ops.is_backward & (paths.frame < 0)
        _join_callsites(shifted, ops.tid, paths.mid, unresolved, paths.frame, paths.source, any_thread=True)


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
            taken = np.zeros(len(mine), dtype=bool)
            taken[covering[covering >= 0]] = True
            covering = np.where(covering >= 0, covering, _nearest(calls, mine, op_mid[sel], tolerance_ns, taken))
        ok = covering >= 0
        top_frame[sel[ok]] = calls.call_frame[mine[covering[ok]]]
        top_source[sel[ok]] = source


def _nearest(
    calls: Callsites, mine: I64Array, times: I64Array, tolerance_ns: int, taken: np.ndarray[Any, np.dtype[np.bool_]]
) -> I64Array:
    """For each time, the index into `mine` of the call nearest to it (by its distance to the call's
    interval) when that is at most `tolerance_ns`, or when it is an isolated one no op is inside (`taken`;
    ISOLATED_MAX_NS), else -1."""
    start, end = calls.call_start[mine], calls.call_end[mine]
    order = np.argsort(start, kind="stable")
    after = np.searchsorted(start[order], times, side="right")  # first call starting after each time
    distances = []
    for candidate in (after - 2, after - 1, after, after + 1):  # the two on each side
        valid = (candidate >= 0) & (candidate < len(order))
        index = order[np.clip(candidate, 0, len(order) - 1)]
        distance = np.maximum(np.maximum(start[index] - times, times - end[index]), 0)
        distances.append((np.where(valid, distance, np.iinfo(np.int64).max), index))
    distance = np.stack([d for d, _ in distances])
    index = np.stack([i for _, i in distances])
    ranked = np.argsort(distance, axis=0, kind="stable")
    columns = np.arange(len(times))
    best_distance, best = distance[ranked[0], columns], index[ranked[0], columns]
    second = distance[ranked[1], columns]
    near = best_distance <= tolerance_ns
    capped = np.clip(best_distance, 1, ISOLATED_MAX_NS + 1)  # (no overflow below)
    alone = (best_distance <= ISOLATED_MAX_NS) & ~taken[best] & (second >= ISOLATED_RATIO * capped)
    return np.where(near | alone, best, -1)


def _join_python_stacks(
    python: Cols,
    clock: Clock,
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
    nesting = ThreadNesting(p_tid, p_start, p_end)
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


def match_sidecar_scopes(
    names: list[str], tids: I64Array, starts: I64Array, ends: I64Array, sidecar: list[list[Any]]
) -> tuple[I64Array, I64Array]:
    """Give trace scopes the call path recorded by tenprof.scope (same name and thread): the k-th entered
    the k-th recorded where the counts agree, else the record whose bracket overlaps the range most."""
    return recorded_paths(sidecar_scope_rows(names, tids, starts, ends, sidecar), sidecar)


def recorded_paths(rows: I64Array, sidecar: list[list[Any]]) -> tuple[I64Array, I64Array]:
    """The frame and insert depth of each scope's record (`rows`: index into `sidecar`, -1: none)."""
    frame = np.full(len(rows), -1, dtype=np.int64)
    insert = np.full(len(rows), -1, dtype=np.int64)
    for i in np.flatnonzero(rows >= 0).tolist():
        record = sidecar[int(rows[i])]
        frame[i], insert[i] = int(record[4]), int(record[5])
    return frame, insert


def sidecar_scope_rows(
    names: list[str], tids: I64Array, starts: I64Array, ends: I64Array, sidecar: list[list[Any]]
) -> I64Array:
    """For each trace scope, the index of tenprof.scope's record of it in `sidecar` (see
    `match_sidecar_scopes`), -1 where none matched."""
    found = np.full(len(names), -1, dtype=np.int64)
    if not sidecar:
        return found

    grouped: dict[tuple[str, int], list[int]] = {}
    for index, row in enumerate(sidecar):
        grouped.setdefault((str(row[0]), int(row[1])), []).append(index)
    by_key: dict[tuple[str, int], tuple[list[list[Any]], list[int], I64Array]] = {}
    for key, indices in grouped.items():
        indices.sort(key=lambda k: int(sidecar[k][2]))
        rows = [sidecar[k] for k in indices]
        by_key[key] = (rows, indices, np.fromiter((int(r[2]) for r in rows), dtype=np.int64, count=len(rows)))
    ranges: dict[tuple[str, int], list[int]] = {}
    for i, (name, tid) in enumerate(zip(names, tids.tolist(), strict=True)):
        ranges.setdefault((name, tid), []).append(i)
    for key, members in ranges.items():
        entry = by_key.get(key)
        if entry is None:
            continue
        rows, indices, row_starts = entry
        members.sort(key=lambda i: int(starts[i]))
        if len(members) == len(rows):
            # as many ranges as records: the k-th range entered is the k-th record, however close together
            # they were entered (a busy machine blurs the clock mapping by more than microseconds)
            chosen = list(range(len(rows)))
        else:
            chosen = [_nearest_bracket(rows, row_starts, int(starts[i]), int(ends[i])) for i in members]
        for i, best in zip(members, chosen, strict=True):
            if best >= 0:
                found[i] = indices[best]
    return found


def _nearest_bracket(rows: list[list[Any]], row_starts: I64Array, start: int, end: int) -> int:
    """The record whose perf-clock bracket (before enter .. after exit) overlaps the range most: it
    contains the trace's range up to the clock offset's error (microseconds), so it is the range's own
    even when the same scope is entered again microseconds later; -1 when there is none near."""
    j = int(np.searchsorted(row_starts, start))
    best, best_overlap = -1, -1  # >= 0: a zero-length range inside its bracket still matches
    for k in range(max(j - 2, 0), min(j + 2, len(rows))):
        overlap = min(end, int(rows[k][3])) - max(start, int(rows[k][2]))
        if overlap > best_overlap:
            best, best_overlap = k, overlap
    return best
