"""The Kineto-format trace written from native op records (tenprof.capture.native_trace), on records made
up here: categories, units, arguments and the autograd engine's ranges' sequence numbers; and the input
signatures the native recorder encodes, decoded as the profiler writes them (tenprof.capture.native_lines);
the allocators' reports as profile_memory's instant events; and the GPU side of a Kineto trace merged in, on
real GPU recordings of tests/data, one made by the native capture on an H100 (tests/data/native_mlp), one by
tenprof's own CUPTI client with inputs asked in sampled steps on an H200 (tests/data/cupti_mlp), and the
same with op records in the asked steps alone (tests/data/cupti_mlp_ops);
and the same GPU side as tenprof's own CUPTI client hands it over (tenprof.capture.cupti_client)."""

from __future__ import annotations

import gzip
import shutil
import struct
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest

from tenprof.capture import input_encoding as ie
from tenprof.capture.cupti_client import (
    KIND_CONCURRENT_KERNEL,
    KIND_DRIVER,
    KIND_MEMCPY,
    KIND_MEMSET,
    KIND_RUNTIME,
    RECORD,
)
from tenprof.capture.cupti_client import gpu_trace as cupti_gpu_trace
from tenprof.capture.native_trace import (
    MEMORY_FIELDS,
    MEMORY_USAGE,
    OUT_OF_MEMORY,
    memory_events,
    threads_by_time,
    trace_events,
    trace_minus_perf_ns,
    with_gpu_events,
    write_trace,
)
from tenprof.importers.timeline_import import build_pass
from tenprof.store.profile import Profile, load_profile
from tests.conftest import DATA, rebuild_pass
from tests.helpers import recording

USER_SCOPE = 7
NAMES = ["ProfilerStep#1", "aten::mm", "autograd::engine::evaluate_function: MmBackward0", "MmBackward0", "aten::t"]


def _records(rows: list[tuple[int, int, int, int, int, int]]) -> dict[str, list[int] | list[str]]:
    """rows: (thread, start, end, name id, sequence nr, scope); forward thread 0, depth 0."""
    columns: dict[str, list[int] | list[str]] = {
        "thread_id": [r[0] for r in rows],
        "start_ns": [r[1] for r in rows],
        "end_ns": [r[2] for r in rows],
        "name_id": [r[3] for r in rows],
        "sequence_nr": [r[4] for r in rows],
        "forward_thread_id": [0] * len(rows),
        "depth": [0] * len(rows),
        "scope": [r[5] for r in rows],
        "names": NAMES,
    }
    return columns


def test_ops_and_ranges_become_complete_events_in_start_order_in_microseconds() -> None:
    events = trace_events(
        _records([(1, 5_000, 9_000, 1, 3, 0), (1, 1_000, 20_000, 0, -1, USER_SCOPE), (2, 2_000, 2_500, 4, -1, 0)]),
        pid=42,
        user_scope=USER_SCOPE,
    )
    assert [(e["name"], e["cat"], e["tid"], e["ts"], e["dur"]) for e in events] == [
        ("ProfilerStep#1", "user_annotation", 1, 1.0, 19.0),
        ("aten::t", "cpu_op", 2, 2.0, 0.5),
        ("aten::mm", "cpu_op", 1, 5.0, 4.0),
    ]
    assert [e["args"]["External id"] for e in events] == [1, 2, 3]
    assert "Sequence number" not in events[0]["args"] and events[2]["args"]["Sequence number"] == 3
    assert {e["pid"] for e in events} == {42} and {e["ph"] for e in events} == {"X"}


def test_the_engines_range_takes_the_sequence_number_of_the_node_it_runs() -> None:
    # evaluate_function: MmBackward0 on thread 1 runs MmBackward0 (seq 7) first; on thread 2 the range's
    # first op inside is another one, and it keeps none
    events = trace_events(
        _records(
            [
                (1, 100, 900, 2, -1, 0),
                (1, 110, 800, 3, 7, 0),
                (1, 120, 300, 1, 7, 0),
                (2, 100, 900, 2, -1, 0),
                (2, 110, 800, 4, -1, 0),
            ]
        ),
        pid=1,
        user_scope=USER_SCOPE,
    )
    sequence = {(e["tid"], e["name"]): e["args"]["Sequence number"] for e in events}
    assert sequence[(1, "autograd::engine::evaluate_function: MmBackward0")] == 7
    assert sequence[(2, "autograd::engine::evaluate_function: MmBackward0")] == -1


def test_input_signatures_read_as_the_profilers_record_shapes_writes_them() -> None:
    def double(value: float) -> int:
        return int.from_bytes(struct.pack("<d", value), "little", signed=True)

    tensor = (ie.INPUT_TENSOR, 6, 2, 64, 32, 32, 1)  # float [64, 32], strides [32, 1]
    tensors = (ie.INPUT_TENSOR_LIST, 2, 15, 1, 8, 1, -1, 0)  # [bf16 [8], undefined]
    scalars = (ie.INPUT_INT, 6, ie.INPUT_BOOL, 0, ie.INPUT_DOUBLE, double(0.0), ie.INPUT_DOUBLE, double(-0.001))
    lists = (ie.INPUT_INT_LIST, 2, 256, 256, ie.INPUT_INT_LIST, 0, ie.INPUT_NONE)
    key = (*tensor, *tensors, *scalars, *lists)
    names = {6: "float", 15: "c10::BFloat16"}
    dims, types, strides, values = ie.decode_signature(key, names.__getitem__)
    assert dims == [[64, 32], [[8], []], [], [], [], [], [], [], []]
    assert types == ["float", "TensorList", "Scalar", "Scalar", "Scalar", "Scalar", "ScalarList", "ScalarList", ""]
    assert strides == [[32, 1], [[1], []], [], [], [], [], [], [], []]
    assert values == ["", "", "6", "False", "0.", "-0.001", "[256, 256]", "[]", ""]
    assert ie.decode_signature((), names.__getitem__) == [[], [], [], []]


def test_the_wall_clock_pairs_map_a_gpu_trace_onto_the_perf_clock() -> None:
    base = 1_790_000_000_000_000_000
    # wall - perf = 5_000 (+-1 of reading jitter), read three times; Kineto's times are wall - base
    pairs = [[100, 5_101, 102], [200, 5_200, 200], [300, 5_299, 298]]
    assert trace_minus_perf_ns(pairs, base) == 5_000 - base
    with pytest.raises(ValueError, match="no clock pairs"):
        trace_minus_perf_ns([], base)


@pytest.mark.parametrize("gpu_side", ["kineto", "own client"])
@pytest.mark.parametrize("case", ["mlp", "user_kernels"])
def test_a_gpu_only_trace_merged_with_op_records_attributes_kernels_as_the_full_trace(
    case: str, gpu_side: str, tmp_path: Path
) -> None:
    # A GPU recording's own trace split as the capture without Kineto's CPU side records it: its ops and
    # ranges as native records on another clock (shifted by SHIFT), and a GPU-only trace without the
    # External ids that name a launch's op, its CUDA calls on CUPTI's thread ids (the low 32 bits of each
    # thread's pthread_self(), made up here). Merged and imported, every kernel gets the same op and line
    # as from the full trace (launches found in their ops by time on their thread).
    shift = 123_456_789_000
    raw = DATA / case / "timeline" / "raw"
    trace = orjson.loads(gzip.decompress((raw / "kineto_trace.json.gz").read_bytes()))
    cpu = [e for e in trace["traceEvents"] if e.get("cat") in ("cpu_op", "user_annotation") and e.get("ph") == "X"]
    names = sorted({e["name"] for e in cpu})
    ops = {
        "thread_id": [e["tid"] for e in cpu],
        "start_ns": [round(e["ts"] * 1000) - shift for e in cpu],
        "end_ns": [round((e["ts"] + e["dur"]) * 1000) - shift for e in cpu],
        "name_id": [names.index(e["name"]) for e in cpu],
        "sequence_nr": [e["args"].get("Sequence number", -1) for e in cpu],
        "forward_thread_id": [e["args"].get("Fwd thread id", 0) for e in cpu],
        "depth": [0] * len(cpu),
        "scope": [USER_SCOPE if e["cat"] == "user_annotation" else 0 for e in cpu],
        "signature_id": [-1] * len(cpu),
        "names": names,
    }
    cpu_side = ("cpu_op", "user_annotation", "cpu_instant_event", "python_function")
    gpu_only = [e for e in trace["traceEvents"] if e.get("cat") not in cpu_side]
    pthreads = {tid: 0x7F3A_0000_0640 + k * 0x80_0000 for k, tid in enumerate(sorted(set(ops["thread_id"])))}
    for e in gpu_only:
        e.get("args", {}).pop("External id", None)
        if e.get("cat") in ("cuda_runtime", "cuda_driver"):
            e["tid"] = pthreads[e["tid"]] & 0xFFFFFFFF
    threads = {pthread: tid for tid, pthread in pthreads.items()}
    gpu_trace_of_part = {**trace, "traceEvents": gpu_only}
    if gpu_side == "own client":  # the same records as tenprof's CUPTI client hands them over: on the perf clock
        records, record_names = _as_client_records(gpu_only, shift)
        gpu_trace_of_part, shift = cupti_gpu_trace(records, record_names, 1, trace.get("deviceProperties", [])), 0
    merged = with_gpu_events(trace_events(ops, 1, USER_SCOPE), gpu_trace_of_part, shift, threads)
    copy = tmp_path / case
    shutil.copytree(DATA / case, copy)
    kept = copy / "timeline" / "raw"
    (kept / "kineto_trace.json.gz").write_bytes(gzip.compress(orjson.dumps(merged)))
    rebuild_pass(copy, "timeline", lambda w, r: build_pass(w, r / "kineto_trace.json.gz", r / "callsites.json.gz"))
    full, split = recording(DATA / case), load_profile(copy)
    assert split.table("kernels").num_rows == full.table("kernels").num_rows > 0
    assert _kernel_ops(split) == _kernel_ops(full)


def _as_client_records(events: list[dict[str, Any]], shift_ns: int) -> tuple[np.ndarray, list[str]]:
    """A GPU-only trace's kernels, copies, memsets and CUDA calls as cupti_client.RECORD rows, their times
    less `shift_ns` (nanoseconds), and the names they index."""
    kinds = {"kernel": KIND_CONCURRENT_KERNEL, "gpu_memcpy": KIND_MEMCPY, "gpu_memset": KIND_MEMSET}
    kinds |= {"cuda_runtime": KIND_RUNTIME, "cuda_driver": KIND_DRIVER}
    chosen = [e for e in events if e.get("cat") in kinds and e.get("ph") == "X"]
    names = sorted({e["name"] for e in chosen})
    records = np.zeros(len(chosen), dtype=RECORD)
    for k, e in enumerate(chosen):
        args, api = e.get("args", {}), e["cat"] in ("cuda_runtime", "cuda_driver")
        start = round(e["ts"] * 1000) - shift_ns
        records[k] = (
            kinds[e["cat"]], names.index(e["name"]), start, start + round(e["dur"] * 1000),
            -1 if api else args.get("device", 0), -1 if api else args.get("stream", 0), args.get("correlation", 0),
            e["tid"] if api else 0, args.get("grid", [0, 0, 0]), args.get("block", [0, 0, 0]),
            args.get("registers per thread", 0), args.get("shared memory", 0), args.get("bytes", 0),
            args.get("cbid", 0), args.get("context", 0),
        )  # fmt: skip
    return records, names


def _kernel_ops(profile: Profile) -> list[tuple[str, int]]:
    """Each kernel's op name and Python frame, in kernel order."""
    ops = profile.table("ops")
    names, frames = ops.column("name").to_pylist(), ops.column("frame_id").to_pylist()
    return [(names[i], frames[i]) if i >= 0 else ("", -1) for i in profile.table("kernels").column("op_id").to_pylist()]


def test_the_trace_written_holds_each_gpu_part_on_the_perf_clock(tmp_path: Path) -> None:
    ops = _records([(1, 1_000, 9_000, 1, 3, 0)])
    kernel = {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 10.0, "dur": 2.0, "args": {}}
    launch = {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 42, "tid": 1, "ts": 7.5, "dur": 1}
    stream = {"ph": "M", "name": "thread_name", "pid": 0, "tid": 7, "args": {"name": "stream 7"}}
    cpu = {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 42, "tid": 1, "ts": 7.0, "dur": 3.0}
    part = {"deviceProperties": [{"id": 0}], "baseTimeNanoseconds": 5, "traceEvents": [kernel, launch, stream, cpu]}
    launch["tid"] = 0x2FF7_8940  # CUPTI's: pthread_self()'s low 32 bits
    ops["threads"] = [[0x7F12_2FF7_8940, 1]]  # (pthread_self(), OS thread id), as the recorder gives them
    write_trace(tmp_path / "t.json.gz", ops, 42, USER_SCOPE, [(part, 4_000)])
    write_trace(tmp_path / "t.json", ops, 42, USER_SCOPE, [(part, 4_000)])  # plain, as the profiler's export
    trace = orjson.loads(gzip.decompress((tmp_path / "t.json.gz").read_bytes()))
    assert orjson.loads((tmp_path / "t.json").read_bytes()) == trace
    assert trace["deviceProperties"] == [{"id": 0}] and "baseTimeNanoseconds" not in trace
    by_cat = {e.get("cat"): e for e in trace["traceEvents"]}
    assert by_cat["kernel"]["ts"] == 6.0 and by_cat["cuda_runtime"]["ts"] == 3.5  # 4 us earlier: the perf clock
    assert by_cat["cuda_runtime"]["tid"] == 1 and by_cat["kernel"]["tid"] == 7  # the call on its op's thread
    assert by_cat["cpu_op"]["name"] == "aten::mm" and by_cat["cpu_op"]["ts"] == 1.0  # the native record, not the part's
    assert sum(e.get("cat") == "cpu_op" for e in trace["traceEvents"]) == 1 and by_cat[None]["ph"] == "M"


def test_each_gpu_part_keeps_its_launches_apart_and_an_unnamed_thread_goes_where_its_calls_fall(
    tmp_path: Path,
) -> None:
    # Two recorded windows, each a session numbering its launches from 1: the same correlation id in both
    # must still join each kernel to its own call. The calls' CUPTI thread id (0x49EF6EC0) is not among the
    # recorder's pthread ids: its calls fall inside thread 2's ops, not thread 1's, so they go to thread 2.
    ops = _records([(1, 1_000, 2_000, 1, 3, 0), (2, 3_000, 9_000, 1, 4, 0), (2, 13_000, 19_000, 4, 5, 0)])
    ops["threads"] = [[0x7F12_2FF7_8940, 1]]

    def part(ts: float) -> dict[str, object]:
        kernel = {"ph": "X", "cat": "kernel", "name": "k", "tid": 7, "ts": ts + 1, "dur": 1, "args": {"correlation": 5}}
        call = {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "tid": 0x49EF6EC0, "ts": ts, "dur": 0.5}
        return {"traceEvents": [kernel, {**call, "args": {"correlation": 5}}]}

    write_trace(tmp_path / "t.json", ops, 42, USER_SCOPE, [(part(4.0), 0), (part(14.0), 0)])
    trace = orjson.loads((tmp_path / "t.json").read_bytes())
    gpu = [e for e in trace["traceEvents"] if e.get("cat") in ("kernel", "cuda_runtime")]
    assert sorted((e["cat"], e["args"]["correlation"]) for e in gpu) == [
        ("cuda_runtime", 5), ("cuda_runtime", 5 + 2**32), ("kernel", 5), ("kernel", 5 + 2**32)
    ]  # fmt: skip
    assert {e["tid"] for e in gpu if e["cat"] == "cuda_runtime"} == {2}
    assert trace["tenprofThreads"] == [[0x7F12_2FF7_8940, 1]]


def test_a_thread_is_not_guessed_when_no_thread_holds_most_of_its_calls() -> None:
    events = trace_events(_records([(1, 0, 10_000, 1, 3, 0), (2, 20_000, 30_000, 1, 4, 0)]), 42, USER_SCOPE)
    calls = [{"tid": 9, "ts": 5.0}, {"tid": 9, "ts": 25.0}, {"tid": 8, "ts": 40.0}]  # one in each; one in none
    assert threads_by_time(events, calls) == {}
    assert threads_by_time(events, [*calls, {"tid": 9, "ts": 26.0}]) == {9: 2}


def test_allocator_reports_become_memory_instant_events_and_a_failed_allocation_an_out_of_memory_one() -> None:
    rows = [
        # time, thread, bytes, address, total allocated, total reserved, device type, device, kind
        (7_500, 11, 4096, 0x7F00, 4096, 2 << 20, 1, 0, MEMORY_USAGE),
        (9_000, 12, -4096, 0x7F00, 0, 2 << 20, 1, 0, MEMORY_USAGE),
        (9_500, 11, 1 << 40, 0, 0, 2 << 20, 1, 0, OUT_OF_MEMORY),
        (9_800, 11, 64, 0x5500, 64, 0, 0, -1, MEMORY_USAGE),
    ]
    memory = {name: [r[i] for r in rows] for i, name in enumerate(MEMORY_FIELDS)}
    events = memory_events(memory, pid=3)
    assert [
        (e["ts"], e["tid"], e["args"]["Bytes"], e["args"]["Device Type"], e["args"]["Device Id"]) for e in events
    ] == [
        (7.5, 11, 4096, 1, 0),
        (9.0, 12, -4096, 1, 0),
        (9.5, 11, 1 << 40, 1, 0),
        (9.8, 11, 64, 0, -1),
    ]
    assert [e["name"] for e in events] == ["[memory]", "[memory]", "[OutOfMemory]", "[memory]"]
    assert {(e["ph"], e["cat"], e["pid"]) for e in events} == {("i", "cpu_instant_event", 3)}
    assert "Addr" not in events[2]["args"]  # as torch.profiler writes it: the failed allocation has no block
    assert events[0]["args"] == {
        "Total Reserved": 2 << 20, "Total Allocated": 4096, "Bytes": 4096, "Device Id": 0, "Device Type": 1,
        "Addr": 0x7F00,
    }  # fmt: skip
    assert memory_events({}, pid=3) == []


def _stored_equals_rebuilt(tmp_path: Path, case: str) -> Profile:
    """The recording of tests/data rebuilt from its raw trace and call-site log by the importer: the stored
    tables again. Returns the stored profile."""
    copy = tmp_path / case
    shutil.copytree(DATA / case, copy)
    rebuild_pass(copy, "timeline", lambda w, r: build_pass(w, r / "kineto_trace.json.gz", r / "callsites.json.gz"))
    stored, rebuilt = recording(DATA / case), load_profile(copy)
    for table in ("ops", "kernels", "memory", "steps"):
        kept = stored.table(table)
        # a recording from before a column was added reads it as nulls: the columns it has are compared
        have = [name for name in kept.column_names if kept[name].null_count < kept.num_rows]
        assert rebuilt.table(table).select(have).equals(kept.select(have)), table
    return stored


def _on_a_line_of(profile: Profile, script: str, op_ids: list[int]) -> bool:
    """Whether each op has a line of `script` on its Python stack."""
    frames = profile.table("frames")
    files, parents = frames.column("file").to_pylist(), frames.column("parent_frame_id").to_pylist()
    op_frames = profile.table("ops").column("frame_id").to_pylist()

    def in_script(frame: int) -> bool:
        while frame >= 0 and not files[frame].endswith(script):
            frame = parents[frame]
        return frame >= 0

    return all(in_script(op_frames[op]) for op in op_ids)


def test_the_native_capture_of_a_gpu_run_rebuilds_with_every_step_kernel_and_memory_sample_placed(
    tmp_path: Path,
) -> None:
    # Recorded on an H100 by `tenprof run --capture native` (tests/data/README.md); rebuilt here from its raw
    # trace and call-site log by the importer, it gives the stored tables again, and what they hold is the
    # capture's: every recorded step marked (steps 3-4 run un-profiled), every kernel at an op and a line of
    # the script, the allocators' samples on the GPU and the CPU, most inside ops.
    stored = _stored_equals_rebuilt(tmp_path, "native_mlp")
    steps = stored.table("steps")
    assert steps.column("step").to_pylist() == [0, 1, 2, 3, 4, 5, 6, 7]
    assert steps.column("capture_on").to_pylist() == [True, True, True, False, False, True, True, True]
    ops = stored.table("ops")
    kernel_ops = stored.table("kernels").column("op_id").to_pylist()
    assert len(kernel_ops) == 666 and min(kernel_ops) >= 0
    assert _on_a_line_of(stored, "small_mlp.py", kernel_ops)
    per_step = Counter(ops.column("step").to_pylist()[op] for op in kernel_ops)
    assert per_step == {0: 134, 1: 133, 2: 133, 5: 133, 6: 133}
    memory = stored.table("memory")
    devices = Counter(memory.column("device_type").to_pylist())
    assert devices["cuda"] > 1000 and devices["cpu"] > 0
    in_ops = sum(op >= 0 for op in memory.column("op_id").to_pylist())
    assert in_ops > 0.7 * memory.num_rows


def test_the_native_cupti_capture_of_a_gpu_run_rebuilds_with_shapes_copied_into_the_steps_it_did_not_ask(
    tmp_path: Path,
) -> None:
    # Recorded on an H200 by `tenprof run --capture native-cupti` (tests/data/README.md): tenprof's own CUPTI
    # client, inputs asked in sampled steps alone. Rebuilt from its raw files it gives the stored tables again;
    # every kernel is at an op on a line of the script; 3 of the 9 recorded steps were asked for their inputs
    # and the other steps' ops carry the signatures copied from them, so every recorded step after the first
    # has the same ops with the same shapes and dtypes, in order.
    stored = _stored_equals_rebuilt(tmp_path, "cupti_mlp")
    sampling = stored.meta.timeline.input_sampling
    assert (sampling["steps"], sampling["asked_steps"], sampling["left"]) == (9, 3, 0)
    assert sampling["filled"] == sampling["not_asked"] > 0
    steps = stored.table("steps")
    numbers, on = steps.column("step").to_pylist(), steps.column("capture_on").to_pylist()
    recorded = [s for s, captured in zip(numbers, on, strict=True) if captured]
    assert recorded == [0, 1, 2, 5, 6, 7, 10, 11, 12]
    ops = stored.table("ops").to_pydict()
    per_step: dict[int, list[tuple[str, str, str]]] = {s: [] for s in recorded}
    for name, step, shapes, dtypes in zip(
        ops["name"], ops["step"], ops["input_shapes"], ops["input_dtypes"], strict=True
    ):
        if step in per_step:
            per_step[step].append((name, shapes, dtypes))
    later = [per_step[s] for s in recorded[1:]]
    assert all(signatures == later[0] for signatures in later)
    assert sum(shapes not in ("", "[]") for _, shapes, _ in later[0]) > 0.8 * len(later[0])
    kernel_ops = stored.table("kernels").column("op_id").to_pylist()
    assert min(kernel_ops) >= 0 and _on_a_line_of(stored, "small_mlp.py", kernel_ops)


def test_ops_recorded_in_sampled_steps_alone_on_a_gpu_give_every_step_the_same_kernels_ops_and_lines(
    tmp_path: Path,
) -> None:
    # Recorded on an H200 by `TENPROF_OPS=sampled tenprof run --capture native-cupti` (tests/data/README.md):
    # the op callbacks ran in the three steps the input sampling asked in (0-2) alone; the six others'
    # ops were copied from the asked step whose launches they repeat. Rebuilt from its raw files it gives
    # the stored tables again, and every recorded step after the first launches the same kernels from the
    # same ops on the same lines of the script as the asked steps did.
    stored = _stored_equals_rebuilt(tmp_path, "cupti_mlp_ops")
    timeline = stored.meta.timeline
    assert timeline.input_sampling["asked"] == [0, 1, 2]
    copy = timeline.op_copy
    assert (copy["steps_without_ops"], copy["copied_steps"], copy["unmatched"]) == (6, 6, [])
    assert copy["launches_changed"] == 0 and copy["ops"] > 3000
    kernels = stored.table("kernels").to_pydict()
    ops = stored.table("ops").to_pydict()
    frames = stored.table("frames").to_pydict()
    assert min(kernels["op_id"]) >= 0 and _on_a_line_of(stored, "small_mlp.py", kernels["op_id"])
    per_step: dict[int, list[tuple[str, str, int]]] = {}
    for name, op in sorted(zip(kernels["name"], kernels["op_id"], strict=True), key=lambda k: k[1]):
        frame = ops["frame_id"][op]
        line = frames["line"][frame] if frame >= 0 else -1
        per_step.setdefault(ops["step"][op], []).append((name, ops["name"][op], line))
    assert sorted(per_step) == [0, 1, 2, 5, 6, 7, 10, 11, 12]
    asked, copied = per_step[1], [per_step[s] for s in (5, 6, 7, 10, 11, 12)]
    assert len(asked) == 133 and all(launches == asked for launches in copied)
    assert sum(line > 0 for _, _, line in asked) == len(asked)


def test_inductors_marked_graph_call_is_a_named_range_as_the_profiler_writes_it() -> None:
    names = ["## Call CompiledFxGraph fabc ##", "aten::mm"]
    columns = {**_records([(1, 1_000, 9_000, 0, -1, 0), (1, 2_000, 3_000, 1, 4, 0)]), "names": names}
    events = trace_events(columns, pid=1, user_scope=USER_SCOPE)
    assert [(e["name"], e["cat"]) for e in events] == [
        ("## Call CompiledFxGraph fabc ##", "user_annotation"),
        ("aten::mm", "cpu_op"),
    ]
