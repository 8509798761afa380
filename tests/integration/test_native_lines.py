"""The native call-site recorder (TENPROF_LINES_RECORDER=native) against the Python one, and its fallback."""

from __future__ import annotations

import gzip
import os
import shutil
import textwrap
from pathlib import Path

import numpy as np
import orjson
import pytest

from tenprof.analyses.timeline.summary import user_frame_of
from tenprof.capture import native_lines
from tenprof.capture.callsites import CallsiteRecorder
from tenprof.capture.frames import new_interner
from tenprof.cli.main import main
from tenprof.store.profile import load_profile
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


for _ in range(6):
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
    tmp_path: Path, native_cache: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    native = _user_lines(_record(tmp_path, "native", monkeypatch))
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
    for recorder, expected in (("native", {("worker", 28)}), ("python", None)):
        sidecar = orjson.loads(gzip.decompress((tmp_path / recorder / "timeline/raw/callsites.json.gz").read_bytes()))
        frames = sidecar["frames"]
        threads: dict[int, set[tuple[str, int]]] = {}
        for tid, frame in zip(sidecar["calls"]["thread_id"], sidecar["calls"]["frame_id"], strict=True):
            threads.setdefault(tid, set()).add((frames[frame][4], frames[frame][3]))
        assert len(threads) == (2 if expected else 1)
        if expected:
            assert expected in threads.values()


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
