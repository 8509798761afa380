"""A Chrome-JSON trace that Perfetto (ui.perfetto.dev) and chrome://tracing open.

Tracks: one process for the host with a track per CPU thread (ops, scopes and CUDA API calls as
slices, nested by time) plus a "steps" track; one process per GPU with a track per stream (kernels and
copies; a torch.compile generated kernel's args name the aten ops it fuses and their lines); flow arrows
from each launching API call to its kernel or copy; a counter track per device for allocated memory, and,
where the timeline pass sampled the GPUs (NVML), counter tracks per device for its SM clock (MHz), power
draw (W) and temperature (C).
Events are written one at a time, so memory stays flat for big profiles.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import IO, Any

import numpy as np
import orjson
import pyarrow as pa

from tenprof.renderers.perfetto_cut import CutReport, TraceCut, cut_events
from tenprof.store.profile import Profile

_GPU_PID_BASE = 1_000_000
_HOST_PID = 1
_STEPS_TID = 0
_SAMPLED_TID = -1  # the host sampler's track (no thread has this id)


def _frame_labels(profile: Profile) -> list[str]:
    f = profile.table("frames")
    return [
        f"{fn} ({file}:{line})"
        for fn, file, line in zip(
            f.column("function").to_pylist(),
            f.column("file").to_pylist(),
            f.column("line").to_pylist(),
            strict=True,
        )
    ]


def _origin_ns(profile: Profile) -> int:
    """The earliest start (or memory sample) of the profile: the trace's time zero."""
    starts = [
        t.column("start_ns").to_numpy()
        for t in (
            profile.table("ops"),
            profile.table("kernels"),
            profile.table("transfers"),
            profile.table("api_calls"),
            profile.table("steps"),
            profile.table("scopes"),
        )
        if t.num_rows
    ]
    for counters in ("memory", "gpu_samples"):
        if profile.table(counters).num_rows:
            starts.append(profile.table(counters).column("ts_ns").to_numpy())
    return int(min(s.min() for s in starts)) if starts else 0


def _us(ns: int, origin: int) -> float:
    """A time in ns on the profile's clock -> microseconds since `origin`, the trace's unit."""
    return (int(ns) - origin) / 1000.0


def perfetto_events(profile: Profile) -> Iterator[dict[str, Any]]:
    """Every event of the trace, one at a time: track names, then steps, scopes, ops and CUDA API calls on
    the host, then kernels and copies on the GPUs (each followed by its launch flow), then memory counters and
    the GPUs' clock, power and temperature counters."""
    origin = _origin_ns(profile)
    yield from _track_names(profile)
    labels = _frame_labels(profile)
    yield from _step_slices(profile, origin)
    yield from _scope_slices(profile, origin)
    yield from _op_slices(profile, labels, origin)
    yield from _api_slices(profile, origin)
    yield from _device_slices(profile, labels, origin)
    yield from _memory_counters(profile, origin)
    yield from _gpu_sample_counters(profile, origin)
    yield from _sampled_slices(profile, origin)


def _track_names(profile: Profile) -> Iterator[dict[str, Any]]:
    """Metadata naming the processes and tracks: the host with its steps track and a track per CPU thread,
    a process per GPU with a track per stream."""
    ops, api = profile.table("ops"), profile.table("api_calls")
    kernels, transfers = profile.table("kernels"), profile.table("transfers")
    command = " ".join(profile.meta.command) or "host"
    yield {"ph": "M", "name": "process_name", "pid": _HOST_PID, "args": {"name": f"CPU: {command}"}}
    yield _thread_name(_HOST_PID, _STEPS_TID, "steps")
    threads = set(ops.column("thread_id").to_pylist()) | set(api.column("thread_id").to_pylist())
    for tid in sorted(threads):
        yield _thread_name(_HOST_PID, tid, f"thread {tid}")
    gpu_names = {g.index: g.name for g in profile.meta.gpus}
    streams = set(zip(kernels.column("device").to_pylist(), kernels.column("stream").to_pylist(), strict=True))
    streams |= set(zip(transfers.column("device").to_pylist(), transfers.column("stream").to_pylist(), strict=True))
    sampled = set(profile.table("gpu_samples").column("device").to_pylist())  # a GPU sampled, though idle
    for device in sorted({d for d, _ in streams} | sampled):
        yield {
            "ph": "M",
            "name": "process_name",
            "pid": _GPU_PID_BASE + device,
            "args": {"name": f"GPU {device}" + (f": {gpu_names[device]}" if device in gpu_names else "")},
        }
    for device, stream in sorted(streams):
        yield _thread_name(_GPU_PID_BASE + device, stream, f"stream {stream}")


def _thread_name(pid: int, tid: int, name: str) -> dict[str, Any]:
    """The metadata event naming a track."""
    return {"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": name}}


def _step_slices(profile: Profile, origin: int) -> Iterator[dict[str, Any]]:
    """A slice per step on the host's steps track."""
    steps = profile.table("steps")
    for step, s, d in zip(
        steps.column("step").to_pylist(),
        steps.column("start_ns").to_pylist(),
        steps.column("duration_ns").to_pylist(),
        strict=True,
    ):
        yield {
            "ph": "X",
            "name": f"step {step}",
            "cat": "step",
            "pid": _HOST_PID,
            "tid": _STEPS_TID,
            "ts": _us(s, origin),
            "dur": d / 1000.0,
        }


def _scope_slices(profile: Profile, origin: int) -> Iterator[dict[str, Any]]:
    """A slice per scope on its thread's track."""
    scopes = profile.table("scopes")
    for name, tid, s, e in zip(
        scopes.column("name").to_pylist(),
        scopes.column("thread_id").to_pylist(),
        scopes.column("start_ns").to_pylist(),
        scopes.column("end_ns").to_pylist(),
        strict=True,
    ):
        yield {
            "ph": "X",
            "name": name,
            "cat": "scope",
            "pid": _HOST_PID,
            "tid": tid,
            "ts": _us(s, origin),
            "dur": (e - s) / 1000.0,
        }


def _op_slices(profile: Profile, labels: list[str], origin: int) -> Iterator[dict[str, Any]]:
    """A slice per op on its thread's track, with its input shapes and Python line (`labels`: frame_id ->
    label)."""
    ops = profile.table("ops")
    for op_id, name, tid, s, d, shapes, fid in zip(
        ops.column("op_id").to_pylist(),
        ops.column("name").to_pylist(),
        ops.column("thread_id").to_pylist(),
        ops.column("start_ns").to_pylist(),
        ops.column("duration_ns").to_pylist(),
        ops.column("input_shapes").to_pylist(),
        ops.column("frame_id").to_pylist(),
        strict=True,
    ):
        args: dict[str, Any] = {"op_id": op_id, "input shapes": shapes}
        if fid >= 0:
            args["python"] = labels[fid]
        yield {
            "ph": "X",
            "name": name,
            "cat": "op",
            "pid": _HOST_PID,
            "tid": tid,
            "ts": _us(s, origin),
            "dur": d / 1000.0,
            "args": args,
        }


def _api_slices(profile: Profile, origin: int) -> Iterator[dict[str, Any]]:
    """A slice per CUDA API call on its thread's track, with its correlation id."""
    api = profile.table("api_calls")
    for name, tid, s, d, corr in zip(
        api.column("name").to_pylist(),
        api.column("thread_id").to_pylist(),
        api.column("start_ns").to_pylist(),
        api.column("duration_ns").to_pylist(),
        api.column("correlation_id").to_pylist(),
        strict=True,
    ):
        yield {
            "ph": "X",
            "name": name,
            "cat": "cuda_api",
            "pid": _HOST_PID,
            "tid": tid,
            "ts": _us(s, origin),
            "dur": d / 1000.0,
            "args": {"correlation": corr},
        }


class _Launches:
    """Where the launch flows start: the host thread and start of each API call, by id or correlation id."""

    def __init__(self, api: pa.Table) -> None:
        self.start = api.column("start_ns").to_numpy()
        self.tid = api.column("thread_id").to_numpy()
        self.corr_to_api: dict[int, int] = {}
        for i, corr in enumerate(api.column("correlation_id").to_pylist()):
            if corr >= 0:
                self.corr_to_api.setdefault(corr, i)

    def flow(self, api_id: int, corr: int, pid: int, stream: int, s: int, origin: int) -> Iterator[dict[str, Any]]:
        """The flow arrow from API call `api_id` to the kernel or copy starting at `s` on (pid, stream)."""
        yield {
            "ph": "s",
            "id": corr,
            "name": "launch",
            "cat": "launch",
            "pid": _HOST_PID,
            "tid": int(self.tid[api_id]),
            "ts": _us(int(self.start[api_id]), origin),
        }
        yield {
            "ph": "f",
            "bp": "e",
            "id": corr,
            "name": "launch",
            "cat": "launch",
            "pid": pid,
            "tid": stream,
            "ts": _us(s, origin),
        }


def _device_slices(profile: Profile, labels: list[str], origin: int) -> Iterator[dict[str, Any]]:
    """Every kernel, then every copy, as a slice on its stream's track, each followed by the flow from the API
    call that launched it (a kernel's by its api_call_id, a copy's by its correlation id)."""
    op_frame = np.asarray(profile.table("ops").column("frame_id").to_pylist(), dtype=np.int64)
    launches = _Launches(profile.table("api_calls"))
    # a torch.compile generated kernel also names the aten ops it fuses and their source lines
    fused = {
        r["kernel"]: {"fuses": r["aten_ops"], "fused lines": r["lines"], "attribution": r["confidence"]}
        for r in profile.table("compiled_kernels").to_pylist()
    }
    for table, cat in ((profile.table("kernels"), "kernel"), (profile.table("transfers"), "transfer")):
        extra = ("grid_x", "block_x", "registers_per_thread") if cat == "kernel" else ("bytes", "bandwidth_gbps")
        extra_cols = [table.column(c).to_pylist() for c in extra]
        for row, (name, device, stream, s, d, op, api_id, corr) in enumerate(
            zip(
                table.column("name").to_pylist(),
                table.column("device").to_pylist(),
                table.column("stream").to_pylist(),
                table.column("start_ns").to_pylist(),
                table.column("duration_ns").to_pylist(),
                table.column("op_id").to_pylist(),
                table.column("api_call_id").to_pylist() if cat == "kernel" else [-1] * table.num_rows,
                table.column("correlation_id").to_pylist(),
                strict=True,
            )
        ):
            pid = _GPU_PID_BASE + device
            args = {c: extra_cols[j][row] for j, c in enumerate(extra)}
            args["op_id"] = op
            if op >= 0 and op_frame[op] >= 0:
                args["python"] = labels[op_frame[op]]
            if name in fused:
                args.update(fused[name])
            yield {
                "ph": "X",
                "name": name,
                "cat": cat,
                "pid": pid,
                "tid": stream,
                "ts": _us(s, origin),
                "dur": d / 1000.0,
                "args": args,
            }
            if cat == "transfer":
                api_id = launches.corr_to_api.get(corr, -1)
            if api_id >= 0:
                yield from launches.flow(api_id, corr, pid, stream, s, origin)


def _memory_counters(profile: Profile, origin: int) -> Iterator[dict[str, Any]]:
    """A counter sample per allocator sample that knows the total allocated: a track per GPU, one for the
    CPU."""
    mem = profile.table("memory")
    for ts, dtype, device, total in zip(
        mem.column("ts_ns").to_pylist(),
        mem.column("device_type").to_pylist(),
        mem.column("device").to_pylist(),
        mem.column("total_allocated_bytes").to_pylist(),
        strict=True,
    ):
        if total < 0:
            continue
        track = f"GPU {device} memory allocated" if dtype == "cuda" else "CPU memory allocated"
        pid = _GPU_PID_BASE + device if dtype == "cuda" else _HOST_PID
        yield {"ph": "C", "name": track, "pid": pid, "ts": _us(ts, origin), "args": {"MiB": round(total / 2**20, 3)}}


# gpu_samples column -> the counter track's name (after "GPU n ") and its value's unit
_GPU_COUNTERS = (("sm_clock_mhz", "SM clock", "MHz"), ("power_w", "power", "W"), ("temperature_c", "temperature", "C"))


def _gpu_sample_counters(profile: Profile, origin: int) -> Iterator[dict[str, Any]]:
    """A counter sample per NVML read of a GPU (the gpu_samples table): its SM clock, power draw and
    temperature, a track each, in its GPU's process; a value NVML could not read is left out."""
    samples = profile.table("gpu_samples")
    if samples.num_rows == 0:
        return
    columns = [samples.column(c).to_pylist() for c, _, _ in _GPU_COUNTERS]
    for row, (ts, device) in enumerate(
        zip(samples.column("ts_ns").to_pylist(), samples.column("device").to_pylist(), strict=True)
    ):
        for (_, name, unit), values in zip(_GPU_COUNTERS, columns, strict=True):
            value = values[row]
            if value is None or value != value:  # null or NaN: not read
                continue
            yield {
                "ph": "C",
                "name": f"GPU {device} {name}",
                "pid": _GPU_PID_BASE + device,
                "ts": _us(ts, origin),
                "args": {unit: round(float(value), 3)},
            }


def _sampled_slices(profile: Profile, origin: int) -> Iterator[dict[str, Any]]:
    """The host sampler's view of the main thread, on a track of its own: where its Python was, line by
    line, inside torch ops and outside them (issue 19); nothing for profiles without samples."""
    from tenprof.analyses.timeline.host import main_thread, sampled_spans

    thread = main_thread(profile)
    if thread is None:
        return
    yield _thread_name(_HOST_PID, _SAMPLED_TID, f"thread {thread}, sampled: Python lines")
    for span in sampled_spans(profile, thread):
        yield {
            "ph": "X",
            "name": span.label,
            "cat": "host sample",
            "pid": _HOST_PID,
            "tid": _SAMPLED_TID,
            "ts": _us(span.start_ns, origin),
            "dur": (span.end_ns - span.start_ns) / 1000.0,
        }


def write_perfetto(
    profile: Profile, out: IO[bytes], cut: TraceCut | None = None, report: CutReport | None = None
) -> int:
    """Write the trace (only `cut`'s window and events where given: renderers.perfetto_cut, its counts in
    `report`); returns the number of events written."""
    out.write(b'{"displayTimeUnit":"ns","traceEvents":[\n')
    count = 0
    events = (
        cut_events(lambda: perfetto_events(profile), cut, report or CutReport())
        if cut is not None and cut.active
        else perfetto_events(profile)
    )
    for event in events:
        if count:
            out.write(b",\n")
        out.write(orjson.dumps(event))
        count += 1
    out.write(b"\n]}\n")
    return count
