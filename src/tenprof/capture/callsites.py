"""Record the Python call path of every torch API call, cheaply, on the host's perf clock.

A `TorchFunctionMode` sees each outermost torch call made from Python (torch.*, Tensor methods,
torch.nn.functional), which is where the user's line is. For each call it stores (thread, start, end,
call-path id); the importer joins these to the aten ops Kineto recorded (see
`tenprof.importers.timeline_builder`). Call paths are interned into one frame tree
(`tenprof.capture.frames`), so a repeated call costs one frame walk and one dict lookup.
"""

from __future__ import annotations

import gzip
import sys
import threading
import time
from array import array
from pathlib import Path
from types import CodeType
from typing import TYPE_CHECKING, Any

import orjson
import torch
from torch.overrides import TorchFunctionMode

from tenprof.capture.compiling import is_compiling
from tenprof.capture.frames import FrameInterner, new_interner
from tenprof.capture.skipped_rounds import samples_of_skipped

if TYPE_CHECKING:
    from tenprof.capture.host_sampler import HostSampler
    from tenprof.capture.native_lines import NativeCallsiteRecorder
    from tenprof.capture.own_launches import OwnLaunches

# Calls that never launch device work or make ops worth a line; skipping them keeps the mode cheap.
_NO_WORK: set[Any] = {
    torch.Tensor.size,
    torch.Tensor.dim,
    torch.Tensor.stride,
    torch.Tensor.numel,
    torch.Tensor.data_ptr,
    torch.Tensor.is_contiguous,
    torch.Tensor.element_size,
    torch.Tensor.__len__,
    torch.Tensor.__hash__,
    torch.is_complex,
    torch.is_floating_point,
    torch.Tensor.is_complex,
    torch.Tensor.is_floating_point,
    torch.Tensor.get_device,
}
# Attribute reads and writes (`t.grad`, `t.shape`, `p.data = ...`) arrive as a descriptor's
# __get__/__set__; only these attributes make ops (views), so only they are recorded.
_VIEW_ATTRIBUTES = {"T", "mT", "H", "mH", "real", "imag"}


def _is_plain_attribute(func: Any) -> bool:
    name = getattr(func, "__name__", "")
    if name not in ("__get__", "__set__"):
        return False
    owner = getattr(func, "__self__", None)
    return getattr(owner, "__name__", "") not in _VIEW_ATTRIBUTES


class CallsiteRecorder(TorchFunctionMode):
    """The TorchFunctionMode that records (thread, start, end, path) for every outermost torch call."""

    def __init__(self, interner: FrameInterner) -> None:
        super().__init__()
        self.interner = interner
        # (thread, start, end, frame) per record, appended with one extend() so that a record written
        # from another thread (Dynamo may compile there) can never interleave with ours.
        self.records = array("q")
        self._dynamo_hooked = False
        self._callbacks: Any = None
        self._compiling: list[tuple[int, int]] = []
        self.paused = False  # while the capture is off to time un-profiled steps: pass calls straight through

    def _hook_dynamo(self) -> None:
        """Record Dynamo's compilations as calls too, so compile time gets the line that triggered it.

        Done the first time a torch call is seen after torch._dynamo was imported (torch.compile imports
        it before anything is compiled); importing it ourselves would cost every run about a second."""
        self._dynamo_hooked = True
        try:
            from torch._dynamo.callback import callback_handler
        except ImportError:
            return
        callback_handler.register_start_callback(self._compile_started)
        callback_handler.register_end_callback(self._compile_ended)
        self._callbacks = callback_handler

    def close(self) -> None:
        """Stop receiving Dynamo's callbacks (the process may profile again, or not at all)."""
        if self._callbacks is not None:
            try:
                self._callbacks.remove_start_callback(self._compile_started)
                self._callbacks.remove_end_callback(self._compile_ended)
            except (ValueError, AttributeError):
                pass
            self._callbacks = None

    def _compile_started(self, *args: Any) -> None:
        self._compiling.append((self.interner.path_id(sys._getframe(1)), time.perf_counter_ns()))

    def _compile_ended(self, *args: Any) -> None:
        if self._compiling:
            frame_id, start = self._compiling.pop()
            self.records.extend((threading.get_native_id(), start, time.perf_counter_ns(), frame_id))

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        if kwargs is None:
            kwargs = {}
        # While torch.compile traces, pass straight through: Dynamo folds is_compiling() to True, so none
        # of tenprof's bookkeeping is traced, guarded on, or a cause of recompilation.
        if self.paused or is_compiling() or func in _NO_WORK or _is_plain_attribute(func):
            return func(*args, **kwargs)
        if not self._dynamo_hooked and "torch._dynamo" in sys.modules:
            self._hook_dynamo()
        frame_id = self.interner.path_id(sys._getframe(1))
        start = time.perf_counter_ns()
        try:
            return func(*args, **kwargs)
        finally:
            self.records.extend((threading.get_native_id(), start, time.perf_counter_ns(), frame_id))


class CallsiteLog:
    """Everything the sidecar file holds: call records, scopes and clock-sync brackets."""

    def __init__(
        self,
        stop_code: CodeType | None,
        record_calls: bool,
        recorder: str = "python",
        every_op: bool = False,
        inputs: bool = False,
        memory: bool = False,
        stand_in: bool = False,
    ) -> None:
        self.interner = new_interner(stop_code)
        # recorder: "python" (the TorchFunctionMode above) or "native" (tenprof.capture.native_lines), which
        # records every op too when `every_op`, their input signatures with `inputs`, and stands in for the
        # profiler with `stand_in` (recording the allocators' reports with `memory`).
        self.recorder: CallsiteRecorder | NativeCallsiteRecorder | None = None
        if record_calls:
            from tenprof.capture.native_lines import make_recorder

            self.recorder = make_recorder(self.interner, recorder, every_op, inputs, memory, stand_in)
        self.scopes: list[list[Any]] = []
        self.syncs: list[list[Any]] = []
        self.step_calls = 0
        # One per tenprof.step(): [end of the step before, start of the next, whether the next runs with
        # the capture off]; with started_ns and stopped_ns, each step's time less tenprof's boundary work.
        self.step_bounds: list[list[int]] = []
        self.started_ns = 0
        self.stopped_ns = 0
        self.sampler: HostSampler | None = None  # set by the timeline pass when host sampling is on
        # DataLoader workers' samples, (process, thread, time, frame) flattened (capture.worker_sampler)
        self.worker_samples: list[int] = []
        # further keys a pass adds (the timeline's step tokens, launch metrics, GPU clock samples)
        self.extra: dict[str, Any] = {}
        self.own_launches: OwnLaunches | None = None  # Triton and extension launches (capture.own_launches)

    def to_file(self, path: Path) -> None:
        rec = self.recorder
        samples = self.sampler.samples if self.sampler is not None else array("q")
        if self.sampler is not None and self.sampler.skipped and rec is not None:
            samples = samples + samples_of_skipped(self.sampler.skipped, rec.records)
        workers = self.worker_samples
        own = self.own_launches
        data = {
            "version": 1,
            "frames": self.interner.rows,
            "calls": {
                "thread_id": list(rec.records[0::4]) if rec else [],
                "start_ns": list(rec.records[1::4]) if rec else [],
                "end_ns": list(rec.records[2::4]) if rec else [],
                "frame_id": list(rec.records[3::4]) if rec else [],
            },
            "scopes": self.scopes,
            "syncs": self.syncs,
            "step_calls": self.step_calls,
            "step_bounds": self.step_bounds,
            "started_ns": self.started_ns,
            "stopped_ns": self.stopped_ns,
            "recorder": "native" if rec is not None and not isinstance(rec, CallsiteRecorder) else "python",
            "launches": {
                "thread_id": own.records[0::4] if own else [],
                "start_ns": own.records[1::4] if own else [],
                "end_ns": own.records[2::4] if own else [],
                "frame_id": own.records[3::4] if own else [],
                "name": own.names if own else [],
            },
            "samples": {
                "interval_ns": self.sampler.interval_ns if self.sampler is not None else 0,
                # 0: the script's own process; else the DataLoader worker's process id
                "process_id": [0] * (len(samples) // 3) + workers[0::4],
                "thread_id": list(samples[0::3]) + workers[1::4],
                "ts_ns": list(samples[1::3]) + workers[2::4],
                "frame_id": list(samples[2::3]) + workers[3::4],
            },
        }
        data.update(self.extra)
        path.write_bytes(gzip.compress(orjson.dumps(data), compresslevel=1))
