"""The tensors pass: every tensor each aten op reads, writes or makes, and when its memory is freed.

A `TorchDispatchMode` sees each op at the Python dispatch key, below autograd: forward ops, the
backward ops the autograd engine runs (the mode follows it into its device threads), optimizer ops,
in-place and `out=` ops. Composite ops arrive already split into the ops they are made of.
Each op gets a sequence number (`op_seq`, 0, 1, 2, ... in the order ops start), which is the clock of
this pass: lifetimes and the address lookup are in op sequence numbers.

Identities:
- a **storage** is one allocation (a `StorageImpl`); it is tracked through a weak reference to its
  Python object (torch keeps that object alive exactly as long as the storage), whose callback records
  the op sequence number at which the memory went back to the allocator;
- a **tensor** is one layout on a storage: (storage, offset, shape, stride, dtype). Two tensor objects
  with the same layout are the same tensor (autograd's saved copies, `weight.t()` made anew each step),
  which keeps the forest as small as the program's distinct tensors.

The script's own Triton launches (`kernel[grid](...)`, in no aten op) are ops of this pass too,
"(user kernel) NAME", their tensor arguments its uses (capture.own_launch_uses).

The mode declares `ignore_compile_internals`, so `torch.compile` still compiles; ops inside compiled
graphs and CUDA-graph replays never reach a dispatch hook, and tensors they make show up without a
creator. The pass says how many.

Raw file written into `raw_dir`: `tensors.json.gz` (columns, read by tenprof.importers.tensors_import).
"""

from __future__ import annotations

import functools
import gzip
import itertools
import sys
import threading
import time
import weakref
from array import array
from pathlib import Path
from types import CodeType
from typing import Any

import orjson
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from tenprof.capture import runtime
from tenprof.capture.accesses_hook import AccessHook, AccessHookError
from tenprof.capture.compiling import is_compiling
from tenprof.capture.dispatch_mode import outside_dynamo
from tenprof.capture.frames import new_interner
from tenprof.capture.own_launch_uses import OwnLaunchUses
from tenprof.capture.schedule import Schedule
from tenprof.core.rawfiles import TENSORS_FILE

# Roles of a tensor in one op (the `role` column of tensor_uses).
READ, WRITE, READWRITE, OUTPUT = 0, 1, 2, 3
ROLE_NAMES = ("read", "write", "readwrite", "output")

# Ops whose output is a new tensor holding another tensor's values (a transformation edge in the forest).
COPY_OPS = {"aten::clone", "aten::_to_copy", "aten::copy_", "aten::_copy_from", "aten::lift_fresh_copy"}
# `torch.tensor(data)` builds its tensor below the dispatcher and hands it to this op: its creator.
LIFT_OPS = {"aten::lift_fresh"}
# In-place ops that change a tensor's layout; after them (and after out= ops, which may resize), a
# tensor object's layout is looked up afresh instead of taken from the cache.
LAYOUT_CHANGING_OPS = {
    f"aten::{name}_"
    for name in (
        "resize",
        "resize_as",
        "set",
        "as_strided",
        "squeeze",
        "unsqueeze",
        "transpose",
        "t",
        "swapdims",
        "swapaxes",
        "_resize_output",
    )
}

# The columns of the raw file, in the order the recorder appends them (see TensorRecorder).
OP_COLUMNS = ("op_seq", "name_id", "frame_id", "thread_id", "autograd_nr", "is_backward", "step", "time_ns")
USE_COLUMNS = ("op_seq", "tensor_id", "role")
TENSOR_COLUMNS = (
    "tensor_id",
    "storage_id",
    "storage_offset",
    "shape",
    "stride",
    "dtype",
    "itemsize",
    "data_ptr",
    "creator_op_seq",
    "parent_tensor_id",
    "view_op_id",
    "source_tensor_id",
    "source_op_id",
)
STORAGE_COLUMNS = ("storage_id", "device", "address", "nbytes", "alloc_op_seq", "free_op_seq")

_UNSET = sys.maxsize  # autograd's "no sequence number" (AccumulateGrad) reads as this after masking
_U64_MASK = (1 << 64) - 1


class _OpInfo:
    """What the recorder needs to know about one op overload, computed once."""

    __slots__ = ("changes_layout", "is_copy", "lifts", "name_id", "out_names", "write_names", "write_positions")

    def __init__(self, func: Any, name_id: int) -> None:
        self.name_id = name_id
        args = func._schema.arguments
        self.write_positions = tuple(
            i for i, a in enumerate(args) if not a.kwarg_only and a.alias_info is not None and a.alias_info.is_write
        )
        self.write_names = tuple(a.name for a in args if a.alias_info is not None and a.alias_info.is_write)
        self.out_names = frozenset(a.name for a in args if getattr(a, "is_out", False))
        self.is_copy = func._schema.name in COPY_OPS
        self.changes_layout = func._schema.name in LAYOUT_CHANGING_OPS
        self.lifts = func._schema.name in LIFT_OPS


class TensorRecorder(TorchDispatchMode):  # type: ignore[no-untyped-call]
    """Records ops, tensor uses, tensors and storages. Hot path: one dict hit per tensor argument."""

    def __init__(self, stop_code: CodeType | None) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.interner = new_interner(stop_code)
        self.seq = 0
        self.access: AccessHook | None = None
        self.access_all_ops = False  # record every op's launches, not only the first of each kind
        self._access_kinds: set[tuple[Any, ...]] = set()
        self.step = 0
        # per op: seq, name id, frame id, thread, autograd sequence nr, is_backward, step, wall-clock start
        self.ops = array("q")
        # per use: seq, tensor id, role
        self.uses = array("q")
        self.names: list[str] = []
        # tensor rows: id, storage id, offset, shape, stride, dtype, itemsize, data_ptr, creator seq,
        # parent tensor id, view op, source tensor id, source op
        self.tensors: list[list[Any]] = []
        # storage rows: id, device, address, nbytes, alloc seq, free seq (-1 while alive)
        self.storages: list[list[Any]] = []
        self.unseen_creators = 0
        self.untracked_uses = 0  # uses of tensors without a storage (sparse, nested): not in the forest
        self.broken = ""
        self._infos: dict[Any, _OpInfo] = {}
        self._by_impl: dict[int, int] = {}
        self._impl_refs: dict[int, Any] = {}
        self._by_layout: dict[tuple[Any, ...], int] = {}
        self._storage_ids: dict[int, int] = {}
        self._storage_refs: dict[int, Any] = {}
        self._counter = itertools.count()
        self._device_names: dict[tuple[bool, int], str] = {}
        self._dtype_names: dict[Any, str] = {}
        self._launch_names: dict[str, int] = {}

    @classmethod
    def ignore_compile_internals(cls) -> bool:
        # Let torch.compile compile as it would without tenprof (otherwise Dynamo runs code eagerly).
        return True

    # -- identities
    def _info(self, func: Any) -> _OpInfo:
        info = self._infos.get(func)
        if info is None:
            info = _OpInfo(func, len(self.names))
            self.names.append(func._schema.name)
            self._infos[func] = info
        return info

    def _storage_id(self, t: torch.Tensor, seq: int) -> tuple[int, bool]:
        storage = t.untyped_storage()
        key = storage._cdata
        sid = self._storage_ids.get(key)
        if sid is not None:
            return sid, False
        sid = len(self.storages)
        device_index = t.get_device()
        device = self._device_names.get((t.is_cuda, device_index))
        if device is None:
            device = self._device_names.setdefault((t.is_cuda, device_index), str(t.device))
        self.storages.append([sid, device, storage.data_ptr(), storage.nbytes(), seq, -1])
        self._storage_ids[key] = sid
        self._storage_refs[key] = weakref.ref(storage, functools.partial(self._storage_freed, key, sid))
        return sid, True

    def _storage_freed(self, key: int, sid: int, _ref: object) -> None:
        self.storages[sid][5] = self.seq
        self._storage_ids.pop(key, None)
        self._storage_refs.pop(key, None)

    def _impl_died(self, impl: int, _ref: object) -> None:
        self._by_impl.pop(impl, None)
        self._impl_refs.pop(impl, None)

    def _tensor_id(self, t: torch.Tensor, seq: int, made_here: bool, parent_hint: list[tuple[int, int]]) -> int:
        """The id of `t`'s layout, creating the tensor (and storage) rows on first sight."""
        impl = t._cdata
        tid = self._by_impl.get(impl)
        # `param.data = other` swaps a tensor object's storage without any op: check the address too.
        if tid is not None and self.tensors[tid][7] == t.data_ptr():
            return tid
        try:
            sid, new_storage = self._storage_id(t, seq)
        except (RuntimeError, NotImplementedError):  # sparse, nested and other storage-less tensors
            self.untracked_uses += 1  # counted, and said in the pass's warnings
            return -1
        layout = (sid, t.storage_offset(), t.shape, t.stride(), t.dtype)
        tid = self._by_layout.get(layout)
        if tid is None:
            tid = len(self.tensors)
            parent, view_op = -1, -1
            if made_here and not new_storage:
                # A new layout on a storage an input lives on: a view of that input.
                for input_tid, input_sid in parent_hint:
                    if input_sid == sid and input_tid != tid:
                        parent, view_op = input_tid, -2  # -2: the current op, filled in by the caller
                        break
            creator = seq if made_here else -1
            if not made_here:
                self.unseen_creators += 1
            dtype = self._dtype_names.get(t.dtype)
            if dtype is None:
                dtype = self._dtype_names.setdefault(t.dtype, str(t.dtype).removeprefix("torch."))
            row = [tid, sid, layout[1], layout[2], layout[3], dtype, t.element_size(), t.data_ptr()]
            self.tensors.append([*row, creator, parent, view_op, -1, -1])
            self._by_layout[layout] = tid
        self._by_impl[impl] = tid
        self._impl_refs[impl] = weakref.ref(t, functools.partial(self._impl_died, impl))
        return tid

    # -- the hook
    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        return False  # the hook is kept out of Dynamo by outside_dynamo, which loads Dynamo only if the script did

    @outside_dynamo
    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        if kwargs is None:
            kwargs = {}
        if self.broken or is_compiling():
            return func(*args, **kwargs)
        # A bug in tenprof's bookkeeping must not become the script's error: it stops the recording,
        # says why (in the pass status), and the script goes on.
        try:
            before = self._before(func, args, kwargs, sys._getframe(1))
        except Exception as exc:
            self.give_up(exc)
            return func(*args, **kwargs)
        if self.access is None:
            out = func(*args, **kwargs)
        else:  # the access pass: the sanitizer tool tags this op's kernel launches with its number
            self.access.enter(before[1], self.access_all_ops or self._first_of_its_kind(before))
            try:
                out = func(*args, **kwargs)
            finally:
                self.access.leave(before[1])
        try:
            self._after(before, out)
        except Exception as exc:
            self.give_up(exc)
        return out

    def _first_of_its_kind(self, before: tuple[Any, ...]) -> bool:
        """True for the first op with this op, call path and input layouts: the access pass records its
        launches, and lets the others like it run unrecorded (the tensor stall cost reads the first op
        instance of each signature; the access patterns group reads per op and line)."""
        info, _, frame, _, backward, inputs = before[:6]
        rows = self.tensors
        key = (info.name_id, frame, backward, tuple((rows[t][3], rows[t][4], rows[t][5]) for t, _ in inputs))
        if key in self._access_kinds:
            return False
        self._access_kinds.add(key)
        return True

    def give_up(self, exc: Exception) -> None:
        self.broken = f"the tensors recorder stopped at op {self.seq}: {exc.__class__.__name__}: {exc}"

    def _before(self, func: Any, args: Any, kwargs: dict[str, Any], caller: Any) -> tuple[Any, ...]:
        info = self._infos.get(func) or self._info(func)
        node = torch._C._current_autograd_node()
        seq = next(self._counter)  # atomic under the GIL, also when autograd's threads run ops
        self.seq = seq + 1
        if node is not None:
            backward, autograd_nr, frame = 1, node._sequence_nr(), -1
        else:
            # The op's own backward node, if it made one, took the number just before the next one.
            backward, autograd_nr = 0, torch._C._autograd._get_sequence_nr() - 1
            frame = self.interner.path_id(caller)
        autograd_nr &= _U64_MASK
        if autograd_nr >= _UNSET:
            autograd_nr = -1
        inputs: list[tuple[int, int]] = []
        written: dict[int, int] = {}  # tensor object -> tensor id, for the tensors the op writes into
        tensor_type = torch.Tensor
        for position, value in enumerate(args):
            role = READWRITE if position in info.write_positions else READ
            self._note_inputs(value, seq, role, inputs, written, tensor_type, info.lifts)
        for name, value in kwargs.items():
            role = READ if name not in info.write_names else (WRITE if name in info.out_names else READWRITE)
            self._note_inputs(value, seq, role, inputs, written, tensor_type)
        return info, seq, frame, autograd_nr, backward, inputs, written, time.time_ns()

    def _after(self, before: tuple[Any, ...], out: Any) -> None:
        info, seq, frame, autograd_nr, backward, inputs, written, started = before
        if written and (info.changes_layout or info.out_names):
            for impl in written:
                self._by_impl.pop(impl, None)
        self.ops.extend(
            (seq, info.name_id, frame, threading.get_native_id(), autograd_nr, backward, self.step, started)
        )
        tensor_type = torch.Tensor
        for t in out if isinstance(out, (tuple, list)) else (out,):
            if not isinstance(t, tensor_type) or t._cdata in written:
                continue
            tid = self._tensor_id(t, seq, True, inputs)
            if tid < 0:
                continue
            row = self.tensors[tid]
            if row[10] == -2:
                row[10] = info.name_id
            if info.is_copy and row[11] == -1 and inputs and inputs[0][0] != tid:
                row[11], row[12] = inputs[0][0], info.name_id
            self.uses.extend((seq, tid, OUTPUT))
        if info.is_copy and written and len(inputs) >= 2:
            # copy_(dst, src): dst now holds src's values.
            dst = next(iter(written.values()))
            if self.tensors[dst][11] == -1 and inputs[1][0] != dst:
                self.tensors[dst][11], self.tensors[dst][12] = inputs[1][0], info.name_id

    def _note_inputs(
        self,
        value: Any,
        seq: int,
        role: int,
        inputs: list[tuple[int, int]],
        written: dict[int, int],
        tensor_type: type[torch.Tensor],
        creates: bool = False,
    ) -> None:
        if isinstance(value, tensor_type):
            values: Any = (value,)
        elif isinstance(value, (list, tuple)) and value and isinstance(value[0], tensor_type):
            values = value
        else:
            return
        t: Any
        for t in values:
            if not isinstance(t, tensor_type):
                continue
            tid = self._tensor_id(t, seq, creates, inputs)
            if tid < 0:
                continue
            inputs.append((tid, self.tensors[tid][1]))
            self.uses.extend((seq, tid, role))
            if role != READ:
                written[t._cdata] = tid

    # -- the script's own kernel launches (capture.own_launch_uses)
    def launch_begin(self, name: str, args: Any, kwargs: dict[str, Any], caller: Any) -> tuple[int, int, int, int]:
        """An op "(user kernel) NAME" for a launch in no aten op: every tensor argument is a use, as
        readwrite (which of them the kernel reads and which it writes is not known). Returns its token."""
        name_id = self._launch_names.get(name)
        if name_id is None:
            name_id = self._launch_names[name] = len(self.names)
            self.names.append(name)
        seq = next(self._counter)
        self.seq = seq + 1
        inputs: list[tuple[int, int]] = []
        written: dict[int, int] = {}
        for value in (*args, *kwargs.values()):
            self._note_inputs(value, seq, READWRITE, inputs, written, torch.Tensor)
        return name_id, seq, self.interner.path_id(caller), time.time_ns()

    def launch_end(self, token: tuple[int, int, int, int]) -> None:
        name_id, seq, frame, started = token
        self.ops.extend((seq, name_id, frame, threading.get_native_id(), -1, 0, self.step, started))

    # -- output
    def columns(self) -> dict[str, Any]:
        return {
            "version": 1,
            "names": self.names,
            "roles": list(ROLE_NAMES),
            "ops": {key: list(self.ops[i :: len(OP_COLUMNS)]) for i, key in enumerate(OP_COLUMNS)},
            "uses": {key: list(self.uses[i :: len(USE_COLUMNS)]) for i, key in enumerate(USE_COLUMNS)},
            "tensors": {
                key: [list(row[i]) if key in ("shape", "stride") else row[i] for row in self.tensors]
                for i, key in enumerate(TENSOR_COLUMNS)
            },
            "storages": {key: [row[i] for row in self.storages] for i, key in enumerate(STORAGE_COLUMNS)},
            "frames": self.interner.rows,
            "op_count": self.seq,
            "unseen_creators": self.unseen_creators,
            "untracked_uses": self.untracked_uses,
            "broken": self.broken,
        }


class TensorsSession:
    """Runs the recorder for a whole script (or until a --schedule's active steps end)."""

    def __init__(
        self,
        raw_dir: Path,
        schedule: Schedule | None,
        stop_code: CodeType | None = None,
        access_library: str = "",
        access_all_ops: bool = False,
    ) -> None:
        self.raw_dir = raw_dir
        self.recorder = TensorRecorder(stop_code)
        self.recorder.access_all_ops = access_all_ops
        self.own_launches = OwnLaunchUses(self.recorder)
        self.access_library = access_library
        self.access_error = ""
        self.stop_after_step = schedule.wait + schedule.warmup + schedule.active if schedule is not None else -1
        self.trace_written = False
        self._recording = False
        self._allocator_history = False

    def start(self) -> None:
        if self.access_library:  # a tool that did not start fails the accesses pass only (access_error)
            try:
                self.recorder.access = AccessHook(self.access_library, self.raw_dir)
            except AccessHookError as exc:
                self.access_error = str(exc)
        if torch.cuda.is_available():
            torch.cuda.reset_peak_memory_stats()
            self._allocator_history = _start_allocator_history()
        self.recorder.__enter__()  # type: ignore[no-untyped-call]
        self.own_launches.install()
        self._recording = True
        runtime.activate(self)

    def _stop_recording(self) -> None:
        if self._recording:
            self._recording = False
            self.own_launches.uninstall()
            runtime.leave_mode(self.recorder)

    def stop(self) -> None:
        runtime.deactivate(self)
        self._stop_recording()
        data = self.recorder.columns()
        data["cuda_memory"] = _cuda_memory(self.recorder.storages)
        data["allocator"] = _stop_allocator_history() if self._allocator_history else {}
        data["compiled_graphs"] = _compiled_graphs()
        (self.raw_dir / TENSORS_FILE).write_bytes(gzip.compress(orjson.dumps(data), compresslevel=1))
        if self.recorder.access is not None:
            self.recorder.access.flush()
        self.trace_written = True

    # -- the Session protocol used by tenprof.scope / tenprof.step
    def step(self) -> None:
        self.recorder.step += 1
        if self.recorder.step == self.stop_after_step:
            self._stop_recording()

    def scope_enter(self, name: str, caller: Any, decorator: bool) -> Any:
        return None

    def scope_exit(self, token: Any) -> None:
        return None


def _cuda_memory(storages: list[list[Any]]) -> dict[str, int]:
    """The caching allocator's own totals, to check the peak tenprof computes from storages, and what
    it still holds now beyond the storages still alive (workspaces no op output owns)."""
    if not torch.cuda.is_available() or not torch.cuda.is_initialized():  # type: ignore[no-untyped-call]
        return {}
    torch.cuda.synchronize()
    alive = sum((row[3] + 511) // 512 * 512 for row in storages if row[5] < 0 and str(row[1]).startswith("cuda"))
    allocated = int(torch.cuda.memory_allocated())
    return {
        "max_memory_allocated_bytes": int(torch.cuda.max_memory_allocated()),
        "memory_allocated_at_end_bytes": allocated,
        "untracked_at_end_bytes": allocated - alive,
        "max_memory_reserved_bytes": int(torch.cuda.max_memory_reserved()),
    }


ALLOCATOR_ACTIONS = ("alloc", "free_requested", "free_completed")


def _start_allocator_history() -> bool:
    """The caching allocator's own log of every alloc and free (no stacks: cheap), so the report can say
    what besides op outputs was allocated at the peak (workspaces, temporaries inside ops)."""
    try:
        torch.cuda.memory._record_memory_history(enabled="all", context=None, stacks="python")
    except (AttributeError, RuntimeError, TypeError):
        return False
    return True


def _stop_allocator_history() -> dict[str, list[Any]]:
    try:
        snapshot = torch.cuda.memory._snapshot()
        torch.cuda.memory._record_memory_history(enabled=None)
    except (AttributeError, RuntimeError, TypeError):
        return {}
    columns: dict[str, list[Any]] = {"device": [], "action": [], "address": [], "bytes": [], "time_us": []}
    for device, entries in enumerate(snapshot.get("device_traces", [])):
        for entry in entries:
            if entry.get("action") in ALLOCATOR_ACTIONS:
                columns["device"].append(device)
                columns["action"].append(entry["action"])
                columns["address"].append(int(entry.get("addr", 0)))
                columns["bytes"].append(int(entry.get("size", 0)))
                columns["time_us"].append(int(entry.get("time_us", -1)))
    return columns


def _compiled_graphs() -> int:
    """Graphs torch.compile made in this process (their kernels run where no dispatch hook sees)."""
    if "torch._dynamo" not in sys.modules:
        return 0
    try:
        from torch._dynamo.utils import counters

        return int(counters["stats"]["unique_graphs"])
    except (ImportError, KeyError, TypeError):
        return 0
