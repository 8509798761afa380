"""The native call-site recorder (TENPROF_LINES_RECORDER=native) against the Python one, and its fallback."""

from __future__ import annotations

import gzip
import os
import shutil
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest

from tenprof.analyses.timeline.summary import user_frame_of
from tenprof.capture import native_lines
from tenprof.capture.callsites import CallsiteRecorder
from tenprof.capture.frames import new_interner
from tenprof.capture.native_trace import write_trace
from tenprof.cli.main import main
from tenprof.core.rawfiles import TRACE_FILE, later_trace_parts
from tenprof.importers.timeline_import import build_pass
from tenprof.store.profile import load_profile
from tests.conftest import rebuild_pass
from tests.integration.conftest import Recorded

SCRIPT = """\
import threading; import torch
from torch import nn

import tenprof

model = nn.Sequential(nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 4))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(8, 32)


def forward(inp):
    h = model(inp)
    return (h * 2 + 1).square().mean()


for _ in range(15):
    loss = forward(x)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    y = x.T @ x
    z = torch.relu(y).sum()
    tenprof.step()


def worker():
    for _ in range(20):
        torch.mm(x, x.T).relu_()


thread = threading.Thread(target=worker)
thread.start()
thread.join()
"""


@pytest.fixture(scope="session")
def native_cache() -> Path:
    """The library built into the cache every `tenprof run` of these tests uses (TENPROF_CACHE, else the
    user's; its entries are keyed by the source, torch and the compiler, and written whole): built once
    on a machine, which every other capture in the test session would otherwise build too."""
    if shutil.which(os.environ.get("CXX") or "g++") is None:
        pytest.skip("no C++ compiler (g++ or $CXX): the native call-site recorder cannot be built here")
    return native_lines.build_library().parent.parent


def _record(tmp_path: Path, recorder: str, monkeypatch: pytest.MonkeyPatch, name: str = "") -> Path:
    script = tmp_path / "job.py"
    if not script.exists():
        script.write_text(textwrap.dedent(SCRIPT))
    out = tmp_path / (name or recorder)
    monkeypatch.setenv("TENPROF_LINES_RECORDER", recorder)
    assert main(["run", "--quiet", "-o", str(out), str(script)]) == 0
    return out


@pytest.fixture(scope="module")
def native_run(tmp_path_factory: pytest.TempPathFactory, native_cache: Path) -> Path:
    """The script recorded with the native recorder, which records every op too (TENPROF_NATIVE_OPS=1)."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv("TENPROF_NATIVE_OPS", "1")
        return _record(tmp_path_factory.mktemp("native_run"), "native", env)


def _user_lines(out: Path) -> list[tuple[str, int] | None]:
    """Each op's name and the line of the profiled script it ran from (None: no line)."""
    profile = load_profile(out)
    ops = profile.table("ops")
    frames = profile.table("frames")
    frame = ops.column("frame_id").to_numpy()
    user = np.where(frame >= 0, user_frame_of(profile)[np.maximum(frame, 0)], -1)
    files = frames.column("file").to_pylist()
    lines = frames.column("line").to_pylist()
    names = ops.column("name").to_pylist()
    return [(f"{n} {Path(files[u]).name}", int(lines[u])) if u >= 0 else None for n, u in zip(names, user, strict=True)]


def test_native_and_python_recorders_give_ops_the_same_lines(
    tmp_path: Path, native_run: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    native = _user_lines(native_run)
    # The Python recorder's run is the one a failed build falls back to (one run for both checks): the
    # native recorder asked for, no compiler, so one line says so and the Python recorder records.
    capfd.readouterr()
    with monkeypatch.context() as failed_build:
        failed_build.setenv("CXX", str(tmp_path / "no-such-compiler"))
        failed_build.setenv("TENPROF_CACHE", str(tmp_path / "empty-cache"))
        python = _user_lines(_record(tmp_path, "native", failed_build, name="python"))
    said = [line for line in capfd.readouterr().err.splitlines() if "call-site recorder" in line]
    assert len(said) == 1 and "Python recorder" in said[0], said
    assert len(native) == len(python) > 100
    # Every op the Python recorder gives a line has the same line natively. The native recorder also
    # sees ops the TorchFunctionMode cannot (parameter creation, the optimizer's in-place updates).
    both = [(n, p) for n, p in zip(native, python, strict=True) if p is not None]
    assert len(both) > len(python) // 2
    assert all(n == p for n, p in both), [(n, p) for n, p in both if n != p][:5]
    assert sum(n is None for n in native) <= sum(p is None for p in python)
    lines = {n[1] for n in native if n is not None}
    assert {12, 13, 18, 21, 22} <= lines  # forward's two lines, backward, x.T @ x, relu
    # The worker thread: the native recorder sees its calls (the Python recorder's TorchFunctionMode is
    # per thread, it cannot). Kineto records no ops on a thread the script started (its callbacks are per
    # thread too), so these records place the thread's GPU launches only; no op takes the worker's line.
    assert not any(n is not None and n[1] == 28 for n in native)
    for run, expected in ((native_run, {("worker", 28)}), (tmp_path / "python", None)):
        sidecar = _sidecar(run)
        frames = sidecar["frames"]
        threads: dict[int, set[tuple[str, int]]] = {}
        for tid, frame in zip(sidecar["calls"]["thread_id"], sidecar["calls"]["frame_id"], strict=True):
            threads.setdefault(tid, set()).add((frames[frame][4], frames[frame][3]))
        assert len(threads) == (2 if expected else 1)
        if expected:
            assert expected in threads.values()


def _sidecar(run: Path) -> dict[str, Any]:
    sidecar: dict[str, Any] = orjson.loads(gzip.decompress((run / "timeline/raw/callsites.json.gz").read_bytes()))
    return sidecar


def _nesting(starts: list[int], ends: list[int]) -> list[int]:
    """Each interval's depth among intervals that contain it, in start order (they nest: ops on a thread)."""
    depth, open_ends = [], []
    for start, end in sorted(zip(starts, ends, strict=True), key=lambda se: (se[0], -se[1])):
        while open_ends and open_ends[-1] <= start:
            open_ends.pop()
        depth.append(len(open_ends))
        open_ends.append(end)
    return depth


def _profiler_ops(run: Path) -> list[list[dict[str, Any]]]:
    """The profiler's op events of each of the run's sessions (one trace file each, on its own clock), in
    start order."""
    raw = run / "timeline/raw"
    files = [raw / f"{TRACE_FILE}.gz", *later_trace_parts(raw)]
    sessions = []
    for file in files:
        events = orjson.loads(gzip.decompress(file.read_bytes()))["traceEvents"]
        sessions.append(sorted((e for e in events if e.get("cat") == "cpu_op"), key=lambda e: (e["ts"], -e["dur"])))
    return sessions


def test_every_op_is_recorded_natively_as_the_profiler_records_it(native_run: Path) -> None:
    # The profiler's own op records of the same run are the reference: on the script's thread the native
    # records are the same ops in the same order and nesting, each containing the profiler's (its callbacks
    # run inside the native ones), and none in the steps run with the capture off; on the worker thread,
    # where the profiler records no op, they are there.
    ops = _sidecar(native_run)["native_ops"]
    names = [ops["names"][i] for i in ops["name_id"]]
    ranges = [i for i, scope in enumerate(ops["scope"]) if scope == native_lines.USER_SCOPE]
    assert {names[i] for i in ranges} >= {"ProfilerStep#1", "ProfilerStep#2", "Optimizer.step#SGD.step"}
    ranges_set = set(ranges)
    sessions = _profiler_ops(native_run)
    kineto = [e for session in sessions for e in session]
    main_thread = {e["tid"] for e in kineto}
    assert len(main_thread) == 1 and len(sessions) >= 2
    mine = sorted(
        (i for i, tid in enumerate(ops["thread_id"]) if tid in main_thread and i not in ranges_set),
        key=lambda i: (ops["start_ns"][i], -ops["end_ns"][i]),
    )
    assert [names[i] for i in mine] == [e["name"] for e in kineto]
    assert len(mine) > 500 and {"aten::addmm", "aten::mm"} <= set(names)
    assert any("Backward" in n for n in names)
    starts, ends = [ops["start_ns"][i] for i in mine], [ops["end_ns"][i] for i in mine]
    assert [ops["depth"][i] for i in mine] == _nesting(starts, ends)
    taken = 0
    for session in sessions:  # one clock shift per session puts the native records around the profiler's
        span = range(taken, taken + len(session))
        taken += len(session)
        # the profiler's clock (TSC-derived, converted) drifts against the perf clock over a session: the shift
        # is the median of each run of 100 ops, which follows the drift and ignores the outliers. On a loaded
        # machine some ops still stray by more than 5 us (1.2-1.8% while other tests ran, with the shift per
        # run too): the names, order and nesting above and below are exact; the times are held to 97%
        deltas = np.array([starts[k] - e["ts"] * 1000 for k, e in zip(span, session, strict=True)])
        chunk = 100
        shifts = np.repeat([np.median(deltas[i : i + chunk]) for i in range(0, len(deltas), chunk)], chunk)
        around = [
            starts[k] <= e["ts"] * 1000 + shifts[j] + 5000 and ends[k] >= (e["ts"] + e["dur"]) * 1000 + shifts[j] - 5000
            for j, (k, e) in enumerate(zip(span, session, strict=True))
        ]
        assert np.mean(around) >= 0.97
        k_starts = [round(e["ts"] * 1000) for e in session]
        k_ends = [round((e["ts"] + e["dur"]) * 1000) for e in session]
        assert [ops["depth"][mine[k]] for k in span] == _nesting(k_starts, k_ends)
    # sequence numbers tie backward ops to their forward ones, as the profiler's do
    assert all(ops["sequence_nr"][i] >= 0 for i in mine if names[i] == "aten::addmm")
    worker = set(ops["thread_id"]) - main_thread
    assert len(worker) == 1
    assert sum(1 for i, tid in enumerate(ops["thread_id"]) if tid in worker and names[i] == "aten::mm") == 20


def test_a_trace_made_from_the_native_records_imports_as_the_profilers_does(native_run: Path, tmp_path: Path) -> None:
    # The same run imported from a trace written from the native records alone (no profiler's event in it):
    # the script's thread's ops get the same names, nesting, parents, sequence numbers, scopes and lines
    # and inputs (shapes, dtypes, strides, scalar values) as from the profiler's trace, and the worker
    # thread's ops are there too. A step whose range the profiler opened as its session started (0, and the
    # first after the steps run un-profiled) has no native record yet, so only the others are compared.
    copy = tmp_path / "native_trace"
    shutil.copytree(native_run, copy)
    raw = copy / "timeline/raw"
    for part in raw.glob("kineto_trace*.json.gz"):
        part.unlink()
    write_trace(raw / "kineto_trace.json.gz", _sidecar(native_run)["native_ops"], 1, native_lines.USER_SCOPE)
    rebuild_pass(
        copy,
        "timeline",
        lambda writer, kept: build_pass(writer, kept / "kineto_trace.json.gz", kept / "callsites.json.gz"),
    )
    theirs, mine = load_profile(native_run).table("ops"), load_profile(copy).table("ops")
    script_thread = set(theirs.column("thread_id").to_pylist())
    on_script_thread = np.isin(mine.column("thread_id").to_numpy(), list(script_thread))
    assert 0 < on_script_thread.sum() < mine.num_rows  # the worker's ops besides
    assert on_script_thread.sum() == theirs.num_rows
    columns = ("name", "depth", "parent_op_id", "sequence_nr", "is_backward", "scope_id", "frame_id")
    inputs = ("input_shapes", "input_dtypes", "input_strides", "input_values")
    for column in columns + inputs:
        mine_here = mine.column(column).to_numpy(zero_copy_only=False)[on_script_thread].tolist()
        if column != "frame_id":
            assert mine_here == theirs.column(column).to_pylist(), column
            continue
        # The profiler's op times come from its own clock, converted, and are joined with the call sites
        # (perf clock) through one offset; the native ops are on the perf clock itself. Once in some ten
        # suite runs on the loaded 2-core machine one op of the profiler's, microseconds from its
        # neighbour (a Parameter's detach 13 us after the op before it), fell on the other side of a call
        # site's edge; once (2026-12-02, the machine running a second suite beside it) four did. So: at most
        # one op in two hundred may differ, each within 50 us of a neighbour: a clock's offset, not a line
        # given to the wrong op.
        differ = [
            i for i, (a, b) in enumerate(zip(mine_here, theirs.column(column).to_pylist(), strict=True)) if a != b
        ]
        starts = theirs.column("start_ns").to_numpy()
        assert len(differ) <= max(5, len(mine_here) // 200), differ
        for i in differ:
            gaps = [abs(int(starts[i]) - int(starts[j])) for j in (i - 1, i + 1) if 0 <= j < len(starts)]
            assert min(gaps) < 50_000, (i, gaps)
    steps_theirs = theirs.column("step").to_numpy()
    steps_mine = mine.column("step").to_numpy()[on_script_thread]
    both = steps_mine >= 0
    assert (steps_mine[both] == steps_theirs[both]).all() and set(steps_mine[both]) >= {1, 2}
    assert set(steps_theirs[~both]) <= {0, 12}  # each session's first step


def test_native_recorder_records_nothing_while_paused(native_cache: Path) -> None:
    import torch

    lib = native_lines.load_library(native_lines.build_library())
    recorder = native_lines.NativeCallsiteRecorder(new_interner(None), lib)
    recorder.__enter__()
    torch.ones(3).add(1)
    recorder.paused = True
    for _ in range(5):
        torch.ones(3).add(1)
    recorder.paused = False
    torch.ones(3).mul(2)
    recorder.close()
    recorder.__exit__(None, None, None)
    records = recorder.records
    assert len(records) == 4 * 4  # ones, add, ones, mul
    frames = recorder.interner.rows
    assert all(frames[f][2] == __file__ for f in records[3::4])
    assert list(records[0::4]) == [threading_id()] * 4
    assert all(s <= e for s, e in zip(records[1::4], records[2::4], strict=True))


def test_a_compilation_whose_start_was_missed_does_not_silence_the_rest(native_cache: Path) -> None:
    # Dynamo is hooked when it is first seen, which can be in the middle of a compilation: its end then
    # comes without a start, and must not leave the recorder counting a compilation that never ends (every
    # later op would read as the compiler's and get no call site). Inside a counted one, the ops are recorded
    # (as the profiler records them) without call sites of their own (the compile record covers them), and
    # torch's profiler flag is up (torch's compiler names its phases only then).
    import torch

    lib = native_lines.load_library(native_lines.build_library())
    recorder = native_lines.NativeCallsiteRecorder(new_interner(None), lib, every_op=True)
    recorder.__enter__()
    recorder._compile_ended()  # no start seen
    torch.ones(3).add(1)
    recorder._compile_started()
    flag_inside = torch.autograd.profiler._is_profiler_enabled
    torch.ones(3).mul(2)
    recorder._compile_ended()
    torch.ones(3).sub(1)
    recorder.close()
    recorder.__exit__(None, None, None)
    ops = recorder.ops
    names = [ops["names"][i] for i in ops["name_id"]]
    assert flag_inside and not torch.autograd.profiler._is_profiler_enabled
    assert names.count("aten::ones") == 3 and {"aten::add", "aten::mul", "aten::sub"} <= set(names)
    assert len(recorder.records) == 4 * 4  # call sites: ones, add, ones, sub; the compiled-over ones and mul none


@pytest.mark.parametrize("stand_in", [True, False])
def test_standing_in_for_the_profiler_records_what_torch_records_only_under_one(
    native_cache: Path, stand_in: bool
) -> None:
    # torch's fast record function (Inductor's ranges around a compiled graph's call and each Triton launch)
    # records only where a profiler's state stands on the thread: the native capture's recorder puts one of
    # its own there, which profiles nothing (torch reads no profiler as running) and takes memory reports.
    import torch

    lib = native_lines.load_library(native_lines.build_library())
    recorder = native_lines.NativeCallsiteRecorder(
        new_interner(None), lib, every_op=True, memory=True, stand_in=stand_in
    )
    recorder.__enter__()
    try:
        with torch._C._profiler._RecordFunctionFast("triton_poi_fused_0"):
            kept = torch.ones(5)
        assert not torch._C._autograd._profiler_enabled()
    finally:
        recorder.close()
        recorder.__exit__(None, None, None)
    ops = recorder.ops
    names = [ops["names"][i] for i in ops["name_id"]]
    assert ("triton_poi_fused_0" in names) == stand_in
    memory = ops.get("memory", {})
    assert (20 in memory.get("bytes", [])) == stand_in  # torch.ones(5): 20 bytes, reported while standing in
    del kept


def threading_id() -> int:
    import threading

    return threading.get_native_id()


def test_failed_build_says_so_once_and_records_with_python(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CXX", str(tmp_path / "no-such-compiler"))
    monkeypatch.setenv("TENPROF_CACHE", str(tmp_path / "cache"))
    recorder = native_lines.make_recorder(new_interner(None), "native")
    assert isinstance(recorder, CallsiteRecorder)
    err = capfd.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "native call-site recorder unavailable" in err[0] and "Python recorder" in err[0]
    # a whole run that falls back: test_native_and_python_recorders_give_ops_the_same_lines


@pytest.mark.xdist_group("tight_loop_run")
def test_back_to_back_ops_of_microseconds_keep_their_own_lines(tight_loop_run: Recorded) -> None:
    # A CPU loop whose ops run a few microseconds apart (TIGHT_LOOP): matched to the native recorder's records
    # by time, ops took their neighbours' lines wherever the clock mapping's error (79 us seen on this 2-core
    # machine) exceeded their spacing (aten::randn at lines 4 and 6 of a three-line body). One record per
    # top-level op: matched in order, each op keeps its own line.
    assert tight_loop_run.ran.code == 0
    profile = load_profile(tight_loop_run.profile)
    lines = profile.sql(
        "select o.name, f.line, count(*) as n from ops o join frames f on o.frame_id = f.frame_id "
        "where o.depth = 0 group by all"
    ).to_pylist()
    expected = {("aten::randn", 3): 1, ("aten::randn", 5): 6, ("aten::matmul", 6): 6, ("aten::relu", 6): 6}
    expected |= {("aten::sum", 7): 6, ("aten::item", 7): 6}
    assert {(r["name"], r["line"]): r["n"] for r in lines} == expected


def _recorded_ops(lib: Any, alone: bool) -> list[tuple[str, int, int]]:
    """A small forward and backward under the every-op recorder: (name, depth, scope) of each finished op,
    in start order, after checking that each one's end is at or after its start."""
    import torch

    recorder = native_lines.NativeCallsiteRecorder(new_interner(None), lib, every_op=True, inputs=True, alone=alone)
    recorder.__enter__()
    try:
        x = torch.ones(4, 4, requires_grad=True)
        with torch.autograd.profiler.record_function("## a range ##"):
            (x.t() @ x).relu().sum().backward()
    finally:
        recorder.close()
        recorder.__exit__(None, None, None)
    ops = recorder.ops
    assert all(end >= start for start, end in zip(ops["start_ns"], ops["end_ns"], strict=True))
    order = sorted(range(len(ops["start_ns"])), key=lambda i: ops["start_ns"][i])
    return [(ops["names"][ops["name_id"][i]], ops["depth"][i], ops["scope"][i]) for i in order]


def test_one_callback_records_what_two_do(native_cache: Path) -> None:
    # Alone (no profiler's callbacks beside it, as under `--capture native`) one callback opens and closes
    # each record instead of two bracketing the profiler's: the same ops, nesting and ranges come out.
    lib = native_lines.load_library(native_lines.build_library())
    two = _recorded_ops(lib, alone=False)
    one = _recorded_ops(lib, alone=True)
    names = [name for name, _, _ in one]
    assert {"## a range ##", "aten::mm", "aten::relu", "aten::sum"} <= set(names)
    assert any(name.startswith("autograd::engine::evaluate_function") for name in names)
    assert sorted(one) == sorted(two)


def test_a_native_range_is_recorded_as_record_function_s_and_holds_its_ops(native_cache: Path) -> None:
    # tenprof's boundary ranges (clock syncs, step ranges) under the native capture: the native library's
    # record function with the user scope, which the recorder keeps as a range (no call site), as it keeps
    # record_function's, around the ops run inside it
    import torch

    lib = native_lines.load_library(native_lines.build_library())
    recorder = native_lines.NativeCallsiteRecorder(new_interner(None), lib, every_op=True)
    recorder.__enter__()
    with torch.autograd.profiler.record_function("theirs"):
        torch.ones(3)
    with recorder.named_range("mine"):
        torch.ones(3)
    recorder.close()
    recorder.__exit__(None, None, None)
    ops = recorder.ops
    names = [ops["names"][i] for i in ops["name_id"]]
    at = {name: names.index(name) for name in ("theirs", "mine")}
    assert ops["scope"][at["mine"]] == ops["scope"][at["theirs"]] == native_lines.USER_SCOPE
    ones = [i for i, name in enumerate(names) if name == "aten::ones"]
    for name, one in zip(("theirs", "mine"), ones, strict=True):
        start, end = ops["start_ns"][at[name]], ops["end_ns"][at[name]]
        assert start <= ops["start_ns"][one] and ops["end_ns"][one] <= end
    assert len(recorder.records) == 2 * 4  # call sites: the two aten::ones, none for the ranges
