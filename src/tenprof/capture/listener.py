"""The listener of a job started for on-demand capture: a Unix socket that `tenprof capture PID` talks to.

The socket is `<dir>/<pid>.sock` in a directory of the job's user alone: `$XDG_RUNTIME_DIR/tenprof`
where that is set, else `/tmp/tenprof-<uid>`, made with mode 0700 and refused when another user owns it
or others may enter it; the socket itself is 0600. Nothing listens on a network port.

Protocol: the client sends one JSON line, at most MAX_REQUEST bytes:
    {"tenprof": "capture", "version": 1, "steps": N, "output": "/abs/dir", "force": false, "at_step": S}
(`at_step`, optional: start once S steps have ended, so every rank of a job records the same steps), or
    {"tenprof": "status", "version": 1}
answered with the job's pid, rank, world size, job key (its launcher's run id) and steps so far.
and reads JSON lines back: {"ok": false, "error": "..."} and the end; or {"ok": true, "state": "armed"},
then {"ok": true, "state": "done", "profile": ...} (or {"ok": false, "error": ...}) when the capture ended.
A request is checked here, field by field: anything else, or a field of another type, is refused in one
line. A request names only how many steps and the output directory: it cannot make the job run code, and
the job writes only that directory (tenprof's own output rules: an existing folder only with force, and
only if it is a tenprof profile). One capture at a time: a second is refused, naming the first's output.

`Listener(on_request)` runs a daemon thread; `on_request(request, reply)` is called on that thread with a
checked `CaptureRequest` and a `reply(dict)` that writes a line to the client (false once the client is
gone); the listener waits until the capture's final reply before it closes the connection.
"""

from __future__ import annotations

import json
import os
import socket
import stat
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MAX_REQUEST = 4096
MAX_STEPS = 100_000
PROTOCOL = 1


class ListenerError(Exception):
    """The listener cannot be made (a directory that is not the user's alone, a socket already there)."""


@dataclass(frozen=True)
class CaptureRequest:
    steps: int
    output: str  # absolute
    force: bool
    at_step: int = -1  # start when this many steps have ended (the same step on every rank); -1: the next
    seconds: float = 0.0  # > 0: record this long from now, steps or not (steps is then 0)


STATUS = "status"  # a request for the job's identity and its steps so far: {"tenprof": "status", "version": 1}


def socket_dir() -> Path:
    """The user's private directory for listeners (see the module)."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    return Path(runtime) / "tenprof" if runtime else Path("/tmp") / f"tenprof-{os.getuid()}"


def socket_path(pid: int) -> Path:
    return socket_dir() / f"{pid}.sock"


def private_dir() -> Path:
    """`socket_dir()`, made 0700 if missing; ListenerError where another user owns it or others may enter."""
    folder = socket_dir()
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = folder.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise ListenerError(f"{folder} must be a directory of this user alone (mode 0700)")
    return folder


FIELDS = {
    "capture": {"tenprof", "version", "steps", "seconds", "output", "force", "at_step"},
    STATUS: {"tenprof", "version"},
}
MAX_SECONDS = 3600.0


def parse_request(line: bytes) -> CaptureRequest | str | None:
    """The capture request, None for a status request, or why it is refused (one line)."""
    try:
        given = json.loads(line)
    except ValueError:
        return "not a tenprof request"
    if not isinstance(given, dict) or given.get("tenprof") not in FIELDS:
        return "not a tenprof request"
    unknown = set(given) - FIELDS[given["tenprof"]]
    if unknown:
        return f"unknown fields: {', '.join(sorted(unknown))}"
    if given.get("version") != PROTOCOL:
        return f"protocol version {given.get('version')!r} is not this tenprof's ({PROTOCOL}): use the same tenprof"
    if given["tenprof"] == STATUS:
        return None
    steps, output, force = given.get("steps", 0), given.get("output"), given.get("force", False)
    at_step, seconds = given.get("at_step", -1), given.get("seconds", 0)
    if not isinstance(seconds, int | float) or isinstance(seconds, bool) or not 0 <= seconds <= MAX_SECONDS:
        return f"seconds must be a number from 0 to {MAX_SECONDS:.0f}"
    if seconds and steps != 0:
        return "give steps or seconds, not both"
    if not isinstance(at_step, int) or isinstance(at_step, bool) or at_step < -1:
        return "at_step must be a whole number"
    if not seconds and (not isinstance(steps, int) or isinstance(steps, bool) or not 1 <= steps <= MAX_STEPS):
        return f"steps must be a whole number from 1 to {MAX_STEPS}"
    if not isinstance(output, str) or not output or not os.path.isabs(output) or "\0" in output:
        return "output must be an absolute path"
    if not isinstance(force, bool):
        return "force must be true or false"
    return CaptureRequest(int(steps), os.path.normpath(output), force, at_step, float(seconds))


class Listener:
    """The socket and its thread (see the module)."""

    def __init__(
        self,
        on_request: Callable[[CaptureRequest, Callable[[dict[str, Any]], bool]], None],
        status: Callable[[], dict[str, Any]],
    ) -> None:
        self.path = private_dir() / f"{os.getpid()}.sock"
        if self.path.exists():  # a listener of a process that had this pid and did not clean up
            self.path.unlink()
        self._status = status
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)  # the socket is made 0600, never readable by others for an instant
        try:
            self._server.bind(str(self.path))
        finally:
            os.umask(old)
        self._server.listen(4)
        self._on_request = on_request
        self._thread = threading.Thread(target=self._serve, name="tenprof-listener", daemon=True)
        self._thread.start()

    def close(self) -> None:
        try:
            self._server.close()
        finally:
            self.path.unlink(missing_ok=True)

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self._server.accept()
            except OSError:  # closed
                return
            # each client on a thread of its own: a second request is answered (refused) while a capture runs
            threading.Thread(
                target=self._answer, args=(connection,), name="tenprof-listener-client", daemon=True
            ).start()

    def _answer(self, connection: socket.socket) -> None:
        with connection:
            self._answer_on(connection)

    def _answer_on(self, connection: socket.socket) -> None:
        connection.settimeout(10)
        try:
            line = connection.makefile("rb").readline(MAX_REQUEST + 1)
        except OSError:
            return
        connection.settimeout(None)

        def reply(message: dict[str, Any]) -> bool:
            try:
                connection.sendall(json.dumps(message).encode() + b"\n")
                return True
            except OSError:  # the client went away; the capture goes on and is saved
                return False

        request = parse_request(line) if len(line) <= MAX_REQUEST else "the request is too long"
        if isinstance(request, str):
            reply({"ok": False, "error": request})
            return
        # a handler that raises is answered with its error: a connection closed with no answer reads to the
        # client as a listener that is gone (--all-ranks would leave the rank out without a word)
        if request is None:
            try:
                status = self._status()
            except Exception as exc:
                reply({"ok": False, "error": f"the job could not say its status: {exc!r}"})
                return
            reply({"ok": True, **status})
            return
        done = threading.Event()

        def final(message: dict[str, Any]) -> bool:
            sent = reply(message)
            if message.get("state") != "armed":
                done.set()
            return sent

        try:
            self._on_request(request, final)
        except Exception as exc:
            final({"ok": False, "error": f"the job could not take the request: {exc!r}"})
        done.wait()
