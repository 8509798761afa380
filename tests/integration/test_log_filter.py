"""The child's stderr relayed and filtered with real processes: partial lines, a grandchild holding stderr open,
a run's output (the filter's rules are in tests/unit/test_log_filter.py)."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tenprof.capture.log_filter import KNOWN_LINES, StderrRelay
from tests.integration.conftest import STAGE, Recorded

# Lines of the exact shapes the profiler library prints (the first three seen on this project's machines).
USDT_START = "USDT:2026-11-26 10:31:43 3428:3428 SyncActivityProfilerHandler.cpp:52] profiler_start"


CHILD = """
import os, select, sys
sys.stderr.write(f"isatty={{sys.stderr.isatty()}} size={{os.get_terminal_size(2) if sys.stderr.isatty() else ''}}\\n")
sys.stderr.write("\\r 50%|#####")
sys.stderr.flush()
# The parent answers on stdin once it has seen the partial line: it must not wait for a newline.
ready, _, _ = select.select([sys.stdin], [], [], 20)
sys.stderr.write("\\r100%|##########|\\n" if ready else "LATE\\n")
os.write(2, {usdt!r}.encode() + b"\\n")
sys.exit(7)
"""


@pytest.mark.parametrize("tty", [True, False])
def test_relay_passes_partial_lines_at_once_and_keeps_the_child_on_a_terminal(tmp_path: Path, tty: bool) -> None:
    shown: list[bytes] = []
    answer: list[subprocess.Popen[bytes]] = []

    def show(data: bytes) -> None:
        shown.append(data)
        if b"50%" in data:
            stdin = answer.pop().stdin
            assert stdin is not None
            stdin.write(b"go\n")
            stdin.close()

    relay = StderrRelay(tmp_path / "profiler.log", tty=tty, show=show)
    command = [sys.executable, "-c", CHILD.format(usdt=USDT_START)]
    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stderr=relay.child_fd)
    answer.append(proc)
    try:
        relay.pump(proc)
    finally:
        relay.close()
    assert proc.wait() == 7
    text = b"".join(shown).decode()
    assert text.startswith(f"isatty={tty} size=")
    assert "\r 50%|#####\r100%|##########|\n" in text and "LATE" not in text
    if tty:
        assert "os.terminal_size" in text and "\r\n" not in text  # bytes unchanged, as through a pipe
    assert (tmp_path / "profiler.log").read_text() == USDT_START + "\n"


def test_relay_returns_once_the_child_exits_though_its_child_holds_stderr_open(tmp_path: Path) -> None:
    shown: list[bytes] = []
    relay = StderrRelay(tmp_path / "profiler.log", tty=False, show=shown.append)
    script = "import subprocess, sys; subprocess.Popen(['sleep', '30']); sys.stderr.write('last words\\n')"
    proc = subprocess.Popen([sys.executable, "-c", script], stderr=relay.child_fd)
    started = time.monotonic()
    try:
        relay.pump(proc)
    finally:
        relay.close()
    assert time.monotonic() - started < 15
    assert b"".join(shown) == b"last words\n" and proc.wait() == 0
    assert not (tmp_path / "profiler.log").exists()  # made only when there is a line to keep


@pytest.mark.xdist_group("scheduled_run")
def test_run_shows_the_scripts_output_and_logs_the_profilers(scheduled_run: Recorded) -> None:
    assert scheduled_run.ran.code == 0
    out, err = scheduled_run.ran.out, scheduled_run.ran.err
    assert "out: hello from the script\n" in out and "out: done\n" in out
    assert "err: a STAGE of the script's own, in prose, and a USDT probe\n" in err
    assert "\r 50%|#####\r100%|##########|\n" in err
    noise = re.compile("|".join(known.pattern for known in KNOWN_LINES if not known.shown))
    assert not [line for line in re.split("[\r\n]", err) if noise.search(line)]
    logged = (scheduled_run.profile / "timeline" / "raw" / "profiler.log").read_text().splitlines()
    assert STAGE in logged
    assert all(re.fullmatch("|".join(known.pattern for known in KNOWN_LINES), line) for line in logged), logged
