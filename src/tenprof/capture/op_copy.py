"""The op records of steps recorded without them, copied from a recorded step that launched the same work.

The next stage of the native captures (docs/design/cheaper_capture.md 3.6, "ops in sampled steps") turns
the op callbacks off in most steps, where torch's machinery for any op callback is most of the capture's
cost, and keeps the CUDA calls, kernels, copies and allocator reports. This module is the part that gives
those steps their ops back (`fill_trace`, called by the native capture under `TENPROF_OPS=sampled`,
experimental); tests also run it on real recordings with some steps' ops taken out.

Contract: `copy_ops(events, calls, windows, recorded)` takes a trace's events (Kineto's format, as
capture/native_trace.py writes them: ops `cpu_op` and `user_annotation` on their thread, CUDA calls
`cuda_runtime` and `cuda_driver` with a correlation id, GPU work with the same id), the call-site records
(perf-clock nanoseconds, the trace's microseconds times 1000), each step's window and the steps whose ops
were recorded. For every other step it looks for the nearest recorded step (the earlier one on a tie) whose
launches are the same on every thread: the same CUDA calls launching the same kernels, copies and sets, in
the same order (calls that launch nothing, such as synchronizations, are left out of the comparison: the
session's own fall on either side of a step's bounds). It then returns that step's ops and call records of
those threads, copied: times mapped piecewise linearly between the steps' bounds, the starts and ends of
the launching calls and, on a thread whose allocator reports ("[memory]" instant events) have the same
sizes in the same order in both steps and keep their order among its launches, each report (so each copied
op encloses the copies of the launches its original enclosed and the target step's own reports its
original made, and nesting is kept; before the first anchor from the steps' starts, after the last
shifted as it was), new External ids, the recorded step's number in the arg `tenprof copied from step`.
The reports stay the target step's own (its memory is measured, never copied); the anchors only give them
the op that made them.
Sequence numbers are kept: the importer joins a backward node to the latest forward op with its number that
started before it, which is the copy in the same step (one source step for all threads keeps the forward
and backward copies' numbers alike). A step no recorded step is like, and a thread that launched nothing in
it, gets nothing (counted in the report), never a guess. Step ranges (`ProfilerStep#N`) and tenprof's own
ranges are not copied.
"""

from __future__ import annotations

import bisect
from array import array
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

import numpy as np

from tenprof.capture.input_sampling import STEP_RANGE_PREFIX

CALL_FIELDS = ("thread_id", "start_ns", "end_ns", "frame_id")  # a call-site record, 4 int64 in a row
OP_CATEGORIES = frozenset({"cpu_op", "user_annotation"})
CALL_CATEGORIES = frozenset({"cuda_runtime", "cuda_driver"})
GPU_CATEGORIES = frozenset({"kernel", "gpu_memcpy", "gpu_memset"})
ALLOCATOR_REPORT = "[memory]"  # native_trace.MEMORY_EVENT (that module's writer calls this one)
NOT_COPIED_PREFIXES = (STEP_RANGE_PREFIX, "tenprof::")
COPIED_FROM = "tenprof copied from step"
# "sampled" turns the op callbacks off in the steps the input sampling does not ask in, whose ops this module
# copies (read by capture.timeline; set by `tenprof run --ops`)
OPS_VAR = "TENPROF_OPS"


@dataclass(frozen=True)
class StepWindow:
    """A step's bounds on the perf clock (ns)."""

    step: int
    start_ns: int
    end_ns: int


@dataclass
class CopyReport:
    """What was copied: each step's threads given a recorded step's ops, and the steps left without."""

    copied: list[tuple[int, int, int]] = field(default_factory=list)  # (step, thread, from step)
    unmatched: list[int] = field(default_factory=list)  # steps no recorded step was like, or that launched nothing
    ops: int = 0
    calls: int = 0
    next_id: int = 0  # the first External id the copies left unused


@dataclass
class _Thread:
    """One thread's events in one step."""

    ops: list[dict[str, Any]] = field(default_factory=list)
    calls: list[dict[str, Any]] = field(default_factory=list)  # CUDA calls, in start order
    sites: list[int] = field(default_factory=list)  # indexes into the call-site records
    reports: list[dict[str, Any]] = field(default_factory=list)  # allocator reports, in time order


def _ns(event: dict[str, Any], end: bool = False) -> int:
    return round((float(event["ts"]) + (float(event.get("dur", 0.0)) if end else 0.0)) * 1000)


def _window_of(start_ns: int, windows: list[StepWindow], starts: list[int]) -> int:
    """The index of the window holding start_ns, -1 where none does (per event: bisect, not numpy's per-call
    overhead)."""
    k = bisect.bisect_right(starts, start_ns) - 1
    return k if k >= 0 and start_ns <= windows[k].end_ns else -1


def _by_step_and_thread(
    events: list[dict[str, Any]], calls: dict[str, list[int]], windows: list[StepWindow]
) -> dict[tuple[int, int], _Thread]:
    """Each step's ops, CUDA calls and call-site records, by thread (events starting inside the window)."""
    starts = [w.start_ns for w in windows]
    found: dict[tuple[int, int], _Thread] = defaultdict(_Thread)
    for e in events:
        report = e.get("ph") == "i" and e.get("name") == ALLOCATOR_REPORT
        if not report and (
            e.get("ph") != "X" or (e.get("cat") not in OP_CATEGORIES and e.get("cat") not in CALL_CATEGORIES)
        ):
            continue
        k = _window_of(_ns(e), windows, starts)
        if k < 0:
            continue
        part = found[(windows[k].step, int(e["tid"]))]
        if report:
            part.reports.append(e)
        elif e["cat"] in CALL_CATEGORIES:
            part.calls.append(e)
        elif not str(e.get("name", "")).startswith(NOT_COPIED_PREFIXES):
            part.ops.append(e)
    for i, (thread, start) in enumerate(zip(calls.get("thread_id", []), calls.get("start_ns", []), strict=True)):
        k = _window_of(int(start), windows, starts)
        if k >= 0:
            found[(windows[k].step, int(thread))].sites.append(i)
    for part in found.values():
        part.calls.sort(key=_ns)
        part.reports.sort(key=_ns)
    return found


def _launched(events: list[dict[str, Any]]) -> dict[int, tuple[str, ...]]:
    """The names of the GPU work each correlation id launched."""
    work: dict[int, list[str]] = defaultdict(list)
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in GPU_CATEGORIES:
            work[int(e.get("args", {}).get("correlation", -1))].append(str(e.get("name", "")))
    return {k: tuple(v) for k, v in work.items()}


def _correlation(call: dict[str, Any]) -> int:
    return int(call.get("args", {}).get("correlation", -1))


def copy_ops(
    events: list[dict[str, Any]],
    calls: dict[str, list[int]],
    windows: list[StepWindow],
    recorded: set[int],
) -> tuple[list[dict[str, Any]], dict[str, list[int]], CopyReport]:
    """The copied op events and call-site records of the steps not in `recorded` (module docstring)."""
    windows = sorted(windows, key=lambda w: w.start_ns)
    window = {w.step: w for w in windows}
    parts = _by_step_and_thread(events, calls, windows)
    launched = _launched(events)
    for part in parts.values():  # the calls that launched GPU work: what is compared, and the anchors
        part.calls = [c for c in part.calls if _correlation(c) in launched]
    launches: dict[int, dict[int, tuple[Any, ...]]] = defaultdict(dict)  # step -> thread -> its launches
    for (step, thread), part in parts.items():
        if part.calls:
            launches[step][thread] = tuple((c.get("name"), launched[_correlation(c)]) for c in part.calls)
    next_id = 1 + max((int(e.get("args", {}).get("External id", 0)) for e in events), default=0)
    report = CopyReport()
    new_events: list[dict[str, Any]] = []
    new_calls: dict[str, list[int]] = {name: [] for name in CALL_FIELDS}
    report.unmatched = [w.step for w in windows if w.step not in recorded and w.step not in launches]
    for step in sorted(launches):
        if step in recorded:
            continue
        nearest = sorted((r for r in recorded if r in window), key=lambda r: (abs(r - step), r))
        source = next((r for r in nearest if launches.get(r) == launches[step]), None)
        if source is None:
            report.unmatched.append(step)
            continue
        # One map for the step where the threads' launches keep their order in both steps (so a thread's
        # work stays inside another's call that spans it, as backward's nodes inside `backward()`), else
        # one per thread (each op still encloses its own launches).
        anchors = {t: _anchors(parts[(source, t)], parts[(step, t)]) for t in launches[step]}
        merged = sorted(pair for pairs in anchors.values() for pair in pairs)
        in_order = all(a[1] <= b[1] for a, b in pairwise(merged))
        for thread in sorted(launches[step]):
            original = parts[(source, thread)]
            # each thread's times mapped at once (one interpolation, not one per op: 21372 ops 0.39 -> 0.23 s)
            to_step = _time_map(window[source], window[step], merged if in_order else anchors[thread])
            begins = to_step([_ns(e) for e in original.ops])
            ends = to_step([_ns(e, end=True) for e in original.ops])
            for e, begin, end in zip(original.ops, begins, ends, strict=True):
                args = {**e.get("args", {}), "External id": next_id, COPIED_FROM: source}
                next_id += 1
                new_events.append({**e, "ts": begin / 1000, "dur": max(0, end - begin) / 1000, "args": args})
            new_calls["thread_id"] += [thread] * len(original.sites)
            new_calls["start_ns"] += to_step([int(calls["start_ns"][i]) for i in original.sites])
            new_calls["end_ns"] += to_step([int(calls["end_ns"][i]) for i in original.sites])
            new_calls["frame_id"] += [int(calls["frame_id"][i]) for i in original.sites]
            report.copied.append((step, thread, source))
            report.ops += len(original.ops)
            report.calls += len(original.sites)
    report.unmatched.sort()
    report.next_id = next_id
    return new_events, new_calls, report


def _anchors(source: _Thread, target: _Thread) -> list[tuple[int, int]]:
    """(source ns, target ns), in source order: the start and end of each launching call (the same calls in
    both steps) and, where the thread's allocator reports are alike in both and keep their order among
    those calls, each report: without them an allocation made between two launches would be placed by the
    time between them alone, in a neighbouring copied op where the host's pace differs (9.9% of the MLP's
    reports on an H200, 2026-11-29)."""
    launches = sorted(
        pair
        for c, d in zip(source.calls, target.calls, strict=True)
        for pair in ((_ns(c), _ns(d)), (_ns(c, end=True), _ns(d, end=True)))
    )
    if [_bytes(e) for e in source.reports] != [_bytes(e) for e in target.reports]:
        return launches
    with_reports = sorted([*launches, *((_ns(a), _ns(b)) for a, b in zip(source.reports, target.reports, strict=True))])
    return with_reports if all(a[1] <= b[1] for a, b in pairwise(with_reports)) else launches


def _bytes(report: dict[str, Any]) -> tuple[int, int]:
    args = report.get("args", {})
    return int(args.get("Bytes", 0)), int(args.get("Device Id", -1))


def _time_map(
    source: StepWindow, target: StepWindow, anchors: list[tuple[int, int]]
) -> Callable[[list[int]], list[int]]:
    """Perf-clock ns in the source step -> ns in the target step: piecewise linear from the steps' starts
    through the anchors (the starts and ends of the launching calls both steps made), so the work before
    the first launch keeps its order inside the step; after the last, shifted as that call was (a thread's
    ops after its last launch keep their distance to it, not a share of the rest of the step); kept inside
    the target step."""
    pairs = [(source.start_ns, target.start_ns), *anchors]
    x = np.maximum.accumulate(np.array([a for a, _ in pairs], dtype=np.float64))
    y = np.maximum.accumulate(np.array([b for _, b in pairs], dtype=np.float64))
    last = float(y[-1] - x[-1])

    def to_target(ns: list[int]) -> list[int]:
        at = np.asarray(ns, dtype=np.float64)
        moved = np.where(at >= x[-1], at + last, np.interp(at, x, y))
        kept = np.clip(moved, float(target.start_ns), float(target.end_ns))
        mapped: list[int] = np.rint(kept).astype(np.int64).tolist()
        return mapped

    return to_target


def fill_trace(trace: dict[str, Any], records: array[int], without_ops: list[StepWindow], pid: int) -> dict[str, Any]:
    """A native capture's trace and call-site records (4 int64 per record, CALL_FIELDS) completed in place for
    the steps run with the op callbacks off: their step ranges (on the thread that marks the others), and the
    ops and call sites `copy_ops` gives them. What was done, for the sidecar."""
    events: list[dict[str, Any]] = trace["traceEvents"]
    marks = [e for e in events if e.get("cat") == "user_annotation" and str(e["name"]).startswith(STEP_RANGE_PREFIX)]
    recorded = [StepWindow(int(e["name"][len(STEP_RANGE_PREFIX) :]), _ns(e), _ns(e, end=True)) for e in marks]
    tid = marks[0]["tid"] if marks else 0
    calls = {name: list(records[k::4]) for k, name in enumerate(CALL_FIELDS)}
    copied, copied_calls, report = copy_ops(events, calls, recorded + without_ops, {w.step for w in recorded})
    events += copied
    for k, w in enumerate(without_ops):  # their ranges, with ids after the copies'
        events.append(
            {"ph": "X", "cat": "user_annotation", "name": f"{STEP_RANGE_PREFIX}{w.step}", "pid": pid, "tid": tid,
             "ts": w.start_ns / 1000, "dur": (w.end_ns - w.start_ns) / 1000,
             "args": {"External id": report.next_id + k}}
        )  # fmt: skip
    rows = sorted(zip(*(calls[name] + copied_calls[name] for name in CALL_FIELDS), strict=True), key=lambda r: r[1])
    del records[:]
    records.extend(value for row in rows for value in row)
    return {
        "steps_without_ops": len(without_ops),
        "copied_steps": len({step for step, _, _ in report.copied}),
        "unmatched": report.unmatched,
        "ops": report.ops,
        "calls": report.calls,
    }
