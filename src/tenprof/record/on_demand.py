"""On-demand capture: a running job records its next N steps when `tenprof capture PID` asks, with no
capture at all before (`tenprof run --on-demand script.py`, or `tenprof.listen()` in a script started
without tenprof).

`listen()` starts a listener (capture.listener: a Unix socket of the user's alone) and hooks tenprof.step().
A checked request arms a capture; the job's next `tenprof.step()` starts a timeline session in this process
(the same recorder and profile as `tenprof.profile()`, every step recorded), the N steps after it are
recorded, and the N-th step's end stops it and writes the profile into the request's output directory;
then the job goes on as before, with nothing recorded. The client hears "armed" at once and "done" (or
the error) when the profile is written. Until a request comes the job pays one short call per
tenprof.step() and a thread blocked in accept(); the recorder and the profile's store (pyarrow, pydantic,
the capture's modules) are imported by the first request, on the listener's thread, not by listen().

The recording stops at the N-th step's end on the job's thread (which started it); the profile's tables are
then built on a thread of their own while the job goes on (sharing the interpreter's lock with it for
that second or so). A capture by time (`--seconds S`, for a job with no tenprof.step()) is started and
stopped on the job's main thread too: the listener wakes it with WAKE, whose handler runs between two
of its Python instructions (a thread inside one long native call, such as a GPU synchronization, starts
or stops when that call returns).

The job ending during a capture (its script returns or raises, or sys.exit) saves what was recorded,
marked partial; an armed capture that never started is answered with why.
"""

from __future__ import annotations

import atexit
import importlib
import os
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tenprof.capture.listener import CaptureRequest, Listener
from tenprof.capture.ranks import rank_from_env
from tenprof.capture.runtime import add_step_hook

if TYPE_CHECKING:
    from tenprof.record.inprocess import InProcessProfile

Reply = Callable[[dict[str, Any]], bool]


LOAD_ATTEMPTS = 3
LOAD_RETRY_S = 0.5


def _load_recorder() -> None:
    """Import the recorder and the profile's store (pyarrow, pydantic, the capture's modules) on the calling
    listener thread: a job never captured never loads them, and a capture's first step does not wait for them.
    Tried again after a pause where the import fails: it runs beside the job's own imports on its main
    thread (torch's and numpy's, lazily at a first call), and an import that meets another thread's import of
    a module it needs can find that module half made; Python drops a failed import from sys.modules, so the
    next attempt starts clean once the job's import has finished. The last failure is raised."""
    for attempt in range(LOAD_ATTEMPTS):
        try:
            importlib.import_module("tenprof.record.inprocess")  # it imports the store too
            return
        except Exception:
            if attempt == LOAD_ATTEMPTS - 1:
                raise
            time.sleep(LOAD_RETRY_S)


# wakes the job's main thread to start and stop a capture by time: ignored by default and by Python, and
# used by no library the listener knows of (a job that handles it itself gets no capture by time)
WAKE = signal.SIGURG

_listening: OnDemand | None = None


def job_key() -> str:
    """What the ranks of one job share: its launcher's run id (torchrun's), else its rendezvous address."""
    env = os.environ
    if env.get("TORCHELASTIC_RUN_ID"):
        return f"torchrun:{env['TORCHELASTIC_RUN_ID']}"
    if env.get("MASTER_ADDR") and env.get("MASTER_PORT"):
        return f"{env['MASTER_ADDR']}:{env['MASTER_PORT']}"
    return ""


def listen() -> Path:
    """Start listening for `tenprof capture` (once per process); the socket's path."""
    global _listening
    if _listening is None:
        _listening = OnDemand()
    return _listening.listener.path


class OnDemand:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._armed: tuple[CaptureRequest, Reply] | None = None
        self._running: tuple[CaptureRequest, Reply, InProcessProfile] | None = None
        # taken from armed and starting (its recorder not yet running): a second request is still refused
        self._starting: CaptureRequest | None = None
        self._left = 0
        self._saving: threading.Thread | None = None
        self._steps = 0  # tenprof.step() calls so far
        self._deadline = 0.0  # a capture by time's end (monotonic clock)
        # a capture by time starts and stops on the job's main thread, woken by WAKE (see _on_wake): only where
        # listen() runs on that thread and the job has no handler of its own for that signal
        self._can_wake = threading.current_thread() is threading.main_thread() and signal.getsignal(WAKE) in (
            signal.SIG_DFL,
            signal.SIG_IGN,
            None,
        )
        if self._can_wake:
            signal.signal(WAKE, self._on_wake)
        self.listener = Listener(self._request, self._status)
        add_step_hook(self._on_step)
        atexit.register(self._at_exit)

    def _request(self, request: CaptureRequest, reply: Reply) -> None:
        """On the listener's thread: arm a capture, or refuse it."""
        _load_recorder()
        from tenprof.store.directory import is_profile_dir

        with self._lock:
            busy = self._running[0] if self._running else self._armed[0] if self._armed else self._starting
            if busy is not None:
                running = f"a capture is already running in process {os.getpid()}, into {busy.output}"
                reply({"ok": False, "error": running})
                return
            if request.seconds and not self._can_wake:
                reply({"ok": False, "error": "capture by time needs the listener started on the job's main thread, "
                       f"with {WAKE.name} not handled by the job"})  # fmt: skip
                return
            target = Path(request.output)
            if target.exists() and not request.force:
                reply({"ok": False, "error": f"{target} already exists (--force replaces a tenprof profile)"})
                return
            if target.exists() and not is_profile_dir(target):
                reply({"ok": False, "error": f"{target} exists and is not a tenprof profile: it is left as it is"})
                return
            if 0 <= request.at_step <= self._steps and not request.seconds:
                # started later it would record other steps than the ranks that asked in time
                reply({"ok": False, "error": f"step {request.at_step} had begun when the request came (this "
                       f"process has ended {self._steps} steps): ask for a later --at-step"})  # fmt: skip
                return
            self._armed = (request, reply)
        reply({"ok": True, "state": "armed", "pid": os.getpid(), "steps": request.steps, "step": self._steps})
        if request.seconds:  # the main thread starts it between two of its instructions
            signal.pthread_kill(threading.main_thread().ident or 0, WAKE)

    def _status(self) -> dict[str, Any]:
        """Who this job is (rank, world size, its launcher's run), and how many steps it has ended. The
        recorder is loaded first: a status request announces a capture (`--all-ranks` asks every rank for
        it, then for the steps again, before it picks the step to start at)."""
        _load_recorder()
        rank = rank_from_env()
        return {
            "pid": os.getpid(),
            "rank": rank.rank if rank is not None else -1,
            "world_size": rank.world_size if rank is not None else 1,
            "job": job_key(),
            "step": self._steps,
        }

    def _on_step(self) -> None:
        """At every tenprof.step(), on the job's thread."""
        armed: tuple[CaptureRequest, Reply] | None = None
        with self._lock:
            self._steps += 1
            running = self._running is not None
            if running and self._running is not None and self._running[0].seconds:
                return  # a capture by time ends by time
            if running:
                self._left -= 1
                finished = self._left <= 0
            elif self._armed is not None and not self._armed[0].seconds and self._steps >= self._armed[0].at_step:
                armed, self._armed = self._armed, None
                self._starting = armed[0]
        if running:
            if finished:
                self._finish("")
        elif armed is not None:
            self._start(*armed)

    def _on_wake(self, signum: int, frame: object) -> None:
        """WAKE's handler, on the main thread: start an armed capture by time, or end one whose time is up."""
        armed: tuple[CaptureRequest, Reply] | None = None
        with self._lock:
            running = self._running
            if running is None and self._armed is not None and self._armed[0].seconds:
                armed, self._armed = self._armed, None
                self._starting = armed[0]
        if running is not None and running[0].seconds and time.monotonic() >= self._deadline - 0.05:
            self._finish("")
        elif armed is not None:
            self._start(*armed)
            if self._running is not None:
                self._deadline = time.monotonic() + armed[0].seconds
                main = threading.main_thread().ident or 0
                timer = threading.Timer(armed[0].seconds, signal.pthread_kill, args=(main, WAKE))
                timer.daemon = True
                timer.start()

    def _start(self, request: CaptureRequest, reply: Reply) -> None:
        from tenprof.record.inprocess import InProcessProfile

        profile = InProcessProfile(request.output, force=request.force, overhead_steps=0)
        try:
            profile.__enter__()
        except Exception as exc:  # the output could not be made, the recorder could not start
            with self._lock:
                self._starting = None
            reply({"ok": False, "error": f"the capture could not start: {exc.__class__.__name__}: {exc}"})
            return
        with self._lock:
            self._running, self._left, self._starting = (request, reply, profile), request.steps, None

    def _finish(self, cut_short: str) -> None:
        """Stop the recording here (the job's thread, which started it), then build the profile on a thread
        of its own, so the job goes on meanwhile (at the job's end, here: nothing is left to wait for)."""
        with self._lock:
            running, self._running = self._running, None
        if running is None:
            return
        request, reply, profile = running
        if cut_short:
            profile.cut_short(cut_short)
        try:
            profile.stop_recording()
        except Exception as exc:
            reply({"ok": False, "error": f"stopping the capture failed: {exc.__class__.__name__}: {exc}"})
            return
        if cut_short:
            self._save(request, reply, profile, cut_short)
            return
        self._saving = threading.Thread(
            target=self._save, args=(request, reply, profile, cut_short), name="tenprof-on-demand-save"
        )
        self._saving.start()

    def _save(self, request: CaptureRequest, reply: Reply, profile: InProcessProfile, cut_short: str) -> None:
        try:
            profile.save()
        except Exception as exc:
            reply({"ok": False, "error": f"saving the capture failed: {exc.__class__.__name__}: {exc}"})
            return
        partial = profile.profile.meta.passes["timeline"].state != "complete"
        reply({"ok": True, "state": "done", "profile": request.output, "partial": partial, "why": cut_short})

    def _at_exit(self) -> None:
        """The job is ending: a capture running is saved (partial), one being built is waited for, one armed
        is told it never started."""
        self._finish("the job ended during the capture")
        if self._saving is not None:
            self._saving.join()
        with self._lock:
            armed, self._armed = self._armed, None
        if armed is not None:
            armed[1]({"ok": False, "error": "the job ended before its next tenprof.step(): nothing was recorded"})
        self.listener.close()
