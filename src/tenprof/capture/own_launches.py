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
"""

from __future__ import annotations

import ctypes
import sys
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from types import ModuleType
from typing import Any

from tenprof.capture.after_import import AfterImport
from tenprof.capture.callsites import FrameInterner
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
    """Records the script's own launches into `records` (flattened thread, start, end, frame) and
    `names`: Triton's `JITFunction.run`, and the functions of CUDA extensions built while it records."""

    def __init__(self, interner: FrameInterner) -> None:
        self.interner = interner
        self.records: list[int] = []
        self._launched: list[Any] = []  # per record: what was launched (its name is read at the end)
        self.paused = False
        self._depth = threading.local()
        self._patches = OwnLaunchPatches(self._recording)

    @property
    def names(self) -> list[str]:
        return [kernel_name(x) for x in self._launched]

    def start(self) -> None:
        self._patches.install()

    def stop(self) -> None:
        self.paused = True  # extension and library functions found meanwhile keep their (now idle) wrappers
        self._patches.uninstall()

    def _recording(
        self, original: Callable[..., Any], launched: Callable[[tuple[Any, ...]], Any]
    ) -> Callable[..., Any]:
        """`original`, recording each outermost call on a thread as a launch of `launched(args)`."""
        recorder = self

        def call(*args: Any, **kwargs: Any) -> Any:
            if recorder.paused or getattr(recorder._depth, "value", False):
                # an autotuner's benchmark runs nest inside the user's launch: one record, the user's
                return original(*args, **kwargs)
            recorder._depth.value = True
            start = time.perf_counter_ns()
            try:
                return original(*args, **kwargs)
            finally:
                end = time.perf_counter_ns()
                recorder._depth.value = False
                frame = recorder.interner.path_id(sys._getframe(1))
                recorder.records.extend((threading.get_native_id(), start, end, frame))
                recorder._launched.append(launched(args))

        call.__wrapped__ = original  # type: ignore[attr-defined]
        return call


def _always(value: Any) -> Callable[[tuple[Any, ...]], Any]:
    return lambda args: value


def kernel_name(fn: Any) -> str:
    """What was launched, by name: a @triton.jit function (a JITFunction wraps the Python function as
    `fn`), or an extension's function."""
    name = getattr(fn, "__name__", None) or getattr(getattr(fn, "fn", None), "__name__", None)
    return str(name or type(fn).__name__)
