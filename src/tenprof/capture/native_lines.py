"""The native call-site recorder: build it, load it, and adapt it to the call-site log.

`tenprof/native/callsite_observer.cpp` is a RecordFunction observer that records (thread, start, end,
call path) for every top-level op on a Python thread, with no Python code per op: the cost of the
Python recorder's TorchFunctionMode and frame walk goes. It is built on first use with the machine's
C++ compiler ($CXX or g++) against the installed torch's headers and libraries, into a cache folder
named by a hash of the source, torch, Python and the compiler (a later run reuses it), and loaded with
ctypes. Call paths are interned natively as (code object, bytecode offset) chains and turned into
rows of the `frames` table at the end, by the same interner as the Python recorder's, so the sidecar
file is the same and the importer does not know which recorder wrote it.

The default; TENPROF_LINES_RECORDER=python selects the Python recorder instead. When the native one
cannot be built here, one line on stderr says why and the Python recorder is used.

Asked to (`every_op`), it also records every op of every thread and the named ranges, and with `inputs`
each op's input signature, decoded here as torch.profiler's record_shapes writes it; the native capture
(`tenprof run --capture native`) writes them as its trace (tenprof.capture.native_trace).
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import subprocess
import sys
import sysconfig
import threading
import time
from array import array
from pathlib import Path
from types import CodeType
from typing import Any

import torch

from tenprof.capture import native_build
from tenprof.capture.callsites import CallsiteRecorder
from tenprof.capture.compiling import is_compiling
from tenprof.capture.frames import FrameInterner
from tenprof.capture.input_encoding import decode_signature
from tenprof.capture.input_sampling import FillReport, StepDigest, fill_signatures
from tenprof.capture.native_trace import MEMORY_FIELDS
from tenprof.errors import TenprofError

SOURCE = Path(__file__).resolve().parents[1] / "native" / "callsite_observer.cpp"
LIBRARY_NAME = "libtenprof_lines.so"
ENV_VAR = "TENPROF_LINES_RECORDER"


class NativeLinesUnavailable(TenprofError):
    """The native recorder cannot be built or loaded here (no compiler, no headers, a failed build)."""


def cache_root() -> Path:
    return native_build.cache_root("native")


def find_compiler() -> str:
    return native_build.find_compiler(NativeLinesUnavailable)


def build_command(compiler: str, out: Path) -> list[str]:
    torch_dir = Path(torch.__file__).resolve().parent
    lib = torch_dir / "lib"
    return [
        compiler, "-O2", "-DNDEBUG", "-std=c++17", "-shared", "-fPIC", "-w",
        f"-D_GLIBCXX_USE_CXX11_ABI={int(torch._C._GLIBCXX_USE_CXX11_ABI)}",
        "-I", str(torch_dir / "include"), "-I", sysconfig.get_paths()["include"],
        "-o", str(out), str(SOURCE),
        "-L", str(lib), "-lc10", "-ltorch_cpu", f"-Wl,-rpath,{lib}",
    ]  # fmt: skip


def _cache_key(compiler: str) -> str:
    digest = hashlib.sha256(SOURCE.read_bytes())
    digest.update(f"{torch.__version__} {torch.__file__} {sys.version} {compiler}".encode())
    try:
        version = subprocess.run([compiler, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        version = ""
    digest.update(version.encode())
    return digest.hexdigest()[:16]


def build_library(cache: Path | None = None) -> Path:
    """The built library, from the cache or built now (a few seconds the first time)."""
    if sys.implementation.name != "cpython":
        raise NativeLinesUnavailable(f"it needs CPython, not {sys.implementation.name}")
    if sysconfig.get_config_var("Py_GIL_DISABLED"):
        raise NativeLinesUnavailable("free-threaded Python is not supported")
    compiler = find_compiler()
    if not (Path(sysconfig.get_paths()["include"]) / "Python.h").is_file():
        raise NativeLinesUnavailable("Python.h was not found: install the Python development headers")
    if not (Path(torch.__file__).resolve().parent / "include" / "ATen" / "record_function.h").is_file():
        raise NativeLinesUnavailable("torch's C++ headers were not found in the installed torch")
    target = (cache or cache_root()) / _cache_key(compiler)
    library = target / LIBRARY_NAME
    if not library.is_file():
        native_build.build_into(
            target, lambda folder: [build_command(compiler, folder / LIBRARY_NAME)], NativeLinesUnavailable, "the build"
        )
    return library


def load_library(path: Path) -> ctypes.PyDLL:
    """The loaded library; PyDLL keeps the GIL held across calls, as its entry points expect."""
    try:
        lib = ctypes.PyDLL(str(path))
    except OSError as exc:
        raise NativeLinesUnavailable(f"it could not be loaded ({exc})") from None
    lib.tenprof_lines_prepare.argtypes = []
    lib.tenprof_lines_prepare.restype = None
    lib.tenprof_range_enter.argtypes = [ctypes.c_char_p]
    lib.tenprof_range_enter.restype = ctypes.c_void_p
    lib.tenprof_range_exit.argtypes = [ctypes.c_void_p]
    lib.tenprof_range_exit.restype = None
    lib.tenprof_lines_start.argtypes = [ctypes.py_object, ctypes.py_object]
    lib.tenprof_lines_start.restype = ctypes.c_int
    lib.tenprof_lines_pause.argtypes = [ctypes.c_int]
    lib.tenprof_lines_pause.restype = None
    lib.tenprof_lines_compiling.argtypes = [ctypes.c_int]
    lib.tenprof_lines_compiling.restype = None
    lib.tenprof_lines_ask_inputs.argtypes = [ctypes.c_int]
    lib.tenprof_lines_ask_inputs.restype = ctypes.c_int
    lib.tenprof_lines_step_digest.argtypes = []
    lib.tenprof_lines_step_digest.restype = ctypes.py_object
    lib.tenprof_lines_stop.argtypes = []
    lib.tenprof_lines_stop.restype = None
    lib.tenprof_lines_records.argtypes = []
    lib.tenprof_lines_records.restype = ctypes.py_object
    lib.tenprof_lines_paths.argtypes = []
    lib.tenprof_lines_paths.restype = ctypes.py_object
    lib.tenprof_lines_clear.argtypes = []
    lib.tenprof_lines_clear.restype = None
    lib.tenprof_lines_every_op.argtypes = [ctypes.c_int, ctypes.c_int]
    lib.tenprof_lines_every_op.restype = None
    lib.tenprof_lines_alone.argtypes = [ctypes.c_int]
    lib.tenprof_lines_alone.restype = None
    lib.tenprof_lines_signatures.argtypes = []
    lib.tenprof_lines_signatures.restype = ctypes.py_object
    lib.tenprof_lines_dtype_name.argtypes = [ctypes.c_int]
    lib.tenprof_lines_dtype_name.restype = ctypes.py_object
    lib.tenprof_lines_ops.argtypes = []
    lib.tenprof_lines_ops.restype = ctypes.py_object
    lib.tenprof_lines_op_names.argtypes = []
    lib.tenprof_lines_op_names.restype = ctypes.py_object
    lib.tenprof_lines_threads.argtypes = []
    lib.tenprof_lines_threads.restype = ctypes.py_object
    lib.tenprof_lines_state_push.argtypes = [ctypes.c_int]
    lib.tenprof_lines_state_push.restype = ctypes.c_int
    lib.tenprof_lines_memory_pause.argtypes = [ctypes.c_int]
    lib.tenprof_lines_memory_pause.restype = None
    lib.tenprof_lines_state_pop.argtypes = []
    lib.tenprof_lines_state_pop.restype = ctypes.c_int
    lib.tenprof_lines_memory.argtypes = []
    lib.tenprof_lines_memory.restype = ctypes.py_object
    return lib


# The columns of an op record (callsite_observer.cpp, ThreadBuffer::ops), in order; `scope` is torch's
# RecordScope, USER_SCOPE for a named range (record_function, ProfilerStep#N), the others ops.
OP_FIELDS = (
    "thread_id", "start_ns", "end_ns", "name_id", "sequence_nr", "forward_thread_id", "depth", "scope", "signature_id",
)  # fmt: skip
USER_SCOPE: int = torch._C._profiler.RecordScope.USER_SCOPE.value


def _line_of(code: CodeType, offset: int) -> int:
    """The line of the instruction at byte `offset`, as frame.f_lineno gives it for a running frame."""
    for start, end, line in code.co_lines():
        if start <= offset < end:
            return line or 0
    return 0


class SamplerGate:
    """The host sampler's wait for its next round, in the native library and without the GIL (ctypes.CDLL
    lets it go for the call): rounds due while every script thread that runs ops is running them are
    skipped there, so the sampler takes the interpreter's lock only when some thread's time is not the ops' (see
    tenprof_lines_sampler_wait). The skipped rounds' samples are made from the call-site records
    (tenprof.capture.skipped_rounds)."""

    def __init__(self, lib: ctypes.PyDLL) -> None:
        self._owned = lib  # its functions that return Python objects need the GIL held
        self._free = ctypes.CDLL(lib._name)  # the same library loaded again: the same globals
        self._free.tenprof_lines_sampler_wait.argtypes = [
            ctypes.c_int64, ctypes.c_int64, ctypes.POINTER(ctypes.c_int64), ctypes.c_int64
        ]  # fmt: skip
        self._free.tenprof_lines_sampler_wait.restype = ctypes.c_int64
        self._free.tenprof_lines_sampler_pause.argtypes = [ctypes.c_int]
        self._free.tenprof_lines_sampler_pause.restype = None
        lib.tenprof_lines_sampler_skipped.argtypes = []
        lib.tenprof_lines_sampler_skipped.restype = ctypes.py_object

    def wait(self, period_ns: int, max_wait_ns: int, threads: list[int]) -> int:
        """The perf-clock time of the next round to take, or 0 when none came within `max_wait_ns` (or
        the gate is paused); `threads`: the OS ids of the script's threads the last round sampled."""
        ids = (ctypes.c_int64 * len(threads))(*threads)
        return int(self._free.tenprof_lines_sampler_wait(period_ns, max_wait_ns, ids, len(threads)))

    def pause(self, paused: bool) -> None:
        self._free.tenprof_lines_sampler_pause(int(paused))

    def skipped(self) -> array[int]:
        """The rounds skipped since the last call: (thread, time) pairs, flattened."""
        taken = array("q")
        taken.frombytes(self._owned.tenprof_lines_sampler_skipped())
        return taken


class NativeRange:
    """One named range of the native library's (`NativeCallsiteRecorder.named_range`): opened by `__enter__`,
    closed by `__exit__` (on the thread that opened it: the recorder closes a record on the thread it opened
    on, for record_function's ranges too)."""

    def __init__(self, lib: ctypes.PyDLL, name: str) -> None:
        self._lib = lib
        self._name = name.encode()
        self._handle: int | None = None

    def __enter__(self) -> NativeRange:
        self._handle = self._lib.tenprof_range_enter(self._name)
        return self

    def __exit__(self, *exc: Any) -> None:
        handle, self._handle = self._handle, None
        if handle is not None:
            self._lib.tenprof_range_exit(handle)


class NativeCallsiteRecorder:
    """Stands where `CallsiteRecorder` does in the call-site log (enter, pause, close, records), but
    records natively; Dynamo's compilations are still recorded from their Python callbacks."""

    def __init__(
        self,
        interner: FrameInterner,
        lib: ctypes.PyDLL,
        every_op: bool = False,
        inputs: bool = False,
        memory: bool = False,
        stand_in: bool = False,
        alone: bool | None = None,
    ) -> None:
        self.interner = interner
        self.lib = lib
        # every op of every thread recorded too (`ops`), as a profiler's CPU side records them; with `inputs`
        # each op's input signature (shapes, dtypes, strides, scalar values), as its record_shapes does; with
        # `memory` the allocators' reports, as its profile_memory does (for the thread that enters the
        # recorder and those autograd runs its backward on). With `stand_in` (a capture without the profiler),
        # a profiler's state of its own stands on the entering thread (callsite_observer.cpp, RecorderState):
        # torch's fast record function records only where one does (the compiled graph's and each Triton
        # launch's ranges). Never beside a profiler session on that thread: it would stand above the
        # session's state, which the session's callbacks and its stop expect to find on top.
        self.every_op = every_op
        self.inputs = every_op and inputs
        self.memory = every_op and stand_in and memory
        self.stand_in = every_op and stand_in
        # `alone` (a stand-in's default): no profiler records ops beside it, so one callback opens and
        # closes each record (callsite_observer.cpp, tenprof_lines_alone); else two bracket the profiler's.
        self.alone = self.stand_in if alone is None else alone
        self._ops: dict[str, Any] | None = None
        self.fill_report = FillReport()  # what the ops of steps that did not ask for inputs were given
        self.unchanged_steps: set[int] = set()  # InputSampling.unchanged: the sampling fills it as steps end
        self._compiles = 0  # Dynamo compilations running
        self._flag_before = False  # torch's profiler flag before they began
        # Dynamo's compile records come from the Python recorder's callbacks, into its records array.
        self._python = CallsiteRecorder(interner)
        self._started = False
        self._paused = False
        self._ops_off = False
        self._records: array[int] | None = None
        self._unwrapped: dict[str, Any] = {}
        # Its first callback goes in now, disabled, so that it runs before the profiler's (started later);
        # the scopes it observes (named ranges too, for every op) are set with it.
        self._configure()
        lib.tenprof_lines_prepare()

    def _configure(self) -> None:
        """The library's settings this recorder's callbacks are added with (another recorder may have run)."""
        self.lib.tenprof_lines_every_op(int(self.every_op), int(self.inputs))
        self.lib.tenprof_lines_alone(int(self.alone))

    @property
    def paused(self) -> bool:
        return self._paused

    @paused.setter
    def paused(self, value: bool) -> None:
        if value != self._paused and self._started:
            self.lib.tenprof_lines_pause(int(value or self._ops_off))
            if self.memory:
                self.lib.tenprof_lines_memory_pause(int(value))
        self._paused = value

    @property
    def ops_off(self) -> bool:
        """Whether the op callbacks are off while the rest records (allocator reports, step digests): a
        step whose ops are copied from a recorded one after the run (`TENPROF_OPS=sampled`, op_copy.py)."""
        return self._ops_off

    @ops_off.setter
    def ops_off(self, value: bool) -> None:
        if value != self._ops_off and self._started and not self._paused:
            self.lib.tenprof_lines_pause(int(value))
        self._ops_off = value

    @property
    def samples_inputs(self) -> bool:
        """Whether it can leave the inputs out of some steps (`ask_inputs`): it records them, and no
        profiler's callbacks run beside it (its opener must stay ahead of them)."""
        return self.inputs and self.alone

    def ask_inputs(self, ask: bool) -> None:
        """Ask torch for every op's inputs from now on, or not (input_sampling.py)."""
        self.lib.tenprof_lines_ask_inputs(int(ask))

    def named_range(self, name: str) -> NativeRange:
        """A named range as torch's record_function makes one, at a fraction of its cost (a context manager,
        entered and exited once; callsite_observer.cpp, tenprof_range_enter)."""
        return NativeRange(self.lib, name)

    def step_digest(self) -> StepDigest:
        """The digest of the ops opened since the last call (callsite_observer.cpp), which it resets."""
        return StepDigest(*self.lib.tenprof_lines_step_digest())

    def __enter__(self) -> NativeCallsiteRecorder:
        if not self._started:
            self._records = None
            self._ops = None
            self._configure()
            self.lib.tenprof_lines_start(self.interner.stop_code, self._on_new_path)
            if self.stand_in:
                self.lib.tenprof_lines_state_push(int(self.memory))
            self._started = True
            self._paused = False
            self._ops_off = False
            self._on_new_path()
            self._wrap_autograd()
        return self

    def release_profiler_state(self) -> None:
        """Give back the profiler state the native capture holds on this thread (for the allocators'
        reports), so that a profiler of the script's own can start here; its memory reports stop. Popping
        twice is harmless (`__exit__` pops again)."""
        if self.stand_in and self._started:
            self.lib.tenprof_lines_state_pop()

    def __exit__(self, *exc: Any) -> None:
        self.lib.tenprof_lines_stop()
        if self.stand_in:
            self.lib.tenprof_lines_state_pop()
        self._started = False
        for name, func in self._unwrapped.items():
            if getattr(torch.autograd, name, None) is not func:
                setattr(torch.autograd, name, func)
        self._unwrapped.clear()

    def _wrap_autograd(self) -> None:
        """Record torch.autograd.backward and .grad calls (Tensor.backward calls the first) as calls too.

        On a GPU the backward ops run on autograd's own threads, which have no Python frames; the
        importer gives those it cannot match to a forward op the line of the call that covers them on
        the main thread, which is this one (the Python recorder sees it as a torch API call)."""
        self._unwrapped = {}
        for name in ("backward", "grad"):
            func = getattr(torch.autograd, name, None)
            if func is None:
                continue
            self._unwrapped[name] = func
            setattr(torch.autograd, name, self._recorded(func))

    def _recorded(self, func: Any) -> Any:
        recorder = self._python

        @functools.wraps(func)
        def call(*args: Any, **kwargs: Any) -> Any:
            if self._paused or self._ops_off or is_compiling():  # no call site where no op is recorded
                return func(*args, **kwargs)
            frame_id = self.interner.path_id(sys._getframe(1))
            start = time.perf_counter_ns()
            try:
                return func(*args, **kwargs)
            finally:
                recorder.records.extend((threading.get_native_id(), start, time.perf_counter_ns(), frame_id))

        return call

    def close(self) -> None:
        callbacks = self._python._callbacks
        if callbacks is not None:
            try:
                callbacks.remove_start_callback(self._compile_started)
                callbacks.remove_end_callback(self._compile_ended)
            except (ValueError, AttributeError):
                pass
        self._python.close()

    def _on_new_path(self) -> bool:
        """Called natively when a call path is first seen (rare): hook Dynamo once it is imported."""
        if "torch._dynamo" not in sys.modules:
            return False
        if not self._python._dynamo_hooked:
            self._python._hook_dynamo()
            if self._python._callbacks is not None:
                self._python._callbacks.register_start_callback(self._compile_started)
                self._python._callbacks.register_end_callback(self._compile_ended)
        return True

    def _compile_started(self, *args: Any) -> None:
        self.lib.tenprof_lines_compiling(1)  # the compile record covers the compiler's ops
        # torch's compiler names its phases (entire_frame_compile, ...) only while torch's profiler flag is
        # up; recording every op, the flag goes up for the compilation alone (the compiled code, which adds
        # a record per launch while it is up, runs with it as it was)
        if self.every_op and self._compiles == 0:
            self._flag_before = bool(torch.autograd.profiler._is_profiler_enabled)
            torch.autograd.profiler._set_is_profiler_enabled(True)
        self._compiles += 1

    def _compile_ended(self, *args: Any) -> None:
        # The end of a compilation whose start came before Dynamo was hooked (mid-compile) is not counted:
        # the count would stay below zero and every later op would read as the compiler's.
        if self._compiles == 0:
            return
        self._compiles -= 1
        self.lib.tenprof_lines_compiling(-1)
        if self.every_op and self._compiles == 0:
            torch.autograd.profiler._set_is_profiler_enabled(self._flag_before)

    @property
    def records(self) -> array[int]:
        """Every record, native and compile ones, with frame ids of the interner's `frames` rows."""
        if self._records is None:
            self._records = self._collect()
        return self._records

    @property
    def ops(self) -> dict[str, Any]:
        """Every op recorded natively (`every_op`): a list per column of OP_FIELDS, `names` by name id and
        `signatures` by signature id (decode_signature's lists; none without `inputs`), `threads` as
        (pthread_self(), OS thread id) pairs, `memory` the allocators' reports (a list per column of
        MEMORY_FIELDS; only with `memory`); empty when not asked for."""
        if self._ops is None:
            self.records  # noqa: B018  (collects the ops with the call records, then clears both)
        return self._ops or {}

    def _collect(self) -> array[int]:
        raw = array("q")
        raw.frombytes(self.lib.tenprof_lines_records())
        paths = self.lib.tenprof_lines_paths()
        self._ops = self._collect_ops() if self.every_op else {}
        self.lib.tenprof_lines_clear()
        frame_of = [self.interner.intern_chain(_resolve(path)) for path in paths]
        raw[3::4] = array("q", (frame_of[p] for p in raw[3::4]))
        raw.extend(self._python.records)
        return raw

    def _collect_ops(self) -> dict[str, Any]:
        flat = array("q")
        flat.frombytes(self.lib.tenprof_lines_ops())
        width = len(OP_FIELDS)
        columns: dict[str, Any] = {name: list(flat[i::width]) for i, name in enumerate(OP_FIELDS)}
        columns["names"] = self.lib.tenprof_lines_op_names()
        keys = list(self.lib.tenprof_lines_signatures())
        # ops of the steps that did not ask for their inputs take a sampled step's (ask_inputs)
        self.fill_report = fill_signatures(columns, keys, USER_SCOPE, self.unchanged_steps)
        columns["signatures"] = [decode_signature(key, self._dtype_name) for key in keys]
        columns["threads"] = self._threads()
        if self.memory:
            reports = array("q")
            reports.frombytes(self.lib.tenprof_lines_memory())
            width = len(MEMORY_FIELDS)
            columns["memory"] = {name: list(reports[i::width]) for i, name in enumerate(MEMORY_FIELDS)}
        return columns

    def _threads(self) -> list[tuple[int, int]]:
        """(pthread_self(), OS thread id) of every thread that ran an op, and of the Python threads alive."""
        threads = {t.ident: t.native_id for t in threading.enumerate() if t.ident and t.native_id}
        threads.update((pthread, tid) for tid, pthread in self.lib.tenprof_lines_threads())
        return sorted(threads.items())

    @functools.cache  # noqa: B019  (one recorder a run; a handful of dtypes)
    def _dtype_name(self, scalar_type: int) -> str:
        name: str = self.lib.tenprof_lines_dtype_name(scalar_type)
        return name


def _resolve(path: tuple[Any, ...]) -> list[tuple[CodeType, int]]:
    return [(path[i], _line_of(path[i], path[i + 1])) for i in range(0, len(path), 2)]


def make_recorder(
    interner: FrameInterner,
    wanted: str,
    every_op: bool = False,
    inputs: bool = False,
    memory: bool = False,
    stand_in: bool = False,
) -> CallsiteRecorder | NativeCallsiteRecorder:
    """The recorder asked for ("native" or "python", from TENPROF_LINES_RECORDER); the Python one when
    the native one is unavailable, after one line on stderr saying why. `every_op`: the native one
    records every op too (the Python one cannot, and records without them), with `inputs` their input
    signatures; with `stand_in` it stands in for the profiler (NativeCallsiteRecorder), with `memory`
    recording the allocators' reports."""
    wanted = wanted.strip().lower() or "native"
    if wanted != "native":
        if wanted != "python":
            print(f"tenprof: {ENV_VAR}={wanted} is not native or python; using the Python recorder", file=sys.stderr)
        return CallsiteRecorder(interner)
    try:
        lib = load_library(build_library())
    except NativeLinesUnavailable as exc:
        print(f"tenprof: native call-site recorder unavailable ({exc}); using the Python recorder", file=sys.stderr)
        return CallsiteRecorder(interner)
    return NativeCallsiteRecorder(interner, lib, every_op, inputs, memory, stand_in)
