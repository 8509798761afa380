"""Fewer CUDA API records from CUPTI while the native capture's GPU-activity session runs (experimental,
`TENPROF_CUPTI_API_FILTER=1`).

Kineto's CUDA activity records every runtime and driver API call the script makes (less three it leaves
out itself). tenprof's analyses read some of them: the launches (to join each kernel to its op and line),
copies and memsets, synchronizing calls, allocations and frees, graph launches and module loads. The
others (attribute queries, error checks, capture-state checks, occupancy queries) are frequent, cheap and
read by nothing but the "other CUDA calls" part of a step, where each takes a microsecond. CUPTI can stop
recording single calls (`cuptiActivityEnableRuntimeApi` / `cuptiActivityEnableDriverApi`, CUDA 12.5 on):
this module turns off every call whose name holds none of `KEPT_WORDS`, after the session has turned the
API records on, and turns them back on after it stops, so a profiler the script starts later records all.

Names come from CUPTI itself (`cuptiGetCallbackName`), so no header or table of callback ids is needed;
CUPTI is the copy the process already loaded (torch's), found in /proc/self/maps. Without it, or without
the per-call switches, nothing is changed and `apply` says why.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass, field
from pathlib import Path

ENV_VAR = "TENPROF_CUPTI_API_FILTER"

# A call is kept when its name holds one of these: what the analyses read (launches, copies, memsets,
# syncs, allocations and frees, graphs, module and library loads, the events streams wait on).
KEPT_WORDS = (
    "Launch", "Memcpy", "Memset", "Synchronize", "Malloc", "Free", "HostAlloc", "MemAlloc", "MemCreate",
    "MemMap", "MemUnmap", "MemRelease", "Graph", "Module", "Library", "LinkComplete", "EventRecord",
    "StreamWaitEvent",
)  # fmt: skip

_DRIVER_DOMAIN = 1  # CUPTI_CB_DOMAIN_DRIVER_API
_RUNTIME_DOMAIN = 2  # CUPTI_CB_DOMAIN_RUNTIME_API
_MAX_CALLBACK_ID = 4096  # past the last id of either domain (CUDA 13: about 800 driver, 500 runtime)


def kept(name: str) -> bool:
    """Whether the call of this name keeps its API records."""
    return any(word in name for word in KEPT_WORDS)


def loaded_cupti(maps: Path = Path("/proc/self/maps")) -> str | None:
    """The path of the CUPTI library this process loaded, or None."""
    try:
        text = maps.read_text()
    except OSError:
        return None
    for line in text.splitlines():
        path = line.split()[-1] if line.split() else ""
        if "/libcupti.so" in path:
            return path
    return None


@dataclass
class ApiFilter:
    """The calls turned off (by domain), to turn back on; `reason` says why nothing was."""

    turned_off: dict[int, list[int]] = field(default_factory=dict)
    names_off: list[str] = field(default_factory=list)
    reason: str = ""
    _lib: ctypes.CDLL | None = None

    def restore(self) -> None:
        """Every call turned off records again."""
        if self._lib is None:
            return
        for domain, ids in self.turned_off.items():
            switch = _switch(self._lib, domain)
            for cbid in ids:
                switch(cbid, 1)
        self.turned_off = {}


def _switch(lib: ctypes.CDLL, domain: int) -> ctypes._CFuncPtr:  # type: ignore[name-defined]
    func = lib.cuptiActivityEnableRuntimeApi if domain == _RUNTIME_DOMAIN else lib.cuptiActivityEnableDriverApi
    func.argtypes = [ctypes.c_uint32, ctypes.c_uint8]
    func.restype = ctypes.c_int
    return func


def apply() -> ApiFilter:
    """Turn off the API records of every call `kept` refuses; call after the session turned them on."""
    path = loaded_cupti()
    if path is None:
        return ApiFilter(reason="CUPTI is not loaded in this process")
    try:
        lib = ctypes.CDLL(path)
        name_of = lib.cuptiGetCallbackName
        _switch(lib, _RUNTIME_DOMAIN)
        _switch(lib, _DRIVER_DOMAIN)
    except (OSError, AttributeError) as exc:
        return ApiFilter(reason=f"CUPTI has no per-call switches here ({exc})")
    name_of.argtypes = [ctypes.c_int, ctypes.c_uint32, ctypes.POINTER(ctypes.c_char_p)]
    name_of.restype = ctypes.c_int
    result = ApiFilter(_lib=lib)
    for domain in (_RUNTIME_DOMAIN, _DRIVER_DOMAIN):
        switch = _switch(lib, domain)
        off: list[int] = []
        for cbid in range(1, _MAX_CALLBACK_ID):
            name = ctypes.c_char_p()
            if name_of(domain, cbid, ctypes.byref(name)) != 0 or not name.value:
                continue
            text = name.value.decode(errors="replace")
            if kept(text) or switch(cbid, 0) != 0:
                continue
            off.append(cbid)
            result.names_off.append(text)
        result.turned_off[domain] = off
    return result
