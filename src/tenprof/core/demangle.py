"""C++ symbol names as people read them: `_ZN2at6native29vectorized_elementwise_kernelILi4E...` ->
`void at::native::vectorized_elementwise_kernel<4, ...>(int, ...)`.

Kineto demangles the kernel names it writes, but not everywhere: 22 of 132 public traces held mangled names,
all of a Blackwell laptop's kernels among them, some of ROCm's, and findings quoted them as they were. The
C++ runtime's own demangler (`__cxa_demangle`, in libstdc++, the library Kineto's demangling comes from too)
reads them, through ctypes; where it is not there (no libstdc++) or a name does not demangle, the name stays
as it was. Torch-free.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from functools import cache
from typing import Any

MANGLED_PREFIX = "_Z"


@cache
def _runtime() -> tuple[Any, Any] | None:
    """The runtime's demangler and free(), or None where the C++ runtime cannot be loaded."""
    try:
        cxx = ctypes.CDLL(ctypes.util.find_library("stdc++") or "libstdc++.so.6")
        libc = ctypes.CDLL(None)
        demangle = cxx.__cxa_demangle
    except (OSError, AttributeError):
        return None
    demangle.restype = ctypes.c_void_p
    demangle.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)]
    libc.free.argtypes = [ctypes.c_void_p]
    libc.free.restype = None
    return demangle, libc.free


def demangled(name: str) -> str:
    """`name` demangled where it is a mangled C++ symbol the runtime reads; else `name` itself."""
    if not name.startswith(MANGLED_PREFIX):
        return name
    runtime = _runtime()
    if runtime is None:
        return name
    demangle, free = runtime
    status = ctypes.c_int()
    text = demangle(name.encode(), None, None, ctypes.byref(status))
    if not text or status.value != 0:
        return name
    try:
        return ctypes.string_at(text).decode(errors="replace")
    finally:
        free(text)


def demangled_all(names: list[str]) -> list[str]:
    """Each name demangled (each distinct one once: kernel names repeat over thousands of launches)."""
    if not any(name.startswith(MANGLED_PREFIX) for name in names):
        return names
    table = {name: demangled(name) for name in set(names)}
    return [table[name] for name in names]
