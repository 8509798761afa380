"""Which source files are the user's own code, and the text of their lines (shared by capture, import
and analyses; no torch here)."""

from __future__ import annotations

import linecache
import os

# Inductor's generated code lives in /tmp/torchinductor_<user>/: generated, not written by the user.
_NOT_USER_MARKERS = ("/site-packages/", "/dist-packages/", "/lib/python3", "/torch/", "/torchinductor_")
_TENPROF_DIR = os.path.dirname(os.path.abspath(__file__)).replace("\\", "/") + "/"


def is_user_file(path: str) -> bool:
    """True for the user's code: not the standard library, an installed package, torch or tenprof."""
    if not path or path.startswith("<"):
        return False
    normalized = path.replace("\\", "/")
    if not normalized.startswith("/"):  # Kineto's with_stack names files relative to site-packages
        normalized = "/" + normalized
    if normalized.startswith(_TENPROF_DIR):
        return False
    return not any(marker in normalized for marker in _NOT_USER_MARKERS)


def raised_at(exc: BaseException) -> str:
    """The innermost frame of an exception's traceback that is the user's own code, as file:line ('' when
    none is)."""
    import traceback

    best = ""
    for frame in traceback.extract_tb(exc.__traceback__):
        if is_user_file(frame.filename):
            best = f"{frame.filename}:{frame.lineno}"
    return best


def line_text(file: str, line: int, as_of: float | None = None) -> str | None:
    """The line's text, stripped, as the file reads now; None where it cannot be read, or where the file
    changed after `as_of` (the recording's time, epoch seconds: a trace imported later may name a file
    edited since, whose text at that number is another line)."""
    if not file or line < 1 or not os.path.isfile(file):
        return None
    if as_of is not None and os.path.getmtime(file) > as_of + 1:
        return None
    linecache.checkcache(file)  # a long-lived process may have cached an older version of the file
    return linecache.getline(file, line).strip() or None
