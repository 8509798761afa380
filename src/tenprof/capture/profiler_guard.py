"""A script's own torch.profiler while tenprof's timeline records: tenprof steps aside.

One process has one Kineto profiler. A second session started beside tenprof's took over its state, and
when either stopped the other was left pointing at freed state: the script's profiler recorded almost
nothing and the process died of a segmentation fault when tenprof stopped (seen on the CPU with torch
2.13). So while a timeline session records, every torch.profiler session that is not tenprof's own is
caught as it is prepared (`torch.autograd.profiler.profile._prepare_trace`, which both
`torch.profiler.profile` and `torch.autograd.profiler.profile` go through) and, before it starts, the
session is told to step aside (`on_foreign`): tenprof stops recording for the rest of the run, keeps what
it recorded, and says so in one line; the script's profiler then runs as it would without tenprof.

The other way round, a recording started while the script's own profiler runs is refused in one line
(`refuse_if_recording`), before anything is written.

`install(on_foreign)` puts the catch in place, `uninstall()` takes it away; `own()` is the context in which
tenprof's own sessions are prepared (not caught). `user_line()` is the first frame outside torch and
tenprof: the line of the script that started its profiler.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch

from tenprof.errors import TenprofError

_ORIGINAL_ATTR = "_tenprof_original_prepare_trace"
_state = threading.local()
_skipped_roots = (str(Path(torch.__file__).parent), str(Path(__file__).resolve().parents[1]))


def install(on_foreign: Callable[[str], None]) -> None:
    """Catch every profiler session prepared from now on outside `own()`: `on_foreign(line)` runs before it
    starts, `line` being the script's line that started it."""
    cls = torch.autograd.profiler.profile
    original = getattr(cls, _ORIGINAL_ATTR, None) or cls._prepare_trace

    def prepare_trace(self: Any) -> Any:
        if not getattr(_state, "own", False):
            on_foreign(user_line())
        return original(self)

    setattr(cls, _ORIGINAL_ATTR, original)
    cls._prepare_trace = prepare_trace  # type: ignore[method-assign]


def refuse_if_recording() -> None:
    """Raise TenprofError where a torch.profiler session records in this process already."""
    if torch.autograd.profiler._is_profiler_enabled:
        raise TenprofError(
            "a torch.profiler session is already recording in this process, and one process has one "
            "profiler: stop it before tenprof records (or import its trace: tenprof import TRACE)"
        )


def uninstall() -> None:
    cls = torch.autograd.profiler.profile
    original = getattr(cls, _ORIGINAL_ATTR, None)
    if original is not None:
        cls._prepare_trace = original  # type: ignore[method-assign]
        delattr(cls, _ORIGINAL_ATTR)


@contextmanager
def own() -> Iterator[None]:
    """tenprof's own sessions are prepared in here: not caught."""
    before = getattr(_state, "own", False)
    _state.own = True
    try:
        yield
    finally:
        _state.own = before


def user_line() -> str:
    """'file:line' of the innermost frame outside torch and tenprof ('' where there is none)."""
    frame = sys._getframe(1)
    while frame is not None:
        name = frame.f_code.co_filename
        if not name.startswith(_skipped_roots) and not name.startswith("<frozen"):
            return f"{name}:{frame.f_lineno}"
        frame = frame.f_back  # type: ignore[assignment]
    return ""
