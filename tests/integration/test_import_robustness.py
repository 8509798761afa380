"""Ctrl-C during a real tenprof import process: it says so and leaves nothing (the rest is in
tests/unit/test_import_robustness.py)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tenprof.store.profile import load_profile
from tests.helpers import error_lines, write_file

ROOT = Path(__file__).resolve().parents[2]


def _big_trace(path: Path, events: int) -> Path:
    """A plain trace of `events` ops (about 150 bytes each), written fast."""
    row = b'{"ph":"X","cat":"cpu_op","name":"aten::op%d","pid":1,"tid":1,"ts":%d.5,"dur":3.0,"args":{"External id":%d}}'
    body = b",\n".join(row % (i % 50, 10 * i, i) for i in range(events))
    return write_file(path, b'{"schemaVersion":1,"traceEvents":[\n' + body + b'\n],"baseTimeNanoseconds":0}')


def _wait_for_workers(proc: subprocess.Popen[bytes], out: Path) -> None:
    """Until the import's worker processes run (Linux lists a process's children), or where that list is
    not kept, until its output directory is made: then the import is under way."""
    children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children")
    listed = children.exists()
    deadline = time.monotonic() + 30
    while proc.poll() is None and time.monotonic() < deadline:
        if listed:
            try:
                if children.read_text().split():
                    return
            except OSError:  # it ended meanwhile
                return
        elif out.exists():
            time.sleep(0.2)
            return
        time.sleep(0.01)


def _interrupt_an_import(trace: Path, out: Path) -> tuple[int, str]:
    """`tenprof import` of `trace` in a session of its own, Ctrl-C'd once its workers run: (exit, stderr)."""
    env = dict(os.environ, TENPROF_IMPORT_WORKERS="2")
    # Python keeps SIGINT ignored when it starts with it ignored, as every command a non-interactive shell
    # runs in the background does (a CI runner may run the tests so): the import is started as a terminal
    # would, with Ctrl-C's handler in place
    start = "import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
    start += "sys.argv = ['tenprof', *sys.argv[1:]]; runpy.run_module('tenprof', run_name='__main__')"
    command = [sys.executable, "-c", start, "import", "--quiet", str(trace), "-o", str(out)]
    # a session of its own: the SIGINT goes to the whole group, importer and workers, as a terminal's does
    with subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
    ) as proc:
        _wait_for_workers(proc, out)
        # Ctrl-C until it stops: one pressed while the import creates or finishes its output is dropped
        # on purpose (those steps must not stop half-way)
        for _ in range(300):
            if proc.poll() is not None:
                break
            os.killpg(proc.pid, signal.SIGINT)
            time.sleep(0.1)
        _, err = proc.communicate(timeout=60)
    return proc.returncode, err.decode()


def test_ctrl_c_during_an_import_says_interrupted_and_leaves_nothing(tmp_path: Path) -> None:
    trace = _big_trace(tmp_path / "big.json", 150_000)  # 20 MB: about a second to import, in two workers
    out = tmp_path / "out"
    # On a loaded machine this process may get to its first Ctrl-C only as the import finishes, which then
    # rightly completes: that attempt tells nothing, and the import is interrupted again from the start.
    # (Each attempt sends Ctrl-C only once the import's workers run: an import that never starts them, or
    # ends before, is not interrupted and fails the three attempts.)
    for _ in range(3):
        code, err = _interrupt_an_import(trace, out)
        if code == 0 and "tenprof" not in err:
            assert load_profile(out).meta.passes["timeline"].state in ("complete", "partial")
            shutil.rmtree(out)
            continue
        assert code == 130, err
        assert error_lines(err) == ["tenprof: error: interrupted; nothing was written"]
        assert sorted(p.name for p in tmp_path.iterdir()) == ["big.json"]  # no output, no staging folder
        return
    pytest.fail("three imports finished before a Ctrl-C reached them")
