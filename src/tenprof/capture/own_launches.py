"""The Python line of each kernel the script launches itself outside torch ops: a Triton kernel
(`kernel[grid](...)`), or a CUDA extension's function (torch.utils.cpp_extension), which run in no torch
op and so have no line from the op recorders.

While the timeline pass runs, `triton.runtime.jit.JITFunction.run` (what `kernel[grid](...)` calls) is
wrapped, and so are the functions of the modules `torch.utils.cpp_extension.load` and `load_inline`
build meanwhile, and of the CUDA extension modules the script imports from its own files (built before
the run: a module whose file launches CUDA kernels, imported before or during the capture): each
outermost call on a thread appends (thread, start, end, call path, what was launched) to the records, on
the perf clock, with the call path interned like every other; so are the functions of shared libraries the
script loads with ctypes from its own files (by path, or by bare name found in the script's folders).
CuPy or Numba launches are not seen: their kernels get an op named after the kernel, without a line.
The importer makes each
such launch an op named "(user kernel) NAME" that holds its kernels (tenprof.importers.user_launches).
Neither module is imported for this: when the script imports one after the capture started, the
wrapper goes on right after (a post-import hook). Kernels that torch.compile generates are
launched by Inductor's own launchers, not through `run`, and already sit in ops: they are not recorded
here. The wrapper costs one Python call and a frame walk per launch (measured in benchmarks/).

A Triton kernel declared with `@triton.jit(launch_metadata=fn)` describes each launch in a dict (Proton's
convention: flops8/16/32/64, flops, bytes, or any number of the user's). The first time the wrapper sees
such a kernel launched, Triton's launch-enter hook is installed (`LaunchMetadataHook`), chained to any
hook already there, and removed when the recording stops; in it, the dict's numbers go to the record the
wrapper is making on that thread (its `metrics`). A script none of whose kernels declares launch_metadata
never has the hook installed. Once it is, Triton builds its launch metadata for every Triton launch of
the capture, Inductor's included (which find no record waiting and are left alone): a cost of the
capture's, measured with the rest of it.
"""

from __future__ import annotations

import ctypes
import importlib
import numbers
import sys
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from types import ModuleType
from typing import Any

from tenprof.capture.after_import import AfterImport
from tenprof.capture.frames import FrameInterner
from tenprof.sourcefiles import is_user_file

JIT_MODULE = "triton.runtime.jit"
EXTENSION_MODULE = "torch.utils.cpp_extension"


class _ModulePatch(ABC):
    """Changes a module while installed (`_patch`), undone by `_unpatch`; when the module is not imported
    yet, changed as soon as the script imports it (a post-import hook)."""

    module_name = ""

    def __init__(self) -> None:
        self._finder: AfterImport | None = None

    def install(self) -> None:
        module = sys.modules.get(self.module_name)
        if module is not None:
            self._patch(module)
        else:
            self._finder = AfterImport(self.module_name, self._patch)
            sys.meta_path.insert(0, self._finder)

    def uninstall(self) -> None:
        if self._finder is not None and self._finder in sys.meta_path:
            sys.meta_path.remove(self._finder)
        module = sys.modules.get(self.module_name)
        if module is not None:
            self._unpatch(module)

    @abstractmethod
    def _patch(self, module: ModuleType) -> None: ...

    @abstractmethod
    def _unpatch(self, module: ModuleType) -> None: ...


class _MethodPatch(_ModulePatch):
    """One method of one class of the module (`class_name.method_name`) replaced by
    `_replacement(original)` while installed, and put back at uninstall."""

    class_name = ""
    method_name = ""

    def __init__(self, make: Callable[[Callable[..., Any]], Callable[..., Any]]) -> None:
        super().__init__()
        self._make = make
        self._original: Callable[..., Any] | None = None

    def _patch(self, module: ModuleType) -> None:
        cls = getattr(module, self.class_name, None)
        if cls is None or self._original is not None:
            return
        self._original = getattr(cls, self.method_name)
        setattr(cls, self.method_name, self._replacement(self._original))
        self._patched(cls)

    def _unpatch(self, module: ModuleType) -> None:
        if self._original is not None:
            setattr(getattr(module, self.class_name), self.method_name, self._original)
        self._original = None

    @abstractmethod
    def _replacement(self, original: Callable[..., Any]) -> Callable[..., Any]: ...

    def _patched(self, cls: type) -> None:
        """Called once the method is replaced."""


class JitRunPatch(_MethodPatch):
    """`triton.runtime.jit.JITFunction.run` (what `kernel[grid](...)` calls) replaced by `make(original)`
    while installed. Each pass that watches the script's own Triton launches holds one."""

    module_name = JIT_MODULE
    class_name, method_name = "JITFunction", "run"

    def _replacement(self, original: Callable[..., Any]) -> Callable[..., Any]:
        return self._make(original)


class ExtensionPatch(_ModulePatch):
    """torch.utils.cpp_extension's `load` and `load_inline` replaced while installed: each public function
    of a module they build (a pybind function, which launches its kernels in no torch op) is replaced by
    `make(function)`. Extensions built before, or imported, are not seen; the functions wrapped stay
    wrapped after uninstall (a wrapper passes straight through once its pass has stopped)."""

    module_name = EXTENSION_MODULE

    def __init__(self, make: Callable[[Callable[..., Any]], Callable[..., Any]]) -> None:
        super().__init__()
        self._make = make
        self._loaders: dict[str, Callable[..., Any]] = {}

    def _patch(self, module: ModuleType) -> None:
        for name in ("load", "load_inline"):
            loader = getattr(module, name, None)
            if loader is None or name in self._loaders:
                continue
            self._loaders[name] = loader
            setattr(module, name, self._loading(loader))

    def _unpatch(self, module: ModuleType) -> None:
        for name, loader in self._loaders.items():
            setattr(module, name, loader)
        self._loaders.clear()

    def _loading(self, loader: Callable[..., Any]) -> Callable[..., Any]:
        make = self._make

        def load(*args: Any, **kwargs: Any) -> Any:
            built = loader(*args, **kwargs)
            if isinstance(built, ModuleType):
                _wrap_module_functions(built, make)
            return built

        return load


def _wrap_module_functions(module: ModuleType, make: Callable[[Callable[..., Any]], Callable[..., Any]]) -> None:
    """Each public builtin function of `module` (pybind functions are builtins) replaced by `make(fn)`;
    functions wrapped already (no longer builtins) are left as they are."""
    for attr in dir(module):
        fn: Any = getattr(module, attr, None)
        if not attr.startswith("_") and type(fn).__name__ == "builtin_function_or_method":
            setattr(module, attr, make(fn))


# Strings a shared object holds when it launches CUDA kernels itself: the runtime's launch call and the
# registration of its embedded kernels (in the dynamic symbol table when it links libcudart).
_CUDA_LAUNCH_MARKS = (b"cudaLaunchKernel", b"__cudaRegisterFatBinary", b"cuLaunchKernel")


def launches_cuda_kernels(path: str) -> bool:
    """True when the shared object at `path` names a CUDA kernel launch call or registers kernels."""
    import mmap

    try:
        with open(path, "rb") as file, mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as data:
            return any(data.find(mark) >= 0 for mark in _CUDA_LAUNCH_MARKS)
    except (OSError, ValueError):
        return False


class PrebuiltExtensionPatch(_MethodPatch):
    """Extension modules the script imports from its own files (built before the run: `python setup.py
    build_ext --inplace`, an earlier `cpp_extension.load`'s build folder on sys.path) that launch CUDA
    kernels: their public functions are replaced by `make(function)`, for those imported already when the
    patch goes on and, through importlib's extension loader, for those imported while it is on. A function
    the script bound to its own name before the capture started (`from ext import fn`) is not seen.
    Modules in installed packages are left alone (torch's own, for one)."""

    module_name = "importlib.machinery"
    class_name, method_name = "ExtensionFileLoader", "exec_module"

    def _replacement(self, original: Callable[..., Any]) -> Callable[..., Any]:
        wrap_if_own = self._wrap_if_own

        def exec_module(loader: Any, built: ModuleType) -> None:
            original(loader, built)
            wrap_if_own(built)

        return exec_module

    def _patched(self, cls: type) -> None:
        for imported in list(sys.modules.values()):  # those imported before the patch went on
            if isinstance(getattr(imported, "__dict__", {}).get("__loader__"), cls):
                self._wrap_if_own(imported)

    def _wrap_if_own(self, module: ModuleType) -> None:
        path = str(getattr(module, "__file__", "") or "")
        if _users_library(path) and launches_cuda_kernels(path):
            _wrap_module_functions(module, self._make)


class ForeignLibraryPatch(_MethodPatch):
    """ctypes: a function of a shared library the script loads from its own files (by a path outside the
    system's, /opt's and installed packages' folders, or by a bare name the loader found in such a folder)
    is replaced, when first looked up, by a stand-in that calls `make(function)` and passes attribute
    reads and writes (argtypes, restype) to the function. System libraries (libcuda.so.1) and those of
    installed packages are left alone."""

    module_name = "ctypes"
    class_name, method_name = "CDLL", "__getitem__"

    def _replacement(self, original: Callable[..., Any]) -> Callable[..., Any]:
        make = self._make

        def getitem(library: Any, name_or_ordinal: Any) -> Any:
            fn = original(library, name_or_ordinal)
            if isinstance(name_or_ordinal, str) and _users_library(loaded_path(library)):
                return _ForeignFunction(fn, make(fn))
            return fn

        return getitem


class _ForeignFunction:
    """A ctypes function with its calls going through `call`; everything else is the function's."""

    def __init__(self, fn: Any, call: Callable[..., Any]) -> None:
        object.__setattr__(self, "_fn", fn)
        object.__setattr__(self, "_call", call)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._call(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._fn, name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._fn, name, value)


class _LinkMap(ctypes.Structure):
    # the head of glibc's struct link_map: the load address, then the file's name as the loader opened it
    _fields_ = [("l_addr", ctypes.c_void_p), ("l_name", ctypes.c_char_p)]


_RTLD_DI_LINKMAP = 2


def _find_dlinfo() -> Any:
    try:
        return ctypes.CDLL(None).dlinfo
    except (AttributeError, OSError):  # not glibc
        return None


_DLINFO = _find_dlinfo()  # looked up before any patch is on (the lookup itself goes through CDLL)


def loaded_path(library: Any) -> str:
    """The file a ctypes library was loaded from: its name when that is a path, else the path the dynamic
    loader found for the bare name (glibc's dlinfo), else the bare name."""
    name = str(getattr(library, "_name", "") or "")
    if "/" in name:
        return name
    handle = getattr(library, "_handle", None)
    if _DLINFO is None or not handle:
        return name
    link_map = ctypes.POINTER(_LinkMap)()
    if _DLINFO(ctypes.c_void_p(handle), _RTLD_DI_LINKMAP, ctypes.byref(link_map)) == 0 and link_map:
        found = link_map.contents.l_name
        if found:
            return str(found.decode(errors="replace"))
    return name


def _users_library(path: str) -> bool:
    normalized = path.replace("\\", "/")
    system = ("/usr/", "/opt/", "/lib/", "/lib64/", "/etc/")
    return "/" in normalized and is_user_file(normalized) and not normalized.startswith(system)


# How a watcher wraps one way of launching: (the original callable, what a call to it launches from its
# arguments) -> the callable to put in its place.
Wrap = Callable[[Callable[..., Any], Callable[[tuple[Any, ...]], Any]], Callable[..., Any]]


class OwnLaunchPatches:
    """Every way this module knows the script launches its own kernels (Triton's `kernel[grid](...)`,
    extension functions, its own ctypes libraries), each call passed through `wrap`. Each pass that
    watches those launches (timeline, counters and stalls, tensors) holds one."""

    def __init__(self, wrap: Wrap) -> None:
        self._patches = (
            JitRunPatch(lambda run: wrap(run, lambda args: args[0])),
            ExtensionPatch(lambda fn: wrap(fn, _always(fn))),
            PrebuiltExtensionPatch(lambda fn: wrap(fn, _always(fn))),
            ForeignLibraryPatch(lambda fn: wrap(fn, _always(fn))),
        )

    def install(self) -> None:
        for patch in self._patches:
            patch.install()

    def uninstall(self) -> None:
        for patch in self._patches:
            patch.uninstall()


class OwnLaunches:
    """Records the script's own launches: Triton's `JITFunction.run`, and the functions of CUDA extensions
    built while it records. Each record is (thread, start, end, frame, what was launched, metrics), appended
    at once, so records made on several threads never interleave; `records` flattens the first four."""

    def __init__(self, interner: FrameInterner) -> None:
        self.interner = interner
        self._done: list[tuple[int, int, int, int, Any, dict[str, float] | None]] = []
        self.paused = False
        # per thread: `value` while an outermost launch runs; `metrics` while it is a kernel with
        # launch_metadata, for the launch hook to fill
        self._depth = threading.local()
        self._patches = OwnLaunchPatches(self._recording)
        self.hook = LaunchMetadataHook(self._depth)

    @property
    def records(self) -> list[int]:
        """(thread, start, end, frame) per record, flattened."""
        return [value for record in self._done for value in record[:4]]

    @property
    def names(self) -> list[str]:
        return [kernel_name(record[4]) for record in self._done]

    @property
    def metrics(self) -> list[list[Any]]:
        """[record index, metric, value] for each number a launch's launch_metadata gave."""
        return [
            [index, name, value]
            for index, record in enumerate(self._done)
            if record[5]
            for name, value in record[5].items()
        ]

    def start(self) -> None:
        self._patches.install()

    def stop(self) -> None:
        self.paused = True  # extension and library functions found meanwhile keep their (now idle) wrappers
        self._patches.uninstall()
        try:
            self.hook.uninstall()
        except Exception:  # the script may have reset Triton's hooks itself: the recording stops anyway
            pass

    def _recording(
        self, original: Callable[..., Any], launched: Callable[[tuple[Any, ...]], Any]
    ) -> Callable[..., Any]:
        """`original`, recording each outermost call on a thread as a launch of `launched(args)`."""
        recorder = self
        local = self._depth
        hook = self.hook

        def call(*args: Any, **kwargs: Any) -> Any:
            if recorder.paused or getattr(local, "value", False):
                # an autotuner's benchmark runs nest inside the user's launch: one record, the user's
                return original(*args, **kwargs)
            local.value = True
            target = launched(args)
            # a @triton.jit(launch_metadata=fn) kernel: the launch hook fills this launch's metrics
            wants = getattr(target, "launch_metadata", None) is not None
            if wants:
                local.metrics = {}
                hook.install()
            start = time.perf_counter_ns()
            try:
                return original(*args, **kwargs)
            finally:
                end = time.perf_counter_ns()
                local.value = False
                metrics: dict[str, float] | None = None
                if wants:
                    metrics, local.metrics = local.metrics or None, None
                frame = recorder.interner.path_id(sys._getframe(1))
                recorder._done.append((threading.get_native_id(), start, end, frame, target, metrics))

        call.__wrapped__ = original  # type: ignore[attr-defined]
        return call


# Keys Triton itself puts in a launch's metadata (its kernel's name, CUfunction handle and stream): not the
# user's numbers, though two of them are ints
_TRITON_OWN_KEYS = frozenset({"name", "function", "stream"})


def launch_numbers(metadata: Any) -> dict[str, float]:
    """The numbers a launch's metadata holds: a Triton LazyDict (its `get()` runs the kernel's
    launch_metadata function) or a plain dict; Triton's own keys and values that are not real numbers
    (strings, bools, tensors) are left out."""
    data = metadata.get() if hasattr(metadata, "extras") or not isinstance(metadata, dict) else metadata
    if not isinstance(data, dict):
        return {}
    return {
        str(key): float(value)
        for key, value in data.items()
        if key not in _TRITON_OWN_KEYS and isinstance(value, numbers.Real) and not isinstance(value, bool)
    }


class LaunchMetadataHook:
    """Triton's launch-enter hook while installed: puts the numbers of each launch's metadata into the
    metrics the launching thread's `local` waits with (nothing when none waits). Triton 3.5+ keeps a
    chain of hooks (`triton.knobs.runtime.launch_enter_hook.add`); 3.2 to 3.4 one hook in
    `triton.knobs.runtime`, and older ones in `triton.compiler.CompiledKernel`: there the hook found is
    called after ours and put back at uninstall. The user's launch_metadata function raising must not
    fail the launch (Triton fails it when a hook raises): the first such error is kept in `error`."""

    def __init__(self, local: threading.local) -> None:
        self.local = local
        self.error = ""
        self._installed = False
        self._uninstall: Callable[[], None] | None = None
        self._previous: Any = None

    def install(self) -> None:
        if self._installed:
            return
        self._installed = True
        try:
            knobs = importlib.import_module("triton.knobs")
            owner: Any = knobs.runtime
        except (ImportError, AttributeError):
            try:
                owner = importlib.import_module("triton.compiler").CompiledKernel
            except (ImportError, AttributeError):
                return
        current: Any = getattr(owner, "launch_enter_hook", None)
        if current is self:
            return
        if callable(getattr(current, "add", None)) and callable(getattr(current, "remove", None)):
            current.add(self)
            self._uninstall = lambda: current.remove(self)
            return
        self._previous = current

        def put_back() -> None:
            if getattr(owner, "launch_enter_hook", None) is self:
                owner.launch_enter_hook = self._previous

        owner.launch_enter_hook = self
        self._uninstall = put_back

    def uninstall(self) -> None:
        if self._uninstall is not None:
            self._uninstall()
        self._uninstall = None
        self._installed = False

    def __call__(self, metadata: Any) -> None:
        waiting = getattr(self.local, "metrics", None)
        if waiting is not None:
            try:
                waiting.update(launch_numbers(metadata))
            except Exception as exc:  # the user's launch_metadata function: the launch goes on without it
                if not self.error:
                    self.error = f"{exc.__class__.__name__}: {str(exc)[:200]}"
        previous = self._previous
        if previous is not None:
            previous(metadata)


def _always(value: Any) -> Callable[[tuple[Any, ...]], Any]:
    return lambda args: value


def kernel_name(fn: Any) -> str:
    """What was launched, by name: a @triton.jit function (a JITFunction wraps the Python function as
    `fn`), or an extension's function."""
    name = getattr(fn, "__name__", None) or getattr(getattr(fn, "fn", None), "__name__", None)
    return str(name or type(fn).__name__)
