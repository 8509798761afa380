"""A Chrome-JSON trace that Perfetto (ui.perfetto.dev) and chrome://tracing open.

Tracks: one process for the host with a track per CPU thread (ops, scopes and CUDA API calls as
slices, nested by time) plus a "steps" track; one process per GPU with a track per stream (kernels and
copies; a torch.compile generated kernel's args name the aten ops it fuses and their lines); flow arrows
from each launching API call to its kernel or copy; a counter track per device for allocated memory.
Events are written one at a time, so memory stays flat for big profiles.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import IO, Any

import numpy as np
import orjson

from tenprof.store.profile import Profile

_GPU_PID_BASE = 1_000_000
_HOST_PID = 1
_STEPS_TID = 0


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


def perfetto_events(profile: Profile) -> Iterator[dict[str, Any]]:
    ops = profile.table("ops")
    kernels = profile.table("kernels")
    transfers = profile.table("transfers")
    api = profile.table("api_calls")
    steps_table = profile.table("steps")
    scopes_table = profile.table("scopes")
    starts = [
        t.column("start_ns").to_numpy() for t in (ops, kernels, transfers, api, steps_table, scopes_table) if t.num_rows
    ]
    if profile.table("memory").num_rows:
        starts.append(profile.table("memory").column("ts_ns").to_numpy())
    origin = int(min(s.min() for s in starts)) if starts else 0

    def us(ns: int) -> float:
        return (int(ns) - origin) / 1000.0

    command = " ".join(profile.meta.command) or "host"
    yield {"ph": "M", "name": "process_name", "pid": _HOST_PID, "args": {"name": f"CPU: {command}"}}
    yield {"ph": "M", "name": "thread_name", "pid": _HOST_PID, "tid": _STEPS_TID, "args": {"name": "steps"}}
    threads = set(ops.column("thread_id").to_pylist()) | set(api.column("thread_id").to_pylist())
    for tid in sorted(threads):
        yield {
            "ph": "M",
            "name": "thread_name",
            "pid": _HOST_PID,
            "tid": tid,
            "args": {"name": f"thread {tid}"},
        }
    gpu_names = {g.index: g.name for g in profile.meta.gpus}
    streams = set(zip(kernels.column("device").to_pylist(), kernels.column("stream").to_pylist(), strict=True))
    streams |= set(zip(transfers.column("device").to_pylist(), transfers.column("stream").to_pylist(), strict=True))
    for device in sorted({d for d, _ in streams}):
        yield {
            "ph": "M",
            "name": "process_name",
            "pid": _GPU_PID_BASE + device,
            "args": {"name": f"GPU {device}" + (f": {gpu_names[device]}" if device in gpu_names else "")},
        }
    for device, stream in sorted(streams):
        yield {
            "ph": "M",
            "name": "thread_name",
            "pid": _GPU_PID_BASE + device,
            "tid": stream,
            "args": {"name": f"stream {stream}"},
        }

    labels = _frame_labels(profile)
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
            "ts": us(s),
            "dur": d / 1000.0,
        }
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
            "ts": us(s),
            "dur": (e - s) / 1000.0,
        }
    frame_ids = ops.column("frame_id").to_pylist()
    for op_id, name, tid, s, d, shapes, fid in zip(
        ops.column("op_id").to_pylist(),
        ops.column("name").to_pylist(),
        ops.column("thread_id").to_pylist(),
        ops.column("start_ns").to_pylist(),
        ops.column("duration_ns").to_pylist(),
        ops.column("input_shapes").to_pylist(),
        frame_ids,
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
            "ts": us(s),
            "dur": d / 1000.0,
            "args": args,
        }
    api_start = api.column("start_ns").to_numpy()
    api_tid = api.column("thread_id").to_numpy()
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
            "ts": us(s),
            "dur": d / 1000.0,
            "args": {"correlation": corr},
        }
    op_frame = np.asarray(frame_ids, dtype=np.int64)
    corr_to_api: dict[int, int] = {}
    for i, corr in enumerate(api.column("correlation_id").to_pylist()):
        if corr >= 0:
            corr_to_api.setdefault(corr, i)
    # a torch.compile generated kernel also names the aten ops it fuses and their source lines
    fused = {
        r["kernel"]: {"fuses": r["aten_ops"], "fused lines": r["lines"], "attribution": r["confidence"]}
        for r in profile.table("compiled_kernels").to_pylist()
    }
    for table, cat in ((kernels, "kernel"), (transfers, "transfer")):
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
                "ts": us(s),
                "dur": d / 1000.0,
                "args": args,
            }
            if cat == "transfer":
                api_id = corr_to_api.get(corr, -1)
            if api_id >= 0:
                yield {
                    "ph": "s",
                    "id": corr,
                    "name": "launch",
                    "cat": "launch",
                    "pid": _HOST_PID,
                    "tid": int(api_tid[api_id]),
                    "ts": us(int(api_start[api_id])),
                }
                yield {
                    "ph": "f",
                    "bp": "e",
                    "id": corr,
                    "name": "launch",
                    "cat": "launch",
                    "pid": pid,
                    "tid": stream,
                    "ts": us(s),
                }
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
        yield {"ph": "C", "name": track, "pid": pid, "ts": us(ts), "args": {"MiB": round(total / 2**20, 3)}}


def write_perfetto(profile: Profile, out: IO[bytes]) -> int:
    """Write the trace; returns the number of events."""
    out.write(b'{"displayTimeUnit":"ns","traceEvents":[\n')
    count = 0
    for event in perfetto_events(profile):
        if count:
            out.write(b",\n")
        out.write(orjson.dumps(event))
        count += 1
    out.write(b"\n]}\n")
    return count
