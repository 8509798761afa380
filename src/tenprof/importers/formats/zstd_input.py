"""Read a zstd-compressed trace as a stream, with whichever zstd library is installed.

zstd is optional: Python 3.14's `compression.zstd`, else the `zstandard` package. Without either,
`open_zstd` raises one TraceFormatError saying what to install. `ZSTD_ERRORS` are the exceptions a
corrupt or truncated stream raises (empty when no library is present).
"""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType
from typing import IO, Any, cast

from tenprof.errors import TraceFormatError

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


def _library() -> ModuleType | None:
    for name in ("compression.zstd", "zstandard"):
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    return None


_LIB = _library()
ZSTD_ERRORS: tuple[type[BaseException], ...] = (
    (cast(type[BaseException], _LIB.ZstdError),) if _LIB is not None and hasattr(_LIB, "ZstdError") else ()
)


def open_zstd(path: Path) -> IO[bytes]:
    """A binary stream of the decompressed bytes of `path`."""
    if _LIB is None:
        raise TraceFormatError(
            f"{path} is zstd-compressed; install the zstandard package (pip install zstandard) or decompress "
            "it first (zstd -d)"
        )
    if _LIB.__name__ == "compression.zstd":
        return cast(IO[bytes], _LIB.open(path, "rb"))
    raw: Any = path.open("rb")
    # a file of several frames (pzstd's, or files joined) is one stream
    return cast(IO[bytes], _LIB.ZstdDecompressor().stream_reader(raw, closefd=True, read_across_frames=True))
