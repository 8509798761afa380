"""The capture's sidecar: Python call paths recorded by tenprof's runtime, on the host's perf clock.

Written by `tenprof.capture.callsites` (torch side), read here (no torch). Format, one gzipped JSON object:
    version: 1
    frames:  [[frame_id, parent_frame_id, file, line, function, depth, is_user], ...]
    calls:   {thread_id: [...], start_ns: [...], end_ns: [...], frame_id: [...]}  one per torch API call
    scopes:  [[name, thread_id, start_ns, end_ns, frame_id, insert_depth(, metrics)], ...]  metrics: {name:
             number} given to tenprof.scope (flops=, bytes=, ...), only in records of scopes given some
    syncs:   [[label, start_ns, end_ns], ...]   perf-clock brackets around `tenprof::clock_sync#<label>`
    step_calls: how many times tenprof.step() was called (ProfilerStep#N with N below it is complete)
    step_bounds: [[end of the step before, start of the next, how the next runs], ...] one per
             tenprof.step(), perf clock; how: 0 recorded, 1 with the capture off and timed, 2 with the
             capture off and not timed (it settles the profiler's stop; SETTLING_MARK); started_ns /
             stopped_ns: when the recording began and ended
    launches: {thread_id, start_ns, end_ns, frame_id, name}  the kernels the script launches itself
             (tenprof.capture.own_launches): Triton's `kernel[grid](...)`, extension functions: no torch op;
             absent in older recordings
    samples: {interval_ns, process_id: [...], thread_id: [...], ts_ns: [...], frame_id: [...]}  the host
             sampler's samples (tenprof.capture.host_sampler): where each Python thread was, every
             interval_ns; process_id 0 for the script's own process, else a DataLoader worker's
             (tenprof.capture.worker_sampler; absent before those were sampled); no samples at all in
             recordings made before the sampler
And these keys, which only the timeline pass records, each absent from older recordings:
    step_tokens: [tokens, ...]  one per tenprof.step(), what the step it ended held (-1: not given)
    launch_metrics: [[launch index, metric, value], ...]  the numbers of a launch's Triton launch_metadata,
             index into `launches`; launch_metrics_error: the first error its function raised ('' none)
    gpu_samples: {ts_ns, device, sm_clock_mhz, max_sm_clock_mhz, memory_clock_mhz, power_w, power_limit_w,
             temperature_c, clock_reasons}  NVML's reads (tenprof.capture.gpu_clocks), one list per column,
             device the CUDA index, null where NVML could not read a value; gpu_samples_warning: why there
             are none ('' when sampled, or not tried: a run with no GPU)
    timed_steps_gpu: whether the GPU activity (kernels, copies) of the steps run with the capture off is in
             the trace (absent: it is, as in recordings from before it went off with the rest)
    timed_gpu_ns: [[step, ns], ...]  each timed step's time between the CUDA events tenprof recorded on the
             script's current stream at its boundaries, as the GPU reached them
             (tenprof.capture.timed_gpu_periods); absent or empty without a GPU and in older recordings
The sync brackets are matched to the same-named ranges in the Kineto trace to map perf-clock times to
trace times (`clock_offset`).
"""

from __future__ import annotations

import gzip
import zlib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import orjson

from tenprof.core.intervals import I64Array
from tenprof.core.rawfiles import GPU_FLOAT_COLUMNS, SYNC_PREFIX
from tenprof.errors import TraceFormatError

SETTLING_MARK = 2  # a step run with the capture off that is not timed (tenprof.capture.overhead_plan)


def _empty_i64() -> I64Array:
    return np.zeros(0, np.int64)


@dataclass
class Callsites:
    frames: list[list[Any]] = field(default_factory=list)
    call_thread: I64Array = field(default_factory=lambda: np.zeros(0, np.int64))
    call_start: I64Array = field(default_factory=lambda: np.zeros(0, np.int64))
    call_end: I64Array = field(default_factory=lambda: np.zeros(0, np.int64))
    call_frame: I64Array = field(default_factory=lambda: np.zeros(0, np.int64))
    scopes: list[list[Any]] = field(default_factory=list)
    syncs: list[list[Any]] = field(default_factory=list)
    step_calls: int | None = None
    step_bounds: list[list[int]] = field(default_factory=list)
    started_ns: int = 0
    stopped_ns: int = 0
    # "native": one record per top-level op, hugging it; "python": one per torch API call made from Python
    recorder: str = "python"
    sample_interval_ns: int = 0  # 0: the host was not sampled
    sample_thread: I64Array = field(default_factory=lambda: np.zeros(0, np.int64))
    sample_ts: I64Array = field(default_factory=lambda: np.zeros(0, np.int64))
    sample_frame: I64Array = field(default_factory=lambda: np.zeros(0, np.int64))
    sample_process: I64Array = field(default_factory=lambda: np.zeros(0, np.int64))  # 0: the script's own
    # the script's own Triton launches (kernel[grid](...)), each a call with its kernel's name
    launch_thread: I64Array = field(default_factory=lambda: np.zeros(0, np.int64))
    launch_start: I64Array = field(default_factory=lambda: np.zeros(0, np.int64))
    launch_end: I64Array = field(default_factory=lambda: np.zeros(0, np.int64))
    launch_frame: I64Array = field(default_factory=lambda: np.zeros(0, np.int64))
    launch_name: list[str] = field(default_factory=list)
    # the numbers each launch's Triton launch_metadata gave: launch index, metric name, value
    launch_metrics: list[list[Any]] = field(default_factory=list)
    launch_metrics_error: str = ""
    step_tokens: list[int] = field(default_factory=list)  # one per tenprof.step(), -1: not given
    # NVML's reads of the GPUs' clocks (gpu_ts on the perf clock); gpu_values: GPU_FLOAT_COLUMNS -> values
    gpu_ts: I64Array = field(default_factory=_empty_i64)
    gpu_device: I64Array = field(default_factory=_empty_i64)
    gpu_values: dict[str, npt.NDArray[np.float64]] = field(default_factory=dict)
    gpu_reasons: I64Array = field(default_factory=_empty_i64)
    gpu_warning: str = ""
    timed_steps_gpu: bool = True  # the steps run with the capture off have their GPU activity recorded
    # the native captures' input shapes by sampled step (capture.input_sampling: steps, asked_steps, every_step,
    # not_asked, filled, filled_without_scalars, left, ...); empty where every op's were asked for
    input_sampling: dict[str, Any] = field(default_factory=dict)
    # TENPROF_OPS=sampled: the steps run without op records and what they were given (capture.op_copy's
    # fill_trace: steps_without_ops, copied_steps, unmatched, ops, calls); empty otherwise
    op_copy: dict[str, Any] = field(default_factory=dict)
    timed_gpu_ns: dict[int, int] = field(default_factory=dict)  # timed step -> its period on the GPU

    def gpu_periods(self, steps: I64Array) -> I64Array:
        """For each step number: its period between CUDA events on the GPU (timed steps), -1 where none."""
        return np.array([self.timed_gpu_ns.get(int(n), -1) for n in steps], dtype=np.int64)

    def step_marks(self, steps: I64Array) -> tuple[npt.NDArray[np.bool_], I64Array]:
        """For each step number: whether it ran with the capture on, and its time between tenprof's clock
        reads at its boundaries (tenprof's own boundary work left out), -1 where the log has none or the
        step was not timed."""
        bounds = self.step_bounds
        on = np.ones(len(steps), dtype=bool)
        own = np.full(len(steps), -1, dtype=np.int64)
        for i, n in enumerate(int(x) for x in steps):
            if n < 0 or n > len(bounds) or (n == 0 and not self.started_ns):
                continue
            start = self.started_ns if n == 0 else int(bounds[n - 1][1])
            end = int(bounds[n][0]) if n < len(bounds) else self.stopped_ns
            on[i] = n == 0 or not bounds[n - 1][2]
            if end > start and (n == 0 or bounds[n - 1][2] != SETTLING_MARK):
                own[i] = end - start
        return on, own

    def step_window(self, n: int) -> tuple[int, int]:
        """Step `n`'s (n >= 1, at most len(step_bounds)) [start, end] on the perf clock, between the clock
        reads at its boundaries; the last one ends when the recording did."""
        bounds = self.step_bounds
        return int(bounds[n - 1][1]), int(bounds[n][0]) if n < len(bounds) else self.stopped_ns

    def capture_off_windows(self) -> list[tuple[int, int]]:
        """The windows of the steps run with the capture off."""
        return [self.step_window(n) for n in range(1, len(self.step_bounds) + 1) if self.step_bounds[n - 1][2]]

    def uncopied_step_windows(self) -> list[tuple[int, int]]:
        """The windows of the steps run without op records (TENPROF_OPS=sampled) whose ops no recorded step
        could give (op_copy's `unmatched`: mostly the stretch after the script's last step mark)."""
        unmatched = self.op_copy.get("unmatched") or ()
        return [self.step_window(n) for n in unmatched if 0 < n <= len(self.step_bounds)]

    def unrecorded_steps(self, recorded: I64Array) -> tuple[I64Array, I64Array, I64Array]:
        """The steps run with the capture off that are not in `recorded` (the trace has no range for them: the
        profiler was stopped): their numbers, and starts and ends on the perf clock, between the clock reads
        at their boundaries."""
        bounds, have = self.step_bounds, set(recorded.tolist())
        found: list[tuple[int, int, int]] = []
        for n in range(1, len(bounds) + 1):
            start, end = self.step_window(n)
            if bounds[n - 1][2] and n not in have and end > start:
                found.append((n, start, end))
        columns = np.array(found, dtype=np.int64).reshape(-1, 3)
        return columns[:, 0], columns[:, 1], columns[:, 2]

    def shifted(self, offset_ns: int) -> Callsites:
        """The same records with perf-clock times moved onto the trace clock."""
        return replace(
            self,
            call_start=self.call_start + offset_ns,
            call_end=self.call_end + offset_ns,
            scopes=[[r[0], r[1], r[2] + offset_ns, r[3] + offset_ns, *r[4:]] for r in self.scopes],
            syncs=[[label, s + offset_ns, e + offset_ns] for label, s, e in self.syncs],
            sample_ts=self.sample_ts + offset_ns,
            launch_start=self.launch_start + offset_ns,
            launch_end=self.launch_end + offset_ns,
            gpu_ts=self.gpu_ts + offset_ns,
        )

    def with_calls(self, thread: I64Array, start: I64Array, end: I64Array, frame: I64Array) -> Callsites:
        """The same log with these calls added to its call records (perf clock), kept in start order."""
        order = np.argsort(np.concatenate([self.call_start, start]), kind="stable")
        return replace(
            self,
            call_thread=np.concatenate([self.call_thread, thread])[order],
            call_start=np.concatenate([self.call_start, start])[order],
            call_end=np.concatenate([self.call_end, end])[order],
            call_frame=np.concatenate([self.call_frame, frame])[order],
        )


def _read(path: Path) -> dict[str, Any]:
    try:
        data = orjson.loads(gzip.decompress(path.read_bytes()))
    except (OSError, EOFError, zlib.error, orjson.JSONDecodeError) as exc:
        raise TraceFormatError(f"{path}: unreadable call-site record ({exc.__class__.__name__})") from exc
    if not isinstance(data, dict):
        raise TraceFormatError(f"{path}: unreadable call-site record (not a JSON object)")
    return data


def read_callsites(path: Path) -> Callsites:
    data = _read(path)
    calls = data.get("calls", {})
    samples = data.get("samples", {})
    launches = data.get("launches", {})
    gpu = data.get("gpu_samples") or {}

    def arr(key: str, of: dict[str, Any] = calls) -> I64Array:
        return np.asarray(of.get(key, []), dtype=np.int64)

    return Callsites(
        frames=data.get("frames", []),
        call_thread=arr("thread_id"),
        call_start=arr("start_ns"),
        call_end=arr("end_ns"),
        call_frame=arr("frame_id"),
        scopes=data.get("scopes", []),
        syncs=data.get("syncs", []),
        step_calls=data.get("step_calls"),
        step_bounds=data.get("step_bounds", []),
        started_ns=int(data.get("started_ns", 0) or 0),
        stopped_ns=int(data.get("stopped_ns", 0) or 0),
        recorder=str(data.get("recorder", "python")),
        sample_interval_ns=int(samples.get("interval_ns", 0) or 0),
        sample_thread=arr("thread_id", samples),
        sample_ts=arr("ts_ns", samples),
        sample_frame=arr("frame_id", samples),
        # recordings made before the workers were sampled have only the script's own samples
        sample_process=arr("process_id", samples)
        if "process_id" in samples
        else np.zeros(len(samples.get("ts_ns", [])), np.int64),
        launch_thread=arr("thread_id", launches),
        launch_start=arr("start_ns", launches),
        launch_end=arr("end_ns", launches),
        launch_frame=arr("frame_id", launches),
        launch_name=[str(n) for n in launches.get("name", [])],
        launch_metrics=[list(m) for m in data.get("launch_metrics", [])],
        launch_metrics_error=str(data.get("launch_metrics_error", "") or ""),
        step_tokens=[int(t) for t in data.get("step_tokens", [])],
        gpu_ts=arr("ts_ns", gpu),
        gpu_device=arr("device", gpu),
        # NVML values it could not read were written as null: NaN here
        gpu_values={name: np.array(gpu.get(name, []), dtype=np.float64) for name in GPU_FLOAT_COLUMNS},
        gpu_reasons=arr("clock_reasons", gpu),
        gpu_warning=str(data.get("gpu_samples_warning", "") or ""),
        timed_steps_gpu=bool(data.get("timed_steps_gpu", True)),
        input_sampling=dict(data.get("input_sampling") or {}),
        op_copy=dict(data.get("op_copy") or {}),
        timed_gpu_ns={int(step): int(ns) for step, ns in data.get("timed_gpu_ns") or []},
    )


def clock_offset(syncs: list[list[Any]], trace_sync_starts: dict[str, int]) -> tuple[int, int] | None:
    """(offset, uncertainty) in ns such that trace time = perf time + offset, or None if no marker matched.

    Each marker's trace start lies inside its perf-clock bracket, so each gives an interval of possible
    offsets; the answer is the middle of their intersection and the uncertainty its half-width. If the
    intervals do not all intersect (clock drift), the median of their middles is used instead and the
    uncertainty is their spread.
    """
    lows, highs = [], []
    for label, start, end in syncs:
        trace_start = trace_sync_starts.get(f"{SYNC_PREFIX}{label}")
        if trace_start is not None:
            lows.append(trace_start - int(end))
            highs.append(trace_start - int(start))
    if not lows:
        return None
    lo, hi = max(lows), min(highs)
    if lo <= hi:
        return (lo + hi) // 2, (hi - lo) // 2
    middles = (np.asarray(lows, dtype=np.int64) + np.asarray(highs, dtype=np.int64)) // 2
    return int(np.median(middles)), int(middles.max() - middles.min())
