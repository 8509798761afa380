"""A trace in Kineto's format made from the native recorder's op records, for a capture without the
profiler's CPU side (torch-free; no I/O but `write_trace`).

The native recorder (tenprof.capture.native_lines, every_op) records every op and named range of every
thread on the perf clock. Written as a Kineto trace, they import through the same importer as a profiler's
trace does: ops as `cpu_op` events with their sequence number and forward thread (which tie backward ops
to forward ones), named ranges (record_function, ProfilerStep#N, tenprof's clock syncs) as
`user_annotation` events. Times are the perf clock's, so the clock syncs in it align the call-site log
with no shift. Where the recorder recorded input signatures, each op carries them as the profiler's
record_shapes does (Input Dims, Input type, Input Strides, Concrete Inputs).
"""

from __future__ import annotations

import gzip
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

OP_CATEGORY = "cpu_op"
# the args of a recorded op's input signature, in the order native_lines.decode_signature gives them
INPUT_KEYS = ("Input Dims", "Input type", "Input Strides", "Concrete Inputs")
RANGE_CATEGORY = "user_annotation"


def trace_events(ops: dict[str, Any], pid: int, user_scope: int) -> list[dict[str, Any]]:
    """One complete ("X") event per record of `ops` (the recorder's columns and `names`), in start order;
    `user_scope`: the scope value of a named range."""
    names = ops["names"]
    order = sorted(range(len(ops["start_ns"])), key=lambda i: (ops["start_ns"][i], -ops["end_ns"][i]))
    sequence = _sequence_numbers(ops, order)
    signatures = ops.get("signatures")
    events = []
    for external_id, i in enumerate(order, start=1):
        start, end = ops["start_ns"][i], ops["end_ns"][i]
        is_range = ops["scope"][i] == user_scope
        args: dict[str, Any] = {"External id": external_id}
        if not is_range:
            args["Sequence number"] = sequence[i]
            args["Fwd thread id"] = ops["forward_thread_id"][i]
            signature = signatures[ops["signature_id"][i]] if signatures and ops["signature_id"][i] >= 0 else None
            if signature is not None and signature[0]:  # as the profiler, nothing for an op without inputs
                args.update(zip(INPUT_KEYS, signature, strict=True))
        events.append(
            {
                "ph": "X",
                "cat": RANGE_CATEGORY if is_range else OP_CATEGORY,
                "name": names[ops["name_id"][i]],
                "pid": pid,
                "tid": ops["thread_id"][i],
                "ts": start / 1000,  # Kineto's unit, microseconds
                "dur": (end - start) / 1000,
                "args": args,
            }
        )
    return events


EVALUATE = "autograd::engine::evaluate_function: "


def _sequence_numbers(ops: dict[str, Any], order: list[int]) -> list[int]:
    """Each record's sequence number; the autograd engine's `evaluate_function: X` range, recorded without
    one, takes that of the node X it runs (its first op inside), as the profiler's records give it."""
    names, name_of = ops["names"], ops["name_id"]
    sequence = list(ops["sequence_nr"])
    next_on_thread: dict[int, int] = {}
    for i in reversed(order):  # the record that starts next on the same thread: an op's first child
        tid = ops["thread_id"][i]
        name = names[name_of[i]]
        following = next_on_thread.get(tid)
        if following is not None and sequence[i] < 0 and _runs_node(name, names[name_of[following]]):
            sequence[i] = sequence[following]
        next_on_thread[tid] = i
    return sequence


# What a Kineto session recording GPU activity alone gives: kernels, copies, sets, the CUDA calls that
# launched them, the GPU side of annotations, and the streams' names (metadata, no time)
GPU_CATEGORIES = frozenset({"kernel", "gpu_memcpy", "gpu_memset", "cuda_runtime", "cuda_driver", "gpu_user_annotation"})


def with_gpu_events(events: list[dict[str, Any]], gpu_trace: dict[str, Any], shift_ns: float) -> dict[str, Any]:
    """A trace of `events` (trace_events', on the perf clock) and the GPU side of a Kineto trace recorded
    alongside (its other top-level keys too: devices, versions), moved onto the perf clock: its time less
    `shift_ns` (trace_minus_perf_ns). A launch's op is then found by time on its thread (the trace has no
    External ids from the profiler's CPU side to name it)."""
    shift_us = shift_ns / 1000
    moved = [e for e in gpu_trace["traceEvents"] if e.get("ph") == "M" and "ts" not in e]
    for e in gpu_trace["traceEvents"]:
        if e.get("cat") in GPU_CATEGORIES and "ts" in e:
            moved.append({**e, "ts": e["ts"] - shift_us})
    kept = {k: v for k, v in gpu_trace.items() if k not in ("traceEvents", "baseTimeNanoseconds", "traceName")}
    return {**kept, "traceEvents": events + moved}


def trace_minus_perf_ns(pairs: list[list[int]], base_ns: int) -> int:
    """What to subtract from a Kineto trace's times (ns) to put them on the perf clock: Kineto's times are
    the wall clock less its `baseTimeNanoseconds`; `pairs` are [perf before, wall, perf after] reads taken
    together (the median of their wall-minus-perf, each read at the middle of its perf bracket)."""
    if not pairs:
        raise ValueError("no clock pairs to map the GPU trace's clock with")
    offsets = sorted(wall - base_ns - (before + after) // 2 for before, wall, after in pairs)  # ints: exact
    return offsets[len(offsets) // 2]


def _runs_node(name: str, first_inside: str) -> bool:
    return name.startswith(EVALUATE) and first_inside == name[len(EVALUATE) :]


def write_trace(
    path: Path, ops: dict[str, Any], pid: int, user_scope: int, gpu_parts: Sequence[tuple[dict[str, Any], int]] = ()
) -> None:
    """The trace file holding `trace_events`, and the GPU side of each of `gpu_parts` (a GPU-only Kineto
    trace and its trace_minus_perf_ns): JSON, gzipped where the name ends in .gz (as the profiler's export)."""
    events = trace_events(ops, pid, user_scope)
    trace: dict[str, Any] = {"schemaVersion": 1, "deviceProperties": [], "traceEvents": events}
    for part, shift_ns in gpu_parts:  # the part's devices and versions, the events so far and its own
        trace = {**trace, **with_gpu_events(trace["traceEvents"], part, shift_ns)}
    data = orjson.dumps(trace)
    path.write_bytes(gzip.compress(data, compresslevel=1) if path.suffix == ".gz" else data)
