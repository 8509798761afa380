"""tenprof's own CUPTI client: build it, load it, record GPU activity with it, write what it recorded as the
GPU side of a Kineto trace. torch-free.

`tenprof/native/cupti_client.cpp` enables CUPTI's activity records for kernels, copies and memsets, and
records the CUDA calls the analyses read (launches, copies, memsets, synchronizations, allocations, graphs,
module loads) through CUPTI's callback API, timing each itself (TENPROF_CUPTI_API=records: CUPTI's activity
records of every runtime and driver call instead, as Kineto records them); no CPU-side profiler. It is
what `tenprof run --capture native-cupti` (experimental) records GPU activity with, in place of a CUDA-only
torch.profiler session per recorded window. It is built on first use with the machine's C++ compiler against
the CUPTI headers of a CUDA toolkit (CUDA_HOME, /usr/local/cuda) or of the CUPTI wheel torch depends on, into
a cache folder named by a hash of the source, the headers and the compiler. At run time it uses the
libcupti already in the process (torch's), else the one beside the headers, and refuses one whose API version
is not its headers' (`CuptiClientUnavailable`, one line naming why).

Its timestamps are CLOCK_MONOTONIC's (Python's perf_counter_ns on Linux): the GPU side needs no clock
alignment with the native op records. `gpu_trace` writes the records as Kineto writes them (categories,
names, args), so the native capture's merge and the importer take them unchanged.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import re
import sys
from pathlib import Path
from typing import Any

import numpy as np

from tenprof.capture import native_build
from tenprof.errors import TenprofError

SOURCE = Path(__file__).resolve().parents[1] / "native" / "cupti_client.cpp"
LIBRARY_NAME = "libtenprof_cupti.so"
# How the CUDA calls are recorded (cupti_client.cpp's ApiMode): CUPTI's activity records of every runtime
# and driver call, its callback API on the calls the analyses read alone, or none (kernels, copies and
# memsets alone: for measuring what the calls cost; launches then name no op)
API_MODE_VAR = "TENPROF_CUPTI_API"
API_MODES = {"records": 0, "callbacks": 1, "none": 2}
DEFAULT_API_MODE = "callbacks"
TARGET_DIR = Path("targets") / "x86_64-linux"  # a CUDA toolkit's per-platform folder

# CUPTI's activity kinds (cupti_activity.h, CUpti_ActivityKind)
KIND_MEMCPY = 1
KIND_MEMSET = 2
KIND_KERNEL = 3
KIND_DRIVER = 4
KIND_RUNTIME = 5
KIND_CONCURRENT_KERNEL = 10

# cupti_client.cpp's Record, field for field
RECORD = np.dtype(
    [
        ("kind", "<i4"), ("name", "<i4"), ("start", "<u8"), ("end", "<u8"), ("device", "<i4"), ("stream", "<i4"),
        ("correlation", "<u4"), ("thread", "<u4"), ("grid", "<i4", (3,)), ("block", "<i4", (3,)),
        ("registers", "<i4"), ("shared_memory", "<i4"), ("bytes", "<i8"), ("cbid", "<i4"), ("context", "<i4"),
    ]
)  # fmt: skip


class CuptiClientUnavailable(TenprofError):
    """tenprof's CUPTI client cannot be built or loaded here (no headers, no libcupti, another version)."""


def cache_root() -> Path:
    return native_build.cache_root("cupti")


def _cuda_homes() -> list[Path]:
    homes = [os.environ.get("CUDA_HOME", ""), os.environ.get("CUDA_PATH", ""), "/usr/local/cuda"]
    return [Path(h) for h in homes if h]


def _wheel_dirs() -> list[Path]:
    """The `nvidia/*` folders of the CUPTI wheels beside this Python's packages (torch's dependencies)."""
    found = []
    for site in sys.path:
        nvidia = Path(site) / "nvidia"
        if nvidia.is_dir():
            found += sorted(p for p in nvidia.iterdir() if p.is_dir())
    return found


def find_headers() -> Path:
    """The folder holding cupti_activity.h (and cupti.h), with cuda.h found beside it or in a CUDA home."""
    candidates = []
    for home in _cuda_homes():
        candidates += [home / "include", home / "extras" / "CUPTI" / "include", home / TARGET_DIR / "include"]
    candidates += [d / "include" for d in _wheel_dirs()]
    for folder in candidates:
        if (folder / "cupti_activity.h").is_file() and (folder / "cupti.h").is_file():
            return folder
    raise CuptiClientUnavailable(
        "its CUPTI headers (cupti_activity.h) were not found: install the CUDA toolkit's CUPTI or set CUDA_HOME"
    )


def include_dirs(headers: Path) -> list[Path]:
    """`headers` and the folders that hold cuda.h, which cupti.h includes."""
    dirs = [headers]
    homes = _cuda_homes()
    for folder in [headers, *(h / "include" for h in homes), *(h / TARGET_DIR / "include" for h in homes)]:
        if (folder / "cuda.h").is_file() and folder not in dirs:
            dirs.append(folder)
    return dirs


def newest_records(headers: Path) -> dict[str, str]:
    """The newest kernel, copy and memset record types the headers declare (the layout this CUPTI writes)."""
    text = (headers / "cupti_activity.h").read_text(errors="replace")
    chosen = {}
    for macro, base in (("TP_KERNEL_RECORD", "Kernel"), ("TP_MEMCPY_RECORD", "Memcpy"), ("TP_MEMSET_RECORD", "Memset")):
        versions = [int(v or 1) for v in re.findall(rf"\}}\s*CUpti_Activity{base}(\d*)\s*;", text)]
        if not versions:
            raise CuptiClientUnavailable(f"its CUPTI headers declare no CUpti_Activity{base} record ({headers})")
        newest = max(versions)
        chosen[macro] = f"CUpti_Activity{base}{newest if newest > 1 else ''}"
    return chosen


def libcupti_path(headers: Path) -> str:
    """The libcupti to load when the process holds none yet: the wheel's (torch's), else the toolkit's."""
    folders = [d / "lib" for d in _wheel_dirs()]
    folders += [headers.parent / "lib64", headers.parent / "lib"]
    for home in _cuda_homes():
        folders += [home / "extras" / "CUPTI" / "lib64", home / "lib64", home / TARGET_DIR / "lib"]
    for folder in folders:
        if folder.is_dir():
            libs = sorted(folder.glob("libcupti.so*"))
            if libs:
                return str(libs[0])
    return ""


def find_compiler() -> str:
    return native_build.find_compiler(CuptiClientUnavailable)


def build_command(compiler: str, headers: Path, out: Path) -> list[str]:
    defines = [f"-D{k}={v}" for k, v in newest_records(headers).items()]
    includes = [arg for d in include_dirs(headers) for arg in ("-I", str(d))]
    return [compiler, "-O2", "-DNDEBUG", "-std=c++17", "-shared", "-fPIC", "-w", *defines, *includes,
            "-o", str(out), str(SOURCE), "-ldl"]  # fmt: skip


def _cache_key(compiler: str, headers: Path) -> str:
    digest = hashlib.sha256(SOURCE.read_bytes())
    for name in ("cupti_activity.h", "cupti_version.h"):
        if (headers / name).is_file():
            digest.update((headers / name).read_bytes())
    digest.update(f"{headers} {compiler}".encode())
    return digest.hexdigest()[:16]


def build_library(cache: Path | None = None, headers: Path | None = None) -> Path:
    """The built client, from the cache or built now (a few seconds the first time); `headers`: the CUPTI
    headers' folder (find_headers where not given)."""
    headers = headers or find_headers()
    compiler = find_compiler()
    target = (cache or cache_root()) / _cache_key(compiler, headers)
    library = target / LIBRARY_NAME
    if not library.is_file():
        native_build.build_into(
            target,
            lambda folder: [build_command(compiler, headers, folder / LIBRARY_NAME)],
            CuptiClientUnavailable,
            "its build",
        )
    return library


class CuptiClient:
    """The loaded client: `enable(True)` while a window records, `enable(False)` between; `collect()` hands
    every record over (after the GPU drained); `close()` gives CUPTI back."""

    def __init__(self, library: Path, libcupti: str = "") -> None:
        try:
            lib = ctypes.CDLL(str(library))
        except OSError as exc:
            raise CuptiClientUnavailable(f"it could not be loaded ({exc})") from None
        lib.tenprof_cupti_error.restype = ctypes.c_char_p
        lib.tenprof_cupti_open.argtypes = [ctypes.c_char_p]
        lib.tenprof_cupti_enable.argtypes = [ctypes.c_int]
        lib.tenprof_cupti_version.restype = ctypes.c_uint32
        for name in ("tenprof_cupti_drain", "tenprof_cupti_record_size", "tenprof_cupti_names_size"):
            getattr(lib, name).restype = ctypes.c_int64
        lib.tenprof_cupti_launch_digest.restype = ctypes.c_uint64
        lib.tenprof_cupti_records.restype = ctypes.c_void_p
        lib.tenprof_cupti_names.restype = ctypes.c_void_p
        if lib.tenprof_cupti_record_size() != RECORD.itemsize:
            raise CuptiClientUnavailable("its record layout is not the one cupti_client.py reads")
        self._lib = lib
        if lib.tenprof_cupti_open(libcupti.encode()) != 0:
            raise CuptiClientUnavailable(self._error())
        self.api_mode = os.environ.get(API_MODE_VAR, "") or DEFAULT_API_MODE
        if self.api_mode not in API_MODES:
            raise CuptiClientUnavailable(f"{API_MODE_VAR}={self.api_mode!r}: choose one of {', '.join(API_MODES)}")
        lib.tenprof_cupti_api_mode(API_MODES[self.api_mode])
        self.version = int(lib.tenprof_cupti_version())
        self.closed = False
        self._records: list[np.ndarray] = []
        self._attach = 0  # how many detaches came before: the attach the records taken now belong to
        self._attach_of: list[int] = []  # per part of _records
        self._names: list[str] = []

    @classmethod
    def load(cls) -> CuptiClient:
        headers = find_headers()
        return cls(build_library(headers=headers), libcupti_path(headers))

    def _error(self) -> str:
        return (self._lib.tenprof_cupti_error() or b"").decode(errors="replace")

    def enable(self, on: bool) -> None:
        if self._lib.tenprof_cupti_enable(int(on)) != 0:
            raise CuptiClientUnavailable(self._error())

    def launch_digest(self) -> int:
        """An order-free digest of the calls that launched GPU work since the last call (each call and its
        kernel's name), reset: what tells a step whose launches changed (TENPROF_OPS=sampled). 0 where none
        launched, or where the calls come as activity records (TENPROF_CUPTI_API=records), too late to tell."""
        return int(self._lib.tenprof_cupti_launch_digest())

    def collect(self) -> None:
        """Hand over and decode every finished record (call once the GPU ran what it was given)."""
        self._lib.tenprof_cupti_flush()
        self._take()

    def close(self) -> None:
        """Recording off, the last records collected, CUPTI finalized (free for another profiler)."""
        self._lib.tenprof_cupti_close()
        self._take()
        self.closed = True

    def detach(self) -> None:
        """As `close`, but `enable(True)` attaches CUPTI again (its callbacks and buffers registered anew):
        for steps that must run as if no profiler were there, where a client attached with nothing enabled
        may still cost the program (benchmarks/cupti_attach_probe.py measures both; the capture detaches
        for its un-profiled steps under TENPROF_CUPTI_DETACH=1, experimental). Call it with the GPU drained
        and no other thread inside a CUDA call."""
        self._lib.tenprof_cupti_close()
        self._take()
        self._attach += 1

    def _take(self) -> None:
        count = int(self._lib.tenprof_cupti_drain())
        if count:
            raw = ctypes.string_at(self._lib.tenprof_cupti_records(), count * RECORD.itemsize)
            records = np.frombuffer(raw, dtype=RECORD).copy()
            size = int(self._lib.tenprof_cupti_names_size())
            names = ctypes.string_at(self._lib.tenprof_cupti_names(), size).decode(errors="replace").split("\0")[:-1]
            # name ids are the client's table's, which is cleared with the records: move them onto ours
            base = len(self._names)
            records["name"] += base
            self._names += names
            self._records.append(records)
            self._attach_of.append(self._attach)
        self._lib.tenprof_cupti_clear()

    def records(self) -> tuple[np.ndarray, list[str]]:
        """Every record collected so far (less the driver's calls made inside a runtime call: `outer_calls`),
        and the names their `name` field indexes."""
        if not self._records:
            return np.zeros(0, dtype=RECORD), list(self._names)
        return outer_calls(apart_by_attach(self._records, self._attach_of)), list(self._names)


def apart_by_attach(parts: list[np.ndarray], attaches: list[int]) -> np.ndarray:
    """The parts as one array, the correlation ids of each attach after the first moved past those of the
    attaches before it: CUPTI attached again after a finalize (`CuptiClient.detach`) may number its calls
    from the start again, and each kernel finds its launch by that id."""
    moved, base, current, highest = [], 0, attaches[0] if attaches else 0, 0
    for part, attach in zip(parts, attaches, strict=True):
        if attach != current:
            base, current = highest + 1, attach
        part = part.copy()
        part["correlation"] += np.uint32(base)
        highest = max(highest, int(part["correlation"].max()) if len(part) else 0)
        moved.append(part)
    return np.concatenate(moved) if moved else np.zeros(0, dtype=RECORD)


def outer_calls(records: np.ndarray) -> np.ndarray:
    """The records less each driver call that lies inside a runtime call on its thread: the runtime's own
    calls into the driver, which CUPTI's callback API may report as calls of their own (its activity records
    name only the calls the program made). A program's own driver calls (Triton's launches) are never inside
    a runtime call."""
    kind = records["kind"]
    runtime, driver = kind == KIND_RUNTIME, kind == KIND_DRIVER
    if not runtime.any() or not driver.any():
        return records
    inside = np.zeros(len(records), dtype=bool)
    rt = records[runtime]
    for thread in np.unique(records["thread"][driver]):
        mine = rt[rt["thread"] == thread]
        if not len(mine):
            continue
        order = np.argsort(mine["start"], kind="stable")
        starts, ends = mine["start"][order], np.maximum.accumulate(mine["end"][order])
        candidates = np.flatnonzero(driver & (records["thread"] == thread))
        k = np.searchsorted(starts, records["start"][candidates], side="right") - 1
        held = k >= 0
        inside[candidates[held]] = records["end"][candidates[held]] <= ends[k[held]]
    return records[~inside]


def gpu_trace(records: np.ndarray, names: list[str], pid: int, devices: list[dict[str, Any]]) -> dict[str, Any]:
    """The records as a GPU-only Kineto trace on the perf clock (`baseTimeNanoseconds` 0): kernels, copies
    and memsets on (device, stream), runtime and driver calls on CUPTI's thread id, each with its
    correlation id; `devices`: the trace's deviceProperties."""
    events: list[dict[str, Any]] = []
    for r in records.tolist():
        kind, name_id, start, end, device, stream, corr, thread, grid, block, regs, smem, size, cbid, context = r
        event: dict[str, Any] = {"ph": "X", "cat": "", "name": names[name_id], "pid": device, "tid": stream,
                                 "ts": start / 1000, "dur": (end - start) / 1000}  # fmt: skip
        on_gpu = {"device": device, "context": context, "stream": stream, "correlation": corr}
        if kind in (KIND_KERNEL, KIND_CONCURRENT_KERNEL):
            shape = {"grid": grid.tolist(), "block": block.tolist()}  # subarrays: numpy's until made lists
            event.update(cat="kernel", args={**on_gpu, "registers per thread": regs, "shared memory": smem, **shape})
        elif kind in (KIND_MEMCPY, KIND_MEMSET):
            event.update(cat="gpu_memcpy" if kind == KIND_MEMCPY else "gpu_memset", args={**on_gpu, "bytes": size})
        elif kind in (KIND_RUNTIME, KIND_DRIVER):
            event.update(cat="cuda_runtime" if kind == KIND_RUNTIME else "cuda_driver", pid=pid, tid=thread)
            event["args"] = {"cbid": cbid, "correlation": corr}
        else:
            continue
        events.append(event)
    return {"schemaVersion": 1, "deviceProperties": devices, "baseTimeNanoseconds": 0, "traceEvents": events}
