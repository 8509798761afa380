"""Which source files are the user's own code (shared by capture and import; no torch here)."""

from __future__ import annotations

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
