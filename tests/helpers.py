"""Small helpers that unit and integration tests of one subject share (tests/unit, tests/integration)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tenprof.importers.timeline_import import import_trace
from tests.conftest import DATA

MATMUL64_TRACE = DATA / "matmul64" / "timeline" / "raw" / "kineto_trace.json.gz"

# A stand-in for triton.jit: `kernel[grid](...)` calls `run`, as Triton's JITFunction does.
FAKE_JIT = textwrap.dedent(
    """
    class JITFunction:
        def __init__(self, fn):
            self.fn = fn
            self.__name__ = fn.__name__

        def __getitem__(self, grid):
            return lambda *args, **kwargs: self.run(*args, grid=grid, **kwargs)

        def run(self, *args, grid=None, **kwargs):
            return self.fn(*args, **kwargs)


    def jit(fn):
        return JITFunction(fn)
    """
)


def imported_profile(path: Path) -> Path:
    """A profile made at `path` by importing the matmul64 recording's trace (no capture)."""
    import_trace(MATMUL64_TRACE, path, force=False)
    return path


def snapshot(path: Path) -> dict[str, bytes]:
    """Every file under `path`, by relative name, with its bytes."""
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def siblings(path: Path) -> list[str]:
    """The names beside `path` in its folder."""
    return sorted(p.name for p in path.parent.iterdir() if p.name != path.name)


def write_file(path: Path, content: bytes) -> Path:
    path.write_bytes(content)
    return path


def error_lines(err: str) -> list[str]:
    """stderr's lines, each checked to be tenprof's error line and none a traceback's."""
    lines = err.strip().splitlines()
    assert lines and "Traceback" not in err, err
    assert all(line.startswith("tenprof: error: ") for line in lines), lines
    return lines


def one_error_line(err: str, *names: str) -> str:
    """The one line on stderr, checked to be tenprof's error line naming each of `names`."""
    lines = err.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("tenprof: error:") and all(n in lines[0] for n in names), lines[0]
    return lines[0]
