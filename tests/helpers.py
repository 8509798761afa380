"""Small helpers that unit and integration tests of one subject share (tests/unit, tests/integration)."""

from __future__ import annotations

import importlib.util
import os
import sys
import textwrap
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import orjson

from tenprof.analyses.findings import Finding, find_all
from tenprof.importers.timeline_import import import_trace
from tenprof.store.profile import Profile, load_profile
from tests.conftest import DATA

ROOT = Path(__file__).resolve().parents[1]

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


_RECORDINGS: dict[Path, Profile] = {}


def recording(path: Path) -> Profile:
    """The profile of a recording kept in tests/data (`path` lies inside it), loaded once per test process:
    the tests that read one recording share its Profile, so its tables are read once, and so are its
    `findings_of`. Tests must only read it (one that changes a profile copies the folder first)."""
    resolved = path.resolve()
    if DATA.resolve() not in resolved.parents:
        raise ValueError(f"{path} is not a recording in {DATA}: load it with load_profile")
    if resolved not in _RECORDINGS:
        _RECORDINGS[resolved] = load_profile(path)
    return _RECORDINGS[resolved]


_FINDINGS: weakref.WeakKeyDictionary[Profile, tuple[Finding, ...]] = weakref.WeakKeyDictionary()


def findings_of(profile: Profile) -> list[Finding]:
    """`find_all(profile)` with the default thresholds, worked out once per Profile object: a report is a
    pure function of its profile, and the tests that read the findings of one shared profile (`recording`,
    the `rebuilt` fixture, a shared capture) would otherwise each judge it again (find_all is the costliest
    analysis). A new list each call; the findings themselves must only be read. A test that patches
    what find_all reads calls find_all itself."""
    if profile not in _FINDINGS:
        _FINDINGS[profile] = tuple(find_all(profile))
    return list(_FINDINGS[profile])


def snapshot(path: Path) -> dict[str, bytes]:
    """Every file under `path`, by relative name, with its bytes."""
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def siblings(path: Path) -> list[str]:
    """The names beside `path` in its folder."""
    return sorted(p.name for p in path.parent.iterdir() if p.name != path.name)


def write_file(path: Path, content: bytes) -> Path:
    path.write_bytes(content)
    return path


def line_of(script: str, text: str) -> int:
    """The number of the first line of `script` that holds `text`."""
    return next(i + 1 for i, line in enumerate(script.splitlines()) if text in line)


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


@dataclass(frozen=True)
class Ran:
    """A tenprof command's exit code and what it printed, the script's output included: stdout and stderr as
    a terminal shows them (tenprof's own lines and its child's, in the order written)."""

    code: int
    out: str
    err: str

    @staticmethod
    def read(folder: Path) -> Ran:
        """The command `run_kept` ran into `folder`: test workers that share a recording read it here."""
        code = int((folder / "exit_code.txt").read_text())
        out, err = ((folder / name).read_bytes().decode(errors="replace") for name in ("stdout.txt", "stderr.txt"))
        return Ran(code, out, err)  # as bytes: a progress bar's \r is kept


def run_kept(argv: list[str], folder: Path) -> Ran:
    """`tenprof argv` run in this process (main), with its stdout and stderr, and those of the processes it
    starts, kept in files in `folder`: a fixture that several tests share has no capfd of its own."""
    from tenprof.cli.main import main

    folder.mkdir(parents=True, exist_ok=True)
    with _written_to(folder / "stdout.txt", 1, "stdout"), _written_to(folder / "stderr.txt", 2, "stderr"):
        code = main(argv)
    (folder / "exit_code.txt").write_text(str(code))
    return Ran.read(folder)


@contextmanager
def _written_to(path: Path, fd: int, name: str) -> Iterator[None]:
    """File descriptor `fd` (which child processes inherit) and sys.<name> both written to `path` until the
    block ends; pytest's capture of them is back after it."""
    previous = getattr(sys, name)
    previous.flush()
    saved = os.dup(fd)
    with path.open("wb") as file:
        os.dup2(file.fileno(), fd)
    stream = open(fd, "w", buffering=1, encoding="utf-8", errors="replace", closefd=False)  # noqa: SIM115
    setattr(sys, name, stream)
    try:
        yield
    finally:
        stream.flush()
        setattr(sys, name, previous)
        os.dup2(saved, fd)
        os.close(saved)


def benchmark_module(name: str) -> ModuleType:
    """A script of benchmarks/ imported as module `name` (the folder is no package): registered in
    sys.modules first, where its dataclasses look their module up."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def launch(
    name: str, ts: float, op_us: float, launch_us: float, kernel_us: float, correlation: int, ext: int | None = None
) -> list[dict[str, object]]:
    """A Kineto trace's events for one op that launches one kernel: the op at `ts` on thread 1, its
    cudaLaunchKernel 5 us in (`launch_us` long), the kernel on stream 7 starting 10 us after the call returns.
    The launch and the kernel carry External id `ext` (the correlation id by default), the op `correlation`."""
    link = correlation if ext is None else ext
    return [
        {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": op_us,
         "args": {"External id": correlation}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": ts + 5,
         "dur": launch_us, "args": {"correlation": correlation, "External id": link}},
        {"ph": "X", "cat": "kernel", "name": f"{name}_kernel", "pid": 0, "tid": 7, "ts": ts + 15 + launch_us,
         "dur": kernel_us, "args": {"correlation": correlation, "device": 0, "stream": 7, "External id": link}},
    ]  # fmt: skip


def profiler_step(number: int, ts: float, dur: float) -> dict[str, object]:
    """torch.profiler's mark of step `number` on thread 1, as a schedule writes it (times in us)."""
    return {
        "ph": "X",
        "cat": "user_annotation",
        "name": f"ProfilerStep#{number}",
        "pid": 1,
        "tid": 1,
        "ts": ts,
        "dur": dur,
    }


def imported_events(folder: Path, events: list[dict[str, object]]) -> Profile:
    """`events` written as a torch.profiler trace in `folder` and imported (`tenprof import`) next to it."""
    trace = folder / "trace.json"
    trace.write_bytes(orjson.dumps({"schemaVersion": 1, "traceEvents": events, "baseTimeNanoseconds": 0}))
    import_trace(trace, folder / "imported", force=False)
    return load_profile(folder / "imported")
