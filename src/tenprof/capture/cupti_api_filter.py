"""Fewer CUDA API records from CUPTI while the native capture's GPU-activity session runs (experimental,
`TENPROF_CUPTI_API_FILTER=1`).

Kineto's CUDA activity records every runtime and driver API call the script makes (less three it leaves
out itself). tenprof's analyses read the launches (to join each kernel to its op and line), copies and
memsets, synchronizing calls, allocations and frees, graph launches and module loads, and every other call
as a part of the step's host time. The frequent queries (attributes, the last error, whether a stream is
capturing, occupancy, the current device or context) take about a microsecond each and are read by nothing
else. CUPTI can stop recording single calls (`cuptiActivityEnableRuntimeApi` /
`cuptiActivityEnableDriverApi`, CUDA 12.5 on): this module turns off the calls `left_out` names, after the
session has turned the API records on, and turns them back on after it stops, so a profiler the script
starts later records all. A call it does not know keeps its records (a costly one stays visible).

Names come from CUPTI itself (`cuptiGetCallbackName`), so no header or table of callback ids is needed;
CUPTI is the copy the process already loaded (torch's), found in /proc/self/maps. Without it, or without
the per-call switches, nothing is changed and `apply` says why.
"""

from __future__ import annotations

import ctypes
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ENV_VAR = "TENPROF_CUPTI_API_FILTER"

# The queries left out, by their names without version suffixes (cudaGetDevice_v3020 -> cudaGetDevice),
# besides every name holding "Occupancy" or ending in "GetAttribute(s)".
LEFT_OUT = frozenset({
    "cudaGetDevice", "cudaGetDeviceCount", "cudaGetLastError", "cudaPeekAtLastError", "cudaStreamIsCapturing",
    "cudaStreamGetCaptureInfo", "cudaGetErrorString", "cudaGetErrorName", "cudaRuntimeGetVersion",
    "cudaDriverGetVersion", "cudaGetDriverEntryPoint", "cudaStreamGetPriority", "cudaDeviceGetStreamPriorityRange",
    "cuCtxGetCurrent", "cuCtxGetDevice", "cuDeviceGet", "cuDriverGetVersion", "cuGetProcAddress",
    "cuDevicePrimaryCtxGetState", "cuStreamIsCapturing", "cuStreamGetCaptureInfo", "cuGetErrorString",
    "cuGetErrorName", "cuCtxGetStreamPriorityRange",
})  # fmt: skip
_SUFFIX = re.compile(r"(_v\d+|_ptsz|_ptds)+$")

_DRIVER_DOMAIN = 1  # CUPTI_CB_DOMAIN_DRIVER_API
_RUNTIME_DOMAIN = 2  # CUPTI_CB_DOMAIN_RUNTIME_API
_MAX_CALLBACK_ID = 4096  # past the last id of either domain (CUDA 13: about 800 driver, 500 runtime)


def left_out(name: str) -> bool:
    """Whether the call of this name loses its API records (a frequent query no analysis reads)."""
    base = _SUFFIX.sub("", name)
    return base in LEFT_OUT or "Occupancy" in base or base.endswith(("GetAttribute", "GetAttributes"))


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


Switch = Callable[[int, int], int]  # (callback id, enable) -> CUptiResult


@dataclass
class ApiFilter:
    """The calls turned off (by domain), to turn back on; `reason` says why nothing was."""

    turned_off: dict[int, list[int]] = field(default_factory=dict)
    reason: str = ""
    _switches: dict[int, Switch] = field(default_factory=dict)

    def restore(self) -> None:
        """Every call turned off records again."""
        for domain, ids in self.turned_off.items():
            for cbid in ids:
                self._switches[domain](cbid, 1)
        self.turned_off = {}


def _switches(lib: ctypes.CDLL) -> dict[int, Switch]:
    """CUPTI's per-call switch of each domain (AttributeError where this CUPTI has none)."""
    switches: dict[int, Switch] = {}
    for domain, func in (
        (_RUNTIME_DOMAIN, lib.cuptiActivityEnableRuntimeApi),
        (_DRIVER_DOMAIN, lib.cuptiActivityEnableDriverApi),
    ):
        func.argtypes = [ctypes.c_uint32, ctypes.c_uint8]
        func.restype = ctypes.c_int
        switches[domain] = func
    return switches


def apply() -> ApiFilter:
    """Turn off the API records of every call `left_out` names; call after the session turned them on."""
    path = loaded_cupti()
    if path is None:
        return ApiFilter(reason="CUPTI is not loaded in this process")
    try:
        lib = ctypes.CDLL(path)
        name_of = lib.cuptiGetCallbackName
        switches = _switches(lib)
    except (OSError, AttributeError) as exc:
        return ApiFilter(reason=f"CUPTI has no per-call switches here ({exc})")
    name_of.argtypes = [ctypes.c_int, ctypes.c_uint32, ctypes.POINTER(ctypes.c_char_p)]
    name_of.restype = ctypes.c_int
    result = ApiFilter(_switches=switches)
    for domain, switch in switches.items():
        off: list[int] = []
        for cbid in range(1, _MAX_CALLBACK_ID):
            name = ctypes.c_char_p()
            if name_of(domain, cbid, ctypes.byref(name)) != 0 or not name.value:
                continue
            if left_out(name.value.decode(errors="replace")) and switch(cbid, 0) == 0:
                off.append(cbid)
        result.turned_off[domain] = off
    return result
