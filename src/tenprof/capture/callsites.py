"""Record the Python call path of every torch API call, cheaply, on the host's perf clock.

A `TorchFunctionMode` sees each outermost torch call made from Python (torch.*, Tensor methods,
torch.nn.functional), which is where the user's line is. For each call it stores (thread, start, end,
call-path id); the importer joins these to the aten ops Kineto recorded (see
`tenprof.importers.timeline_builder`). Call paths are interned: the key of a path is the tuple of
(code object, bytecode offset) of its frames, so a repeated call costs one frame walk and one dict
lookup; the line numbers are computed only the first time a path is seen.

Frames below the user's script (tenprof's launcher, runpy) and torch's dispatch plumbing are left out.
"""

from __future__ import annotations

import gzip
import sys
import threading
import time
from array import array
from pathlib import Path
from types import CodeType, FrameType
from typing import TYPE_CHECKING, Any

import orjson
import torch
from torch.overrides import TorchFunctionMode

from tenprof.sourcefiles import is_user_file

if TYPE_CHECKING:
    from tenprof.capture.host_sampler import HostSampler
    from tenprof.capture.native_lines import NativeCallsiteRecorder
    from tenprof.capture.own_launches import OwnLaunches

_PLUMBING_FILES = {
    torch.overrides.__file__,
    sys.modules["torch.utils._device"].__file__ if "torch.utils._device" in sys.modules else "",
}

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


_is_compiling = getattr(getattr(torch, "compiler", None), "is_compiling", lambda: False)


class FrameInterner:
    """Call paths -> ids of nodes in a frame tree (the `frames` table)."""

    def __init__(self, stop_code: CodeType | None, skip_files: set[str]) -> None:
        self.stop_code = stop_code
        self.skip_files = skip_files
        self.by_key: dict[tuple[int, ...], int] = {}
        self.nodes: dict[tuple[int, str, int, str], int] = {}
        self.rows: list[list[Any]] = []
        self._keep_alive: set[CodeType] = set()
        self._lock = threading.RLock()

    def path_id(self, frame: FrameType | None) -> int:
        # Hot path: one int per frame, (code identity, bytecode offset); hashing ints is several times
        # cheaper than hashing code objects. Code objects seen are kept alive (in _intern), so their
        # ids cannot be reused by other code during the run. Plumbing frames are dropped in _intern.
        key: list[int] = []
        append = key.append
        stop = self.stop_code
        f = frame
        while f is not None:
            code = f.f_code
            if code is stop:
                break
            append(id(code) + (f.f_lasti << 48))
            f = f.f_back
        k = tuple(key)
        found = self.by_key.get(k)
        if found is None:
            found = self._intern(frame)
            self.by_key[k] = found
        return found

    def depth(self, frame_id: int) -> int:
        return int(self.rows[frame_id][5]) if frame_id >= 0 else -1

    def _intern(self, frame: FrameType | None) -> int:
        chain: list[tuple[CodeType, int]] = []
        f = frame
        while f is not None and f.f_code is not self.stop_code:
            chain.append((f.f_code, f.f_lineno or 0))
            f = f.f_back
        # The host sampler interns from its own thread: one node per path, whichever thread comes first.
        with self._lock:
            return self.intern_chain(chain)

    def intern_chain(self, chain: list[tuple[CodeType, int]]) -> int:
        """The node of a call path given innermost frame first as (code, line), the stop frame left out."""
        parent = -1
        for code, line in reversed(chain):
            self._keep_alive.add(code)
            if code.co_filename in self.skip_files:
                continue
            parent = self.intern_row(parent, code.co_filename, line, code.co_name)
        return parent

    def intern_row(self, parent: int, file: str, line: int, function: str) -> int:
        """The node of one frame under `parent` (-1: a root), added if new. Also how frames recorded in
        another process (DataLoader workers) join this tree."""
        node_key = (parent, file, line, function)
        node = self.nodes.get(node_key)
        if node is None:
            node = len(self.rows)
            depth = self.rows[parent][5] + 1 if parent >= 0 else 0
            self.rows.append([node, parent, file, line, function, depth, is_user_file(file)])
            self.nodes[node_key] = node
        return node


def new_interner(stop_code: CodeType | None) -> FrameInterner:
    """An interner that leaves out frames below `stop_code`, torch's mode plumbing and tenprof's capture."""
    here = str(Path(__file__).resolve().parent)
    skip = {f for f in _PLUMBING_FILES if f}
    skip |= {str(p) for p in Path(here).glob("*.py")}
    return FrameInterner(stop_code, skip)


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
        if self.paused or _is_compiling() or func in _NO_WORK or _is_plain_attribute(func):
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

    def __init__(self, stop_code: CodeType | None, record_calls: bool, recorder: str = "python") -> None:
        self.interner = new_interner(stop_code)
        # recorder: "python" (the TorchFunctionMode above) or "native" (tenprof.capture.native_lines).
        self.recorder: CallsiteRecorder | NativeCallsiteRecorder | None = None
        if record_calls:
            from tenprof.capture.native_lines import make_recorder

            self.recorder = make_recorder(self.interner, recorder)
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
