"""Shared fixtures: the GPU recordings in tests/data, rebuilt from their raw files with this tenprof."""

from __future__ import annotations

import gc
import gzip
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import msgspec
import pytest
from filelock import FileLock

from tenprof.core.rawfiles import later_trace_parts
from tenprof.importers.timeline_import import build_pass
from tenprof.store.meta import read_meta, write_meta
from tenprof.store.profile import Profile, load_profile
from tenprof.store.writer import PassWriter

# The tests' processes (the workers and the ~45 scripts they run under `tenprof run`) import torch without
# looking for out-of-tree device backends among the installed packages' entry points: none is installed
# here, and the scan took 0.25 s of each import's 2 s on the 2-core machine. A setting of the caller's stands.
os.environ.setdefault("TORCH_DEVICE_BACKEND_AUTOLOAD", "0")

DATA = Path(__file__).parent / "data"
# (a GPU machine that is sent tests/gpu alone has no recordings: its tests need none)
CASES = sorted(p.name for p in DATA.iterdir() if (p / "meta.json").exists()) if DATA.is_dir() else []


def rebuild(case: str, into: Path) -> Profile:
    """Copy a recorded profile and rebuild its tables from its raw Kineto trace and call-site log."""
    target = into / case
    shutil.copytree(DATA / case, target)
    rebuild_pass(
        target,
        "timeline",
        lambda writer, raw: build_pass(
            writer, raw / "kineto_trace.json.gz", raw / "callsites.json.gz", later_parts=later_trace_parts(raw)
        ),
    )
    return load_profile(target)


def rebuild_pass(target: Path, pass_name: str, build: Callable[[PassWriter, Path], object]) -> None:
    """Rebuild one pass of the profile at `target` from its kept raw files (`build(writer, raw_dir)`),
    with meta.json recording the rows written."""
    raw = target / pass_name / "raw"
    writer = PassWriter(target, pass_name)
    shutil.copytree(raw, writer.tmp_dir / "raw")
    build(writer, raw)
    writer.commit()
    meta = read_meta(target)
    meta.passes[pass_name].rows = writer.rows
    write_meta(target, meta)


class _Rebuilt(dict[str, Profile]):
    """Each recording rebuilt the first time a test asks for it: a test worker pays only for the cases its
    own tests read (the whole set takes about 10 s). A case one worker rebuilt is moved to a folder every
    worker of the session reads (`shared`), so the other workers use it instead of rebuilding it."""

    def __init__(self, root: Path, shared: Path) -> None:
        super().__init__()
        self.root, self.shared = root, shared

    def __missing__(self, case: str) -> Profile:
        if case not in CASES:
            raise KeyError(case)
        done = self.shared / case
        if not (done / ".rebuilt").exists():
            built = rebuild(case, self.root).directory
            (built / ".rebuilt").touch()  # written last: a folder without it is still being moved
            try:
                built.rename(done)  # atomic: the first worker's copy wins, a later one keeps its own
            except OSError:
                done = built
        self[case] = profile = load_profile(done)
        return profile


@pytest.fixture(scope="session")
def rebuilt(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> dict[str, Profile]:
    # Under xdist each worker has its own base folder; their parent is the session's, shared by all.
    base = tmp_path_factory.getbasetemp()
    shared = (base.parent if worker_id != "master" else base) / "rebuilt-shared"
    shared.mkdir(exist_ok=True)
    return _Rebuilt(tmp_path_factory.mktemp("rebuilt"), shared)


@pytest.hookimpl(wrapper=True)
def pytest_collection(session: pytest.Session) -> Iterator[None]:
    """Collecting (importing and rewriting the test modules) with the cycle collector off, then what it made
    frozen: pytest's and the tests' modules and items are never garbage, but every full collection walked
    them again, in the collecting and in each test that makes many objects. Measured on the 2-core
    machine: collecting 11.8 -> 8.5 s; the unit tests' cycle collections 26 -> 13 s, both workers.
    Then a young collection every 10,000 new objects rather than 700 (and an old one every ten of the
    next older, as before): the tests make millions of short-lived objects, few in cycles, and each
    collection walked them: over the suite on the 2-core machine, 9,200 collections -> 650, and their time
    (both workers, medians of five runs) 7.0 -> 3.3 s."""
    gc.disable()
    try:
        return (yield)
    finally:
        gc.freeze()
        gc.set_threshold(10_000, 10, 10)
        gc.enable()


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist makes its own default (load) the choice
def pytest_cmdline_main(config: pytest.Config) -> None:
    """With -n and no --dist given, pytest-xdist's worksteal scheduling: each worker runs half of the tests in
    the order below and, once it has run out, takes over the second half of the other's queue, so the two
    end within a test of each other."""
    if getattr(config.option, "numprocesses", None) and getattr(config.option, "dist", "no") == "no":
        config.option.dist = "worksteal"


@pytest.hookimpl(trylast=True)  # after the GPU tests are deselected
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The order in which worksteal scheduling (above) hands the tests out: the slow tests first, the
    integration tests and those sharing a costly fixture (marked xdist_group), each group together so that
    one worker makes its fixture once; the short ones last, to be shared out at the end. (pytest-xdist's
    loadgroup scheduling would keep a group on one worker, but under pytest 9 it cannot: the node ids it
    groups by are no longer its to set.)"""
    first_of_group: dict[str, int] = {}

    def place(indexed: tuple[int, pytest.Item]) -> tuple[bool, int, int]:
        index, item = indexed
        group = item.get_closest_marker("xdist_group")
        slow = group is not None or "integration" in item.path.parts
        return not slow, first_of_group.setdefault(str(group.args[0]) if group else item.nodeid, index), index

    items[:] = [item for _, item in sorted(enumerate(items), key=place)]


class RawEvent(msgspec.Struct):
    """The three fields of a trace event the raw-event checks read (the rest of each event is skipped)."""

    ph: str = ""
    cat: str = ""
    dur: float | None = None


class _RawTrace(msgspec.Struct):
    traceEvents: list[RawEvent]  # the trace's own key


_RAW_TRACE = msgspec.json.Decoder(_RawTrace)


def raw_events(case: str) -> list[RawEvent]:
    """The recorded trace's events, read independently of tenprof's streaming reader: every part of it
    (kineto_trace.json.gz, then .1.json.gz, .2.json.gz, ...: one per profiler session of the run), each in
    its own clock's times, which counts and durations do not need joined. Each file is decoded whole into
    the few fields the checks read, which is half the time of building every event as a dict (the
    recordings' 400 MB of JSON: 1.3 s against 2.6 s)."""
    raw = DATA / case / "timeline" / "raw"
    events: list[RawEvent] = []
    for part in [raw / "kineto_trace.json.gz", *later_trace_parts(raw)]:
        with gzip.open(part, "rb") as handle:
            events += _RAW_TRACE.decode(handle.read()).traceEvents
    return events


def shared_recording(tmp_path_factory: pytest.TempPathFactory, name: str, record: Callable[[Path], None]) -> Path:
    """A folder `record(folder)` fills once per test session: the pytest-xdist workers share it (the first
    to ask records, under a file lock, and the others wait and read it), as a capture takes seconds and
    each worker would otherwise make its own. Tests must only read it."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        folder = tmp_path_factory.mktemp(name)
        record(folder)
        return folder
    shared = tmp_path_factory.getbasetemp().parent  # this session's, above each worker's own
    folder = shared / name
    with FileLock(str(shared / f"{name}.lock")):
        if not (folder / ".recorded").exists():
            folder.mkdir(exist_ok=True)
            record(folder)
            (folder / ".recorded").touch()
    return folder


# The first step sleeps 1 s (0.3 s before 2026-12-08: one full test run on a loaded 2-core machine found no cold
# start in it, its cause not kept; more margin against the other steps). Tests name its lines: keep them in place.
CPU_STEPS_SCRIPT = """\
import sys, time, torch, tenprof
x = torch.ones(64, 64)
flags = []
for step in range(15):
    if step == 0:
        time.sleep(1.0)  # start-up in the first step: a pool, a cache, a file opened
    for _ in range(20):
        x = torch.tanh(x @ x)
    flags.append(int(torch.autograd.profiler._is_profiler_enabled))
    tenprof.step()
open(sys.argv[1], "w").write("".join(map(str, flags)))
"""


@pytest.fixture(scope="session")
def cpu_steps_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One `tenprof run` on the CPU of a loop of fifteen marked steps whose first sleeps (steps 6-11 run with
    the capture off, 9-11 timed), shared by every test that needs such a run: its folder holds the script
    (`loop.py`), the profile (`prof`) and the profiler flag the script saw in each step (`flags.txt`)."""
    from tenprof.cli.main import main

    def record(folder: Path) -> None:
        (folder / "loop.py").write_text(CPU_STEPS_SCRIPT)
        argv = ["run", "--quiet", "-o", str(folder / "prof"), str(folder / "loop.py"), str(folder / "flags.txt")]
        assert main(argv) == 0

    return shared_recording(tmp_path_factory, "cpu-steps-run", record)
