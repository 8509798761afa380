"""The op records of steps recorded without them, copied from a recorded step that launched the same work
(tenprof.capture.op_copy): on a real GPU recording with six of its nine recorded steps' ops taken out, and on
hand-built events."""

from __future__ import annotations

import gzip
import shutil
from array import array
from pathlib import Path
from typing import Any

import orjson

from tenprof.analyses.timeline.attribution_keys import kernel_keys, memory_keys, op_keys
from tenprof.capture.op_copy import COPIED_FROM, NOT_COPIED_PREFIXES, OP_CATEGORIES, StepWindow, copy_ops, fill_trace
from tenprof.importers.timeline_import import build_pass
from tenprof.store.profile import load_profile
from tests.conftest import DATA, rebuild_pass

KEPT = {0, 1, 2}  # the steps that keep their ops; the cupti_mlp fixture recorded 0-2, 5-7 and 10-12


def test_ops_taken_out_of_six_steps_and_copied_back_give_every_kernel_its_op_line_and_step(tmp_path: Path) -> None:
    # A native-cupti recording of the MLP on an H200 (tests/data/README.md): the op records and call sites of
    # steps 5-7 and 10-12 are taken out of its raw files, as a capture with the op callbacks off there would
    # leave them, and copied back from the recorded steps whose launches are the same. Rebuilt, every kernel
    # has the op, line and step it had, every op is there with its shapes, line and parent, and each
    # backward node's forward op is the one of its own step.
    stored = load_profile(DATA / "cupti_mlp")
    steps = stored.table("steps").to_pydict()
    rows = zip(steps["step"], steps["start_ns"], steps["end_ns"], steps["capture_on"], strict=True)
    windows = [StepWindow(n, start, end) for n, start, end, on in rows if on]
    dropped = [w for w in windows if w.step not in KEPT]

    def in_dropped(ns: float) -> bool:
        return any(w.start_ns <= ns <= w.end_ns for w in dropped)

    copy = tmp_path / "cupti_mlp"
    shutil.copytree(DATA / "cupti_mlp", copy)
    raw = copy / "timeline" / "raw"
    trace = orjson.loads(gzip.decompress((raw / "kineto_trace.json.gz").read_bytes()))
    sidecar = orjson.loads(gzip.decompress((raw / "callsites.json.gz").read_bytes()))
    events = [
        e
        for e in trace["traceEvents"]
        if not (
            e.get("ph") == "X"
            and e.get("cat") in OP_CATEGORIES
            and not str(e["name"]).startswith(NOT_COPIED_PREFIXES)
            and in_dropped(e["ts"] * 1000)
        )
    ]
    kept = [i for i, start in enumerate(sidecar["calls"]["start_ns"]) if not in_dropped(start)]
    calls = {k: [v[i] for i in kept] for k, v in sidecar["calls"].items()}
    assert len(events) < len(trace["traceEvents"]) - 3000 and len(kept) < len(sidecar["calls"]["start_ns"]) - 200

    copied, copied_calls, report = copy_ops(events, calls, windows, KEPT)
    assert report.unmatched == [] and {step for step, _, _ in report.copied} == {5, 6, 7, 10, 11, 12}
    assert len(trace["traceEvents"]) == len(events) + len(copied) and report.calls == len(copied_calls["start_ns"])
    assert all(e["args"][COPIED_FROM] in KEPT for e in copied)
    trace["traceEvents"] = events + copied
    merged = sorted(zip(*(calls[k] + copied_calls[k] for k in calls), strict=True), key=lambda row: row[1])
    sidecar["calls"] = {k: [row[j] for row in merged] for j, k in enumerate(calls)}
    (raw / "kineto_trace.json.gz").write_bytes(gzip.compress(orjson.dumps(trace)))
    (raw / "callsites.json.gz").write_bytes(gzip.compress(orjson.dumps(sidecar)))
    rebuild_pass(copy, "timeline", lambda w, r: build_pass(w, r / "kineto_trace.json.gz", r / "callsites.json.gz"))
    rebuilt = load_profile(copy)

    assert kernel_keys(rebuilt) == kernel_keys(stored)  # 1198 kernels
    assert op_keys(rebuilt) == op_keys(stored)
    assert memory_keys(rebuilt) == memory_keys(stored)  # each allocator sample inside the op it was in
    ops = rebuilt.table("ops").to_pydict()
    forward = [(i, f) for i, f in enumerate(ops["forward_op_id"]) if f >= 0]
    assert len(forward) > 3000 and all(ops["step"][i] == ops["step"][f] for i, f in forward)


# ---- hand-built events: one thread (7), steps of 1000 us ----


def _op(name: str, start_us: float, end_us: float, tid: int = 7, **args: Any) -> dict[str, Any]:
    return {
        "ph": "X",
        "cat": "cpu_op",
        "name": name,
        "tid": tid,
        "ts": start_us,
        "dur": end_us - start_us,
        "args": args,
    }


def _launch(start_us: float, end_us: float, correlation: int, kernel: str, tid: int = 7) -> list[dict[str, Any]]:
    call = {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "tid": tid, "ts": start_us}
    work = {"ph": "X", "cat": "kernel", "name": kernel, "tid": 99, "ts": start_us + 5, "dur": 2.0}
    args = {"correlation": correlation}
    return [{**call, "dur": end_us - start_us, "args": args}, {**work, "args": args}]


WINDOWS = [StepWindow(n, n * 1_000_000, n * 1_000_000 + 900_000) for n in range(4)]
NO_CALLS: dict[str, list[int]] = {"thread_id": [], "start_ns": [], "end_ns": [], "frame_id": []}


def _step(n: int, kernels: tuple[str, ...], shift_us: float = 0.0) -> list[dict[str, Any]]:
    """Step n: an outer op enclosing, per kernel, an inner op that launches it."""
    base = n * 1000 + shift_us
    events = [_op("aten::outer", base + 10, base + 20 + 100 * len(kernels), **{"External id": 100 * n + 1})]
    for k, name in enumerate(kernels):
        start = base + 20 + 100 * k
        events.append(_op(f"aten::{name}", start, start + 50, **{"External id": 100 * n + 2 + k}))
        events += _launch(start + 10, start + 20, 100 * n + k, name)
    return events


def _without_ops(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in events if e["cat"] != "cpu_op"]


def test_a_step_takes_the_ops_of_the_nearest_recorded_step_that_launched_the_same_kernels() -> None:
    events = _step(0, ("a", "b")) + _step(1, ("a", "c")) + _without_ops(_step(2, ("a", "c"), shift_us=37.5))
    events += _without_ops(_step(3, ("a", "d")))
    copied, _, report = copy_ops(events, NO_CALLS, WINDOWS, recorded={0, 1})
    assert report.copied == [(2, 7, 1)] and report.unmatched == [3]  # step 3's kernels were never recorded
    assert [e["name"] for e in copied] == ["aten::outer", "aten::a", "aten::c"]
    assert all(e["args"][COPIED_FROM] == 1 for e in copied)
    ids = [e["args"]["External id"] for e in copied]
    assert len(set(ids)) == 3 and min(ids) > max(e["args"].get("External id", 0) for e in events)
    # each copied op encloses its launch in step 2 as the original enclosed it in step 1; between two
    # launches, both 37.5 us later than in step 1, an op is too (before the first, the step's start anchors)
    launches = [e for e in events if e["cat"] == "cuda_runtime" and 2000 <= e["ts"] < 3000]
    for op, launch in zip(copied[1:], launches, strict=True):
        assert op["ts"] <= launch["ts"] and launch["ts"] + launch["dur"] <= op["ts"] + op["dur"]
    assert abs(copied[2]["ts"] - (launches[1]["ts"] - 10)) < 1e-6
    outer = copied[0]
    assert all(outer["ts"] <= op["ts"] and op["ts"] + op["dur"] <= outer["ts"] + outer["dur"] for op in copied[1:])


def test_ties_take_the_earlier_step_and_a_thread_launching_nothing_gets_nothing() -> None:
    events = _step(0, ("a",)) + _without_ops(_step(1, ("a",))) + _step(2, ("a",))
    events.append(_op("aten::cpu_only", 1500, 1510, tid=8))  # another thread: no launch to match it by
    events.append(_op("aten::cpu_only", 2500, 2510, tid=8))
    copied, _, report = copy_ops(events, NO_CALLS, WINDOWS[:3], recorded={0, 2})
    assert report.copied == [(1, 7, 0)] and {e["tid"] for e in copied} == {7}


def test_call_sites_are_copied_with_the_ops_and_a_step_launching_nothing_is_left_unmatched() -> None:
    events = _step(0, ("a",)) + _without_ops(_step(1, ("a",), shift_us=100.0))
    calls = {"thread_id": [7], "start_ns": [5_000], "end_ns": [200_000], "frame_id": [42]}
    _, copied_calls, report = copy_ops(events, calls, WINDOWS, recorded={0})
    # before the launch (30-40 us, 1130-1140 us in step 1) it lies between the steps' starts and the launch;
    # after it, it moved as the launch did, 1100 us later
    assert copied_calls == {"thread_id": [7], "start_ns": [1_021_667], "end_ns": [1_300_000], "frame_id": [42]}
    assert report.unmatched == [2, 3] and report.calls == 1


def _report(ts_us: float, size: int, tid: int = 7) -> dict[str, Any]:
    return {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "tid": tid, "ts": ts_us, "args": {"Bytes": size}}


def _holder(ops: list[dict[str, Any]], report: dict[str, Any]) -> str:
    """The innermost op holding the report's time (the importer's join)."""
    holding = [e for e in ops if e["ts"] <= report["ts"] <= e["ts"] + e["dur"]]
    return min(holding, key=lambda e: e["dur"])["name"]


def test_an_allocation_made_where_the_host_ran_at_another_pace_stays_in_the_op_that_made_it() -> None:
    # step 0: aten::first launches at 40-50 us and ends at 60; aten::second allocates at 62 and launches at
    # 180. In step 1 the host was slow after the first launch: the same allocation came at 55 us. Timed
    # between the launches alone it would fall in the copy of aten::first; anchored, in aten::second's.
    def step(n: int, allocated_at: float, size: int) -> list[dict[str, Any]]:
        base = n * 1000
        return [
            _op("aten::first", base + 10, base + 60),
            *_launch(base + 40, base + 50, 10 * n, "k1"),
            _op("aten::second", base + 60, base + 200),
            _report(base + allocated_at, size),
            *_launch(base + 180, base + 190, 10 * n + 1, "k2"),
        ]

    alike = step(0, 62, 4096) + _without_ops(step(1, 55, 4096))
    copied, _, _ = copy_ops(alike, NO_CALLS, WINDOWS, recorded={0})
    assert _holder(copied, alike[-3]) == "aten::second"
    # where the sizes differ, the reports are no anchor: the launches alone place the ops
    unlike = step(0, 62, 4096) + _without_ops(step(1, 55, 8192))
    copied, _, report = copy_ops(unlike, NO_CALLS, WINDOWS, recorded={0})
    assert report.copied == [(1, 7, 0)] and _holder(copied, unlike[-3]) == "aten::first"


def test_a_trace_gets_the_ranges_ops_and_call_sites_of_its_steps_run_without_op_records() -> None:
    mark = {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#0", "tid": 3, "ts": 0.0, "dur": 900.0}
    trace = {"traceEvents": [{**mark, "args": {"External id": 50}}, *_step(0, ("a",)), *_without_ops(_step(1, ("a",)))]}
    records = array("q", [7, 25_000, 60_000, 11])  # a call site in step 0: thread, start, end, frame
    done = fill_trace(trace, records, [WINDOWS[1]], pid=9)
    assert done == {"steps_without_ops": 1, "copied_steps": 1, "unmatched": [], "ops": 2, "calls": 1}
    ranges = [e for e in trace["traceEvents"] if e["name"].startswith("ProfilerStep#")]
    assert [(e["name"], e["tid"], e["pid"], e["ts"], e["dur"]) for e in ranges[1:]] == [
        ("ProfilerStep#1", 3, 9, 1000.0, 900.0)  # on the thread that marks the recorded steps
    ]
    assert ranges[1]["args"]["External id"] > 50
    assert [e["name"] for e in trace["traceEvents"] if COPIED_FROM in e.get("args", {})] == ["aten::outer", "aten::a"]
    assert list(records) == [7, 25_000, 60_000, 11, 7, 1_025_000, 1_060_000, 11]  # in start order
