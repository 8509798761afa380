"""The text of the source lines a stalls pass's SASS maps to -> `source_lines`, read where the pass is
built (the GPU machine, or wherever `tenprof import-ncu` runs), so that the report quotes a hot
instruction's line from the profile alone, on any machine.

Every (file, line) the line info names gets a row: Triton's own library inlined into a kernel, torch's
helpers, the user's `@triton.jit` file, and Inductor's generated files too (their text is also in the
kept wrappers when `tenprof run` recorded them, but not in a report imported with `import-ncu`). Only
Python sources are read, as the report always did; a file that cannot be read here gives '' (a relative
name is read from the current directory, the one the program ran in).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pyarrow as pa

from tenprof.store.schema import SOURCE_LINES


def _file_lines(file: str) -> list[str]:
    if not file.endswith(".py"):
        return []
    try:
        return Path(file).read_text(errors="replace").split("\n")
    except OSError:  # gone, unreadable, or a folder
        return []


def build_source_lines(places: Iterable[tuple[str, int]]) -> pa.Table:
    """One row per distinct (file, line) of `places` (files '' and lines < 1 left out), sorted, with the
    line's text as this machine has it."""
    wanted = sorted({(f, n) for f, n in places if f and n > 0})
    texts: dict[str, list[str]] = {}
    text: list[str] = []
    for file, number in wanted:
        if file not in texts:
            texts[file] = _file_lines(file)
        lines = texts[file]
        text.append(lines[number - 1] if number <= len(lines) else "")
    return pa.table({"file": [f for f, _ in wanted], "line": [n for _, n in wanted], "text": text}, schema=SOURCE_LINES)
