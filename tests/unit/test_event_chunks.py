"""The trace reader cuts a file into runs of whole events and decodes each (importers.formats.event_chunks,
kineto_events, parallel_collect): however it is cut, in one process or several, and whatever the
layout, the columns an import is built from are the same."""

from __future__ import annotations

import gzip
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest

from tenprof.errors import TraceFormatError
from tenprof.importers import parallel_collect
from tenprof.importers.formats import event_chunks
from tenprof.importers.formats.kineto_reader import TraceStream
from tests.conftest import DATA, shared_recording
from tests.parallel_read import columns

ROOT = Path(__file__).resolve().parents[2]
GPT2 = DATA / "gpt2" / "timeline" / "raw" / "kineto_trace.json.gz"
CONV = DATA / "conv" / "timeline" / "raw" / "kineto_trace.json.gz"
COMPILED = DATA / "compiled" / "torch_profiler_mlp.json.gz"  # Inductor's Triton launch metadata in its args
WITH_STACK = DATA / "torch_traces" / "conv_block_stack.json.gz"  # python_function events


def _in_processes(*jobs: tuple[Path, int]) -> list[dict[str, Any]]:
    """What two worker processes read of each (trace, block size): columns, whether the workers gave up
    (a run they could not decode), and the header; read in a fresh process (tests/parallel_read.py)."""
    done = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "parallel_read.py"), orjson.dumps([[str(p), b] for p, b in jobs])],
        capture_output=True,
        check=False,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    return orjson.loads(done.stdout)  # type: ignore[no-any-return]


# The traces below are read with worker processes at these block sizes, each in the test that says why
TRICKY_BLOCKS = (64, 200, 1 << 12, 1 << 20)
CUT_STRING_BLOCKS = range(16, 330, 23)


@dataclass(frozen=True)
class ReadInProcesses:
    """The traces the tests read with worker processes, written once per test session (shared by the
    pytest-xdist workers, as a capture is), and what the workers read of each (trace, block size):
    `read[(path, block)]`. One fresh process reads them all, where one per test started seven (its start,
    which imports the reader, is most of what reading a small trace costs). Tests must only read them."""

    tricky: Path
    cut_string: Path
    indented: Path
    zstd: Path | None  # None where zstandard is not installed
    read: dict[tuple[Path, int], dict[str, Any]]


def _write_read_in_processes(folder: Path) -> None:
    """The traces, then what the workers read of them (read.json: each job and its reading)."""
    (folder / "tricky.json").write_bytes(_tricky_trace())
    (folder / "t.json").write_bytes(_cut_string_trace())
    conv = orjson.loads(gzip.decompress(CONV.read_bytes()))
    (folder / "indented.json").write_bytes(orjson.dumps(conv, option=orjson.OPT_INDENT_2))  # `Input Dims` over lines
    jobs = [(trace, 1 << 16) for trace in (GPT2, COMPILED, WITH_STACK)] + [(folder / "indented.json", 1 << 12)]
    jobs += [(folder / "tricky.json", block) for block in TRICKY_BLOCKS]
    jobs += [(folder / "t.json", block) for block in CUT_STRING_BLOCKS]
    try:
        import zstandard
    except ImportError:
        pass
    else:
        (folder / "conv.json.zst").write_bytes(zstandard.ZstdCompressor().compress(gzip.decompress(CONV.read_bytes())))
        jobs.append((folder / "conv.json.zst", 1 << 12))
    read = zip(jobs, _in_processes(*jobs), strict=True)
    (folder / "read.json").write_bytes(orjson.dumps([[str(path), block, r] for (path, block), r in read]))


@pytest.fixture(scope="module")
def in_processes(tmp_path_factory: pytest.TempPathFactory) -> ReadInProcesses:
    folder = shared_recording(tmp_path_factory, "read_in_processes", _write_read_in_processes)
    read = {(Path(path), block): r for path, block, r in orjson.loads((folder / "read.json").read_bytes())}
    zstd = folder / "conv.json.zst"
    return ReadInProcesses(
        folder / "tricky.json", folder / "t.json", folder / "indented.json", zstd if zstd.exists() else None, read
    )


def _as_json(found: dict[str, Any]) -> Any:
    """Columns as the fresh process sends them (tuples as lists)."""
    return orjson.loads(orjson.dumps(found))


def test_workers_are_not_forked_beside_other_threads_or_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert not parallel_collect.can_fork_workers()
    finally:
        stop.set()
        other.join()
    monkeypatch.setitem(sys.modules, "torch", sys)  # any module under that name
    assert not parallel_collect.can_fork_workers()


_columns = columns  # the fresh process reports its columns the same way


def _whole(path: Path) -> dict[str, Any]:
    """The columns from one run holding the whole file."""
    return _columns(TraceStream(path, block_bytes=1 << 30).collect(1))


@pytest.mark.xdist_group("read_in_processes")
@pytest.mark.parametrize("trace", [GPT2, COMPILED, WITH_STACK], ids=["gpt2", "compiled", "with_stack"])
def test_small_runs_and_processes_give_the_columns_of_one_run(trace: Path, in_processes: ReadInProcesses) -> None:
    whole = _whole(trace)
    assert whole["events"] > 1000 and whole["ops.name"]
    stream = TraceStream(trace, block_bytes=1 << 15)
    assert _columns(stream.collect(1)) == whole
    parallel = in_processes.read[(trace, 1 << 16)]
    assert parallel["columns"] == _as_json(whole) and parallel["gave_up"] == [False]
    assert parallel["base_time_ns"] == stream.header.base_time_ns > 0
    if trace is COMPILED:
        assert whole["triton"] and all(v["launches"] >= 1 for v in whole["triton"].values())
    if trace is WITH_STACK:
        assert whole["python.name"]


@pytest.mark.xdist_group("read_in_processes")
def test_compact_and_indented_layouts_give_the_same_columns(tmp_path: Path, in_processes: ReadInProcesses) -> None:
    trace = orjson.loads(gzip.decompress(CONV.read_bytes()))
    compact, indented = tmp_path / "compact.json", in_processes.indented
    compact.write_bytes(orjson.dumps(trace))  # one line: runs cut at `},{`
    assert indented.read_bytes() == orjson.dumps(trace, option=orjson.OPT_INDENT_2)  # `Input Dims` over lines
    whole = _whole(CONV)
    assert whole["ops.shapes"] and any(shape != "" for shape in whole["ops.shapes"])
    assert _columns(TraceStream(compact, block_bytes=1 << 12).collect(1)) == whole
    parallel = in_processes.read[(indented, 1 << 12)]
    assert parallel["columns"] == _as_json(whole)


def _tricky_trace() -> bytes:
    """Events whose args hold what looks like an event's end at another depth (a list of objects written
    one per line) and names with braces, quotes and backslashes; then keys after the events."""
    events = []
    for i in range(400):
        name = ["plain", "br},{ace", 'quote \\"},\\n{', "back\\\\slash\\\\", "x}, {y"][i % 5]
        events.append(
            b'{"ph": "X", "cat": "cpu_op", "name": "op' + str(i).encode() + b" " + name.encode() + b'", "pid": 1,'
            b' "tid": 1, "ts": '
            + str(10 * i).encode()
            + b', "dur": 5, "args": {"External id": '
            + str(i).encode()
            + b', "nested": [\n{"a": 1},\n{"b": [{"c": "},{"}]},\n  {"d": 2}\n]}}'
        )
    return (
        b'{"schemaVersion": 1, "traceEvents": [\n'
        + b",\n".join(events)
        + b'\n], "traceName": "t},\\n{.json", "deviceProperties": [\n{"id": 0, "name": "GPU"},\n{"id": 1}\n]}'
    )


@pytest.mark.xdist_group("read_in_processes")
def test_cuts_inside_an_event_are_caught(in_processes: ReadInProcesses, monkeypatch: pytest.MonkeyPatch) -> None:
    path = in_processes.tricky
    expected = orjson.loads(path.read_bytes())
    names = [e["name"] for e in expected["traceEvents"]]
    exact_scans: list[int] = []
    scan = event_chunks._scan
    monkeypatch.setattr(event_chunks, "_scan", lambda buf: exact_scans.append(1) or scan(buf))
    blocks = TRICKY_BLOCKS
    for block in blocks:
        stream = TraceStream(path, block_bytes=block)
        columns = _columns(stream.collect(1))
        assert columns["ops.name"] == names, block
        assert columns["ops.ext"] == list(range(400))
        assert stream.header.other["traceName"] == "t},\n{.json"
        assert stream.header.device_properties == [{"id": 0, "name": "GPU"}, {"id": 1}]
    # the wrong guesses were made and caught: by the exact scan in one process ...
    assert len(exact_scans) > 8
    # ... and by a worker in several, which gives the trace back to the one-process reader (the whole file
    # in one block is only cut at its end, by the exact scan: nothing to give up)
    read = [in_processes.read[(path, block)] for block in blocks]
    assert [r["columns"]["ops.name"] for r in read] == [names] * 4
    assert [r["gave_up"] for r in read] == [[True], [True], [True], [False]]
    assert all(r["other"]["traceName"] == "t},\n{.json" for r in read)


def test_values_of_unexpected_types_take_the_defaults(tmp_path: Path) -> None:
    path = tmp_path / "odd.json"
    path.write_bytes(
        b'{"schemaVersion": 1, "traceEvents": ['
        b'{"ph": "X", "cat": "cpu_op", "name": "a", "pid": "host", "tid": "main", "ts": 1, "dur": 2,'
        b' "args": {"External id": 12.0, "Sequence number": "7", "Input Dims": [[2, 3]]}},'
        b'{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1.5, "dur": 1,'
        b' "args": {"correlation": "not a number", "grid": [1, 2], "device": 0, "stream": 7}},'
        b' 42, "not an event"]}'
    )
    columns = _columns(TraceStream(path).collect(1))
    assert columns["ops.tid"] == [0] and columns["ops.ext"] == [12] and columns["ops.seq"] == [7]
    assert columns["ops.shapes"] == ["[[2,3]]"]
    assert columns["kernels.corr"] == [-1] and columns["kernels.grid"] == [(0, 0, 0)]
    assert columns["kernels.stream"] == [7]


def test_a_corrupt_or_unreadable_zstd_trace_is_refused_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "t.json.zst"
    path.write_bytes(b"\x28\xb5\x2f\xfd junk")
    with pytest.raises(TraceFormatError, match=r"zstd"):
        TraceStream(path).collect(1)


@pytest.mark.xdist_group("read_in_processes")
def test_a_zstd_trace_gives_the_columns_of_its_json(in_processes: ReadInProcesses) -> None:
    pytest.importorskip("zstandard", reason="zstandard (a dev extra) reads .zst traces")
    assert in_processes.zstd is not None  # written with it
    parallel = in_processes.read[(in_processes.zstd, 1 << 12)]
    assert parallel["columns"] == _as_json(_whole(CONV))


def _cut_string_trace() -> bytes:
    """One event per line, the last one's name holding `},{`."""
    event = b'{"ph":"X","cat":"cpu_op","name":"e","pid":1,"tid":1,"ts":1,"dur":1,"args":{"External id":1}}'
    last = b'{"ph":"X","cat":"user_annotation","name":"a},{b","pid":1,"tid":1,"ts":2,"dur":1}'
    return b'{"schemaVersion":1,"traceEvents":[\n' + b",\n".join([event] * 3 + [last]) + b"\n]}"


@pytest.mark.xdist_group("read_in_processes")
def test_a_cut_guessed_inside_a_string_is_read_right(in_processes: ReadInProcesses) -> None:
    # one event per line, the last one's name holding `},{`: a cut guessed there leaves the next run
    # starting inside a string; the workers' reading gives up and the one-process reader decides
    path = in_processes.cut_string
    blocks = CUT_STRING_BLOCKS
    for block in blocks:
        columns = _columns(TraceStream(path, block_bytes=block).collect(1))
        assert columns["ops.name"] == ["e"] * 3 and columns["annotations.name"] == ["a},{b"], block
    for block in blocks:
        read = in_processes.read[(path, block)]
        assert read["columns"]["ops.name"] == ["e"] * 3, block
        assert read["columns"]["annotations.name"] == ["a},{b"], block


def test_a_file_without_events_is_not_read_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(event_chunks, "HEAD_LIMIT", 4096)
    path = tmp_path / "weights.bin"
    path.write_bytes(b"\x00\x01" * 100_000)
    stream = TraceStream(path, block_bytes=1024)
    with pytest.raises(TraceFormatError, match=r"no `traceEvents` array in its first"):
        stream.collect(1)
    assert stream.bytes_read < 20_000


def test_a_name_written_as_a_number_and_null_shapes(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_bytes(
        b'{"schemaVersion":1,"traceEvents":[{"ph":"X","cat":"cpu_op","name":5,"pid":1,"tid":1,"ts":1,"dur":1,'
        b'"args":{"Input Dims":null}}]}'
    )
    columns = _columns(TraceStream(path).collect(1))
    assert columns["ops.name"] == ["5"] and columns["ops.shapes"] == [""]


_CTRL_C_AS_THE_POOL_STARTS = """
import multiprocessing
from contextlib import contextmanager
from tenprof.importers import parallel_collect

@contextmanager
def pressed_as_it_ends():  # a Ctrl-C that was pending while SIGINT was held, raised as the hold ends
    yield
    raise KeyboardInterrupt

parallel_collect.sigint_held = pressed_as_it_ends
try:
    parallel_collect.collect_in_processes(iter([b'[]']), 2)
except KeyboardInterrupt:
    print(len(multiprocessing.active_children()))
"""


def test_a_ctrl_c_as_the_workers_start_still_ends_them() -> None:
    # left to the pool's finalizer at exit, a second Ctrl-C cut the ending into a traceback (seen in CI)
    done = subprocess.run(
        [sys.executable, "-c", _CTRL_C_AS_THE_POOL_STARTS], capture_output=True, check=False, cwd=ROOT, timeout=60
    )
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    assert done.stdout.decode().split() == ["0"]
