"""The GPU tests' session end: say what could keep the test process from exiting.

On the GPU machine (H200, 2026-12-01) a `pytest -m gpu` of four files printed "17 passed" and then did not exit
until its timeout killed it. A thread that is not a daemon, or a child process, left by a capture outlives the
tests and holds the interpreter at its exit; this names them (with the stack each thread stands in), and where
the process is still there a minute after the session's end (stuck in an exit handler, say) every thread's
stack is written to stderr, so that the next run says which. Only when GPU tests ran.

That hang was in C, after the interpreter had finalized (so neither of these saw it: Kineto's CUPTI
teardown thread, see tenprof.capture.kineto_teardown); `bash scripts/gpu_record.sh exit36` finds such a
process from outside and takes its native stacks.
"""

from __future__ import annotations

import faulthandler
import sys
import threading
import traceback
from pathlib import Path

import pytest

STUCK_AFTER_S = 60  # the session's end to a dump of every thread's stack, should the process still be there


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    import multiprocessing

    if not any(item.get_closest_marker("gpu") for item in session.items):
        return
    faulthandler.dump_traceback_later(STUCK_AFTER_S, exit=False)  # cancelled by nothing: the process exits first

    frames = sys._current_frames()
    left = [t for t in threading.enumerate() if t is not threading.main_thread() and not t.daemon]
    children = multiprocessing.active_children()
    others = _child_commands()  # started by subprocess too (Inductor's compile workers, a launcher's child)
    write = session.config.get_terminal_writer().line
    write("")  # off the progress line
    if not left and not children and not others:
        write("gpu tests: no thread or child process left to wait for at exit")
        return
    for thread in left:
        stack = "".join(traceback.format_stack(frames[thread.ident])) if thread.ident in frames else "(no frame)\n"
        write(f"gpu tests: thread {thread.name!r} (not a daemon) still runs at exit:\n{stack}")
    for child in children:
        write(f"gpu tests: child process {child.name} (pid {child.pid}) still runs at exit")
    for pid, command in others.items():
        write(f"gpu tests: child process {pid} still runs at exit: {command}")


def _child_commands() -> dict[int, str]:
    """This process's child processes, pid to command line, from /proc (empty where it cannot be read)."""
    found: dict[int, str] = {}
    for listing in Path("/proc/self/task").glob("*/children"):
        try:
            pids = [int(p) for p in listing.read_text().split()]
        except (OSError, ValueError):
            continue
        for pid in pids:
            try:
                found[pid] = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                found[pid] = "?"
    return found
