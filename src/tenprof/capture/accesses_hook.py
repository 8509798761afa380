"""The access pass inside the profiled process: tell the preloaded sanitizer tool which op is running.

The tool (tenprof/native/access_tool.cpp) is already loaded by LD_PRELOAD when Python starts; loading
the same path again with ctypes gives its handle. The tensors recorder calls `enter(seq, record)` before
each op and `leave(seq)` after it, so every kernel launch is tagged with the op instance it belongs to
(and, outside ops, with the last op that started, which is what the address lookup needs); `record`
False lets the op's launches run without recording (an op like one recorded before).
"""

from __future__ import annotations

import ctypes
from pathlib import Path


class AccessHookError(RuntimeError):
    pass


class AccessHook:
    def __init__(self, library: str, log_dir: Path) -> None:
        try:
            lib = ctypes.CDLL(library)
        except OSError as exc:
            raise AccessHookError(f"the access tool {library} could not be loaded: {exc}") from None
        if not lib.tenprof_access_active():
            raise AccessHookError("the access tool did not start: " + _first_problem(log_dir))
        lib.tenprof_access_set_op.argtypes = (ctypes.c_int64, ctypes.c_int32, ctypes.c_int32)
        lib.tenprof_access_set_op.restype = None
        self._set_op = lib.tenprof_access_set_op
        self._flush = lib.tenprof_access_flush

    def enter(self, seq: int, record: bool = True) -> None:
        self._set_op(seq, 1, 1 if record else 0)

    def leave(self, seq: int) -> None:
        self._set_op(seq, 0, 1)

    def flush(self) -> None:
        self._flush()


def _first_problem(log_dir: Path) -> str:
    for log in sorted(log_dir.glob("access-log-*.txt")):
        lines = [line for line in log.read_text(errors="replace").splitlines() if line.strip()]
        if lines:
            return lines[0]
    return "it was not preloaded (LD_PRELOAD) or found no CUDA"
