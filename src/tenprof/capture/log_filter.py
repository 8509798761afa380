"""The profiler library's own log lines, kept out of what the script shows and written to `raw/profiler.log`.

torch.profiler's C++ side (Kineto, and c10's logging in torch's profiler code) prints lines of its own on
the stderr of the process it records: `USDT:... profiler_start` at every start and stop of the profiler,
`[W... CPUAllocator.cpp:...] Memory block of unknown size ...` under a schedule. They are neither the
script's nor tenprof's, so `tenprof run` takes them out of what it shows and keeps them in the pass's raw
folder.

The filter runs in the launcher (the parent), on the bytes it reads from the child's stderr, so nothing is
lost if the child crashes. In a process that profiles itself (`with tenprof.profile(...)`), there is no
parent: `profiler_lines_kept_out` holds the process's stderr in a file around each call into torch's
profiler that prints (start, step, toggle, stop), and passes what is not a known line on; a line c10
prints while the script's own code runs (the CPU allocator's) still shows there.

Everything that is not a known line passes at once and unchanged, partial lines included (a progress
bar's '\\r' updates). A line is held back only while it already matches a known pattern in full and waits
for its newline (Kineto writes the text and then the newline).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import select
import subprocess
import sys
import tempfile
import termios
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

# Kineto's logger (libkineto/src/Logger.cpp): "<LEVEL>:<YYYY-MM-DD HH:MM:SS> <pid>:<tid> <file>:<line>] ".
_KINETO = r"(?:{levels}):\d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d \d+:\d+ [\w.+-]+:\d+\] "
# c10's logging (c10/util/Logging.cpp, MessageLogger): "[W<MMDD> <HH:MM:SS.ns> <file>:<line>] " since torch
# 2.4 ("[W <file>:<line>] " before), after "[rank<N>]:" where the process is a distributed rank.
_C10_WARNING = r"(?:\[rank\d+\]:)?\[W(?:\d{3,4} \d\d:\d\d:\d\d\.\d+)? "
_REST = r"[^\r\n]*"


@dataclass(frozen=True)
class KnownLine:
    name: str
    pattern: str  # the whole line, without its newline
    shown: bool = False  # still shown (and logged): a warning or error the user may need


KNOWN_LINES = (
    # Kineto's USDT markers, `USDT:2026-11-26 10:31:43 3428:3428 SyncActivityProfilerHandler.cpp:52]
    # profiler_start` and `... profiler_stop` (Logger.h, USDT_EMIT_START_TRACE / USDT_EMIT_STOP_TRACE): at
    # every start and stop of the profiler, GPU or CPU (seen with torch 2.11 on the GPU machine and CPU
    # torch 2.13); USDT is Kineto's highest level, above the threshold torch sets, so they always print.
    KnownLine("kineto-usdt", _KINETO.format(levels="USDT") + _REST),
    # Kineto's stage marks, `STAGE:2024-01-01 10:00:00 3428:3428 ActivityProfilerController.cpp:314]
    # Completed Stage: Warm Up` (Logger.h, UST_LOGGER_MARK_COMPLETED: Warm Up, Collection, Post Processing,
    # Cancellation); printed by earlier torch 2 releases, below the threshold of CPU torch 2.13 (not seen).
    KnownLine("kineto-stage", _KINETO.format(levels="STAGE") + r"Completed Stage: " + _REST),
    # Kineto's other levels (V/VERBOSE and INFO only when KINETO_LOG_LEVEL asks for them): they may say
    # why GPU activity is missing, so they are still shown, and kept in the log with the rest.
    KnownLine("kineto-log", _KINETO.format(levels="V|VERBOSE|INFO|WARNING|ERROR") + _REST, shown=True),
    # c10's CPU allocator, under a schedule (a block allocated before the profiler started is freed while
    # it records): `[W1126 10:31:48.144574835 CPUAllocator.cpp:245] Memory block of unknown size was
    # allocated before the profiling started, profiler results will not include the deallocation event`.
    KnownLine(
        "c10-cpu-allocator",
        _C10_WARNING + r"CPUAllocator\.cpp:\d+\] Memory block of unknown size was allocated before the profiling "
        r"started" + _REST,
    ),
    # c10 warnings from torch's profiler sources (torch/csrc/profiler/*, torch/csrc/autograd/profiler_*.cpp),
    # e.g. `[W kineto_shim.cpp:NNN] Profiler is not initialized: skipping step() invocation`; a TORCH_WARN
    # raised outside Python's warning handler (another thread) takes this shape too, "Warning: ...".
    KnownLine(
        "c10-profiler-warning",
        _C10_WARNING
        + r"(?:kineto_shim|kineto_client_interface|profiler_kineto|profiler_legacy|collection|observer)\.cpp:\d+\] "
        + _REST,
    ),
)

_ALL = re.compile("|".join(f"(?P<p{i}>{known.pattern})" for i, known in enumerate(KNOWN_LINES)).encode())
_BY_GROUP = {f"p{i}": known for i, known in enumerate(KNOWN_LINES)}
_LONGEST_HELD = 1 << 16  # a "line" longer than this without a newline is let go


class LogFilter:
    """Splits a byte stream into what is shown (`show`) and the known lines (`log`, each with its newline).

    `feed` as bytes arrive, `close` at the end of the stream. A known line is found wherever it starts
    (also after a progress bar's text, which has no newline of its own)."""

    def __init__(self, show: Callable[[bytes], object], log: Callable[[bytes], object]) -> None:
        self._show = show
        self._log = log
        self._held = b""

    def feed(self, data: bytes) -> None:
        self._held = self._drain(self._held + data, final=False)

    def close(self) -> None:
        self._held = self._drain(self._held, final=True)

    def _drain(self, data: bytes, final: bool) -> bytes:
        while data:
            match = _ALL.search(data)
            if match is None:
                self._show(data)
                return b""
            start, end = match.span()
            if start:
                self._show(data[:start])
            if end == len(data) and not final and end - start < _LONGEST_HELD:
                return data[start:]  # the newline is still to come
            line = match.group() + b"\n"
            self._log(line)
            if _BY_GROUP[str(match.lastgroup)].shown:
                self._show(line)
            data = data[end + 1 :] if data[end : end + 1] == b"\n" else data[end:]
        return b""


class ProfilerLog:
    """`raw/profiler.log`, created at the first line written to it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file: IO[bytes] | None = None

    def write(self, data: bytes) -> None:
        if self._file is None:
            self._file = self.path.open("ab")
        self._file.write(data)
        self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def write_fd(fd: int) -> Callable[[bytes], None]:
    """Writes to a file descriptor (tenprof's stderr: the child's stderr was this very fd before); a closed
    reader (`| head`) is not an error, the child's output is still read to its end."""

    def write(data: bytes) -> None:
        view = memoryview(data)
        while view:
            try:
                view = view[os.write(fd, view) :]
            except InterruptedError:
                continue
            except OSError:
                return

    return write


@contextlib.contextmanager
def profiler_lines_kept_out(log_path: Path) -> Iterator[None]:
    """Around a call into torch's profiler in the profiled process itself: its stderr (file descriptor 2,
    where the C++ side writes) goes to a temporary file while the call runs; then the known lines go to
    `log_path` and everything else to the real stderr, in order."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as held:
        os.dup2(held.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            held.seek(0)
            data = held.read()
            if data:
                log = ProfilerLog(log_path)
                lines = LogFilter(write_fd(2), log.write)
                lines.feed(data)
                lines.close()
                log.close()


class StderrRelay:
    """The child's stderr, read by the parent through the filter: a pseudo-terminal where tenprof's stderr
    is a terminal (so the script still sees a terminal: colours, progress bars, its window size), else a
    pipe. `child_fd` is given to the child as its stderr; `pump` relays until the child has exited and its
    stderr is drained; `close` in any case."""

    def __init__(self, log_path: Path, tty: bool, show: Callable[[bytes], None] | None = None) -> None:
        self.log = ProfilerLog(log_path)
        self._filter = LogFilter(show or write_fd(2), self.log.write)
        self._read_fd, self.child_fd = (_open_pty() if tty else None) or os.pipe()

    def _close_child_end(self) -> None:
        if self.child_fd >= 0:
            os.close(self.child_fd)
            self.child_fd = -1

    def pump(self, proc: subprocess.Popen[Any], poll_s: float = 0.1) -> None:
        """Relay until the end of the child's stderr, or until the child has exited and what it wrote is read
        (a process it started may still hold its stderr open). Call it once the child is started: it closes
        this process's copy of the child's end, so that the end of the child's stderr is seen."""
        self._close_child_end()
        while True:
            exited = proc.poll() is not None
            ready, _, _ = select.select([self._read_fd], [], [], 0 if exited else poll_s)
            if ready:
                data = self._read()
                if not data:
                    return
                self._filter.feed(data)
            elif exited:
                return

    def _read(self) -> bytes:
        try:
            return os.read(self._read_fd, 1 << 16)
        except OSError as exc:  # a pseudo-terminal whose other end is closed
            if exc.errno == errno.EIO:
                return b""
            raise

    def close(self) -> None:
        self._close_child_end()
        self._filter.close()
        self.log.close()
        if self._read_fd >= 0:
            os.close(self._read_fd)
            self._read_fd = -1


def _open_pty() -> tuple[int, int] | None:
    """A pseudo-terminal (reading end, child's end) the size of tenprof's terminal; None where none opens."""
    try:
        read_fd, child_fd = os.openpty()
    except OSError:
        return None
    _copy_window_size(2, child_fd)
    with contextlib.suppress(termios.error):
        # Bytes pass as through a pipe ("\n" stays "\n"); tenprof's terminal does its own translation.
        attrs = termios.tcgetattr(child_fd)
        attrs[1] &= ~termios.OPOST
        termios.tcsetattr(child_fd, termios.TCSANOW, attrs)
    return read_fd, child_fd


def _copy_window_size(src_fd: int, dst_fd: int) -> None:
    with contextlib.suppress(OSError):
        size = fcntl.ioctl(src_fd, termios.TIOCGWINSZ, b"\0" * 8)
        fcntl.ioctl(dst_fd, termios.TIOCSWINSZ, size)
