"""A trace in Kineto's format made from the native recorder's op records, for a capture without the
profiler's CPU side (torch-free; no I/O but `write_trace`).

The native recorder (tenprof.capture.native_lines, every_op) records every op and named range of every
thread on the perf clock. Written as a Kineto trace, they import through the same importer as a profiler's
trace does: ops as `cpu_op` events with their sequence number and forward thread (which tie backward ops
to forward ones), named ranges (record_function, ProfilerStep#N, tenprof's clock syncs) as
`user_annotation` events. Times are the perf clock's, so the clock syncs in it align the call-site log
with no shift. Where the recorder recorded input signatures, each op carries them as the profiler's
record_shapes does (Input Dims, Input type, Input Strides, Concrete Inputs); where it recorded the
allocators' reports, each is a "[memory]" instant event on its thread, as profile_memory writes them.
"""

from __future__ import annotations

import bisect
import gzip
from collections import Counter
from collections.abc import Mapping, Sequence
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
        is_range = ops["scope"][i] == user_scope or _is_marked_range(names[ops["name_id"][i]])
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


MEMORY_EVENT = "[memory]"
OUT_OF_MEMORY_EVENT = "[OutOfMemory]"
MEMORY_CATEGORY = "cpu_instant_event"


# The columns of an allocator report (callsite_observer.cpp, ThreadBuffer::memory), in order; `bytes` is
# negative for a free; `kind` MEMORY_USAGE, or OUT_OF_MEMORY for an allocation that failed (its size asked for).
MEMORY_FIELDS = (
    "ts_ns", "thread_id", "bytes", "address", "total_allocated", "total_reserved", "device_type", "device", "kind",
)  # fmt: skip
MEMORY_USAGE, OUT_OF_MEMORY = 0, 1


def memory_events(memory: Mapping[str, list[int]], pid: int) -> list[dict[str, Any]]:
    """One instant event per allocator report of `memory` (the recorder's MEMORY_FIELDS columns), with the
    args profile_memory gives it: "[memory]" for an allocation or a free, "[OutOfMemory]" (no address) for
    an allocation that failed, as the profiler writes them."""
    events = []
    for ts_ns, tid, size, address, allocated, reserved, device_type, device, kind in zip(
        *(memory.get(c, ()) for c in MEMORY_FIELDS), strict=True
    ):
        args = {
            "Total Reserved": reserved,
            "Total Allocated": allocated,
            "Bytes": size,
            "Device Id": device,
            "Device Type": device_type,
        }
        name = MEMORY_EVENT if kind == MEMORY_USAGE else OUT_OF_MEMORY_EVENT
        if kind == MEMORY_USAGE:
            args["Addr"] = address
        events.append(
            {"ph": "i", "cat": MEMORY_CATEGORY, "s": "t", "name": name, "pid": pid, "tid": tid,
             "ts": ts_ns / 1000, "args": args}
        )  # fmt: skip
    return events


def _is_marked_range(name: str) -> bool:
    """Inductor's "## Call CompiledFxGraph <key> ##": made by torch's fast record function with the keyword
    scope="user_scope", which the profiler then writes as a named range (with record_shapes); the keyword
    does not reach a recorder that is not the profiler, so the name tells."""
    return name.startswith("## ") and name.endswith(" ##")


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


API_CATEGORIES = frozenset({"cuda_runtime", "cuda_driver"})
CORRELATION_BITS = 32  # a GPU part's correlation ids move up by its index times 2**32


def with_gpu_events(
    events: list[dict[str, Any]],
    gpu_trace: dict[str, Any],
    shift_ns: float,
    threads: Mapping[int, int] | None = None,
    correlation_offset: int = 0,
) -> dict[str, Any]:
    """A trace of `events` (trace_events', on the perf clock) and the GPU side of a Kineto trace recorded
    alongside (its other top-level keys too: devices, versions), moved onto the perf clock: its time less
    `shift_ns` (trace_minus_perf_ns). A launch's op is then found by time on its thread (the trace has no
    External ids from the profiler's CPU side to name it). Without the CPU side, Kineto names a CUDA call's
    thread by CUPTI's thread id, the low 32 bits of its pthread_self(): `threads` (pthread_self() -> OS
    thread id, the recorder's `threads`) puts the call on the thread its ops are on; a call on a thread it
    does not name goes to the thread whose ops hold most of its thread's calls (threads_by_time). Each
    session numbers its launches from 1 again: `correlation_offset` keeps a part's apart from the others'."""
    moved, calls = _gpu_side(gpu_trace, shift_ns, _cupti_ids(threads or {}), correlation_offset)
    _name_call_threads(events, calls)
    return {**_top_level(gpu_trace), "traceEvents": events + moved}


def _cupti_ids(threads: Mapping[int, int]) -> dict[int, int]:
    """pthread_self() -> OS thread id, as CUPTI's 32-bit thread id -> OS thread id."""
    return {pthread & 0xFFFFFFFF: tid for pthread, tid in threads.items()}


def _top_level(gpu_trace: dict[str, Any]) -> dict[str, Any]:
    """A GPU-only trace's keys besides its events and its own clock base (devices, versions)."""
    return {k: v for k, v in gpu_trace.items() if k not in ("traceEvents", "baseTimeNanoseconds", "traceName")}


def _gpu_side(
    gpu_trace: dict[str, Any], shift_ns: float, cupti_ids: Mapping[int, int], correlation_offset: int
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A GPU-only trace's events moved onto the perf clock (its metadata without time first), their
    correlation ids moved up by `correlation_offset`, the CUDA calls put on the OS thread their CUPTI id
    names; and those calls (the same objects) apart."""
    shift_us = shift_ns / 1000
    moved = [e for e in gpu_trace["traceEvents"] if e.get("ph") == "M" and "ts" not in e]
    calls: list[dict[str, Any]] = []
    for e in gpu_trace["traceEvents"]:
        if e.get("cat") in GPU_CATEGORIES and "ts" in e:
            event = {**e, "ts": e["ts"] - shift_us}
            if correlation_offset and isinstance(e.get("args", {}).get("correlation"), int):
                event["args"] = {**e["args"], "correlation": e["args"]["correlation"] + correlation_offset}
            if e["cat"] in API_CATEGORIES and isinstance(e.get("tid"), int):
                event["tid"] = cupti_ids.get(e["tid"] & 0xFFFFFFFF, e["tid"])
                calls.append(event)
            moved.append(event)
    return moved, calls


def _name_call_threads(events: list[dict[str, Any]], calls: list[dict[str, Any]]) -> None:
    """The calls on no op thread of `events` moved to the one threads_by_time chooses (in place)."""
    op_tids = {e["tid"] for e in events if e.get("cat") == OP_CATEGORY}
    unnamed = [e for e in calls if e["tid"] not in op_tids]
    if unnamed:
        by_time = threads_by_time(events, unnamed)
        for e in unnamed:
            e["tid"] = by_time.get(e["tid"], e["tid"])


def threads_by_time(events: list[dict[str, Any]], calls: list[dict[str, Any]]) -> dict[int, int]:
    """CUDA calls' thread ids -> the op thread that holds most of each one's calls inside its ops (a launch
    runs inside the op that launched it, on its thread): for a thread whose CUPTI id the pthread ids did
    not name. Chosen only when that thread holds more than half of the calls that fall inside any op."""
    spans: dict[int, list[tuple[float, float]]] = {}
    for e in events:
        if e.get("cat") == OP_CATEGORY:
            spans.setdefault(e["tid"], []).append((e["ts"], e["ts"] + e["dur"]))
    outer = {tid: _outermost(s) for tid, s in spans.items()}
    votes: dict[int, Counter[int]] = {}
    for call in calls:
        tally = votes.setdefault(call["tid"], Counter())
        for tid, (starts, ends) in outer.items():
            k = bisect.bisect_right(starts, call["ts"]) - 1
            if k >= 0 and ends[k] >= call["ts"]:
                tally[tid] += 1
    chosen = {}
    for cupti_id, tally in votes.items():
        if tally:
            tid, count = tally.most_common(1)[0]
            if count * 2 > sum(tally.values()):
                chosen[cupti_id] = tid
    return chosen


def _outermost(spans: list[tuple[float, float]]) -> tuple[list[float], list[float]]:
    """The starts and ends of the spans that no other span holds, in start order (ops nest on a thread)."""
    starts: list[float] = []
    ends: list[float] = []
    for start, end in sorted(spans):
        if ends and start <= ends[-1]:
            ends[-1] = max(ends[-1], end)
        else:
            starts.append(start)
            ends.append(end)
    return starts, ends


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
    write_trace_document(path, trace_document(ops, pid, user_scope, gpu_parts))


def write_trace_document(path: Path, trace: dict[str, Any]) -> None:
    """`trace_document`'s trace as JSON, gzipped where the name ends in .gz."""
    data = orjson.dumps(trace)
    path.write_bytes(gzip.compress(data, compresslevel=1) if path.suffix == ".gz" else data)


def trace_document(
    ops: dict[str, Any], pid: int, user_scope: int, gpu_parts: Sequence[tuple[dict[str, Any], int]] = ()
) -> dict[str, Any]:
    """The trace `write_trace` writes, as a dict (its events in `traceEvents`)."""
    events = trace_events(ops, pid, user_scope) + memory_events(ops.get("memory", {}), pid)
    threads = dict(ops.get("threads", ()))  # (pthread_self(), OS thread id) pairs
    cupti_ids = _cupti_ids(threads)
    top: dict[str, Any] = {"schemaVersion": 1, "deviceProperties": []}
    gpu: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    for k, (part, shift_ns) in enumerate(gpu_parts):  # later parts' devices and versions replace earlier ones'
        moved, part_calls = _gpu_side(part, shift_ns, cupti_ids, k << CORRELATION_BITS)
        top.update(_top_level(part))
        gpu += moved
        calls += part_calls
    _name_call_threads(events, calls)  # once, over every part's calls
    return {**top, "traceEvents": events + gpu, "tenprofThreads": sorted(threads.items())}
