"""The child process of one pass: `python -m tenprof.capture.child SPEC.json`.

It runs the user's script (or module) as `__main__` with the user's argv under the pass's recorder,
and always tries to save what was recorded: on normal exit, `sys.exit`, an exception, or Ctrl-C.
It writes `child_status.json` into the raw folder and exits with the script's own exit code
(130 after Ctrl-C, 143 after SIGTERM, 1 after an uncaught exception), so `tenprof run` can pass it
through. It runs in a session of its own: the parent forwards exactly one SIGINT per Ctrl-C, so a
script that catches KeyboardInterrupt sees each one, as it would without tenprof.
"""

from __future__ import annotations

import json
import os
import runpy
import signal
import sys
import time
import traceback
from pathlib import Path
from types import TracebackType
from typing import Any

from tenprof.capture.out_of_memory import post_mortem
from tenprof.core.passes import Pass  # not store.schema: that imports pyarrow, which the capture never needs
from tenprof.core.rawfiles import SAVING_FILE, STATUS_FILE
from tenprof.sourcefiles import raised_at

EXIT_CAPTURE_FAILED = 5
_RUNPY = runpy._run_code.__code__.co_filename  # type: ignore[attr-defined]  # '<frozen runpy>' since 3.11


class Terminated(BaseException):
    """SIGTERM (from `timeout`, `kill`, a batch scheduler, or tenprof's parent dying): stop and save."""


def _on_sigterm(signum: int, frame: Any) -> None:
    raise Terminated


def _die_with_parent() -> None:
    """Linux: get SIGTERM if tenprof's own process dies, so the script is never left running alone."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _write_status(raw_dir: Path, status: dict[str, Any]) -> None:
    (raw_dir / STATUS_FILE).write_text(json.dumps(status, indent=2))


def _failure(exc: BaseException, module: str) -> str:
    """Report an exception that ended the script on stderr and return the run's cut-short reason.

    runpy's own ImportError for a `-m` module it cannot find (or run) is one `tenprof: error:` line, as
    Python prints one line for `python -m`; anything the script raised gets its traceback as Python would
    print it, without the frames of tenprof and runpy above the script."""
    if module and isinstance(exc, ImportError) and _raised_by_runpy(exc):
        reason = f"cannot run -m {module}: {exc}"
        if "is a package" in reason:  # runpy: "No module named pkg.__main__; 'pkg' is a package and ..."
            hint = "give one of its modules (-m pkg.module)"
        else:
            hint = "install it in this Python, or run tenprof in the folder that holds it"
        print(f"tenprof: error: {reason}; {hint}", file=sys.stderr)
        return reason
    traceback.print_exception(type(exc), exc, _user_traceback(exc.__traceback__))
    where = raised_at(exc)
    return f"the script raised {exc.__class__.__name__}: {str(exc)[:200]}" + (f" at {where}" if where else "")


def _raised_by_runpy(exc: BaseException) -> bool:
    """True when runpy itself raised `exc` (its innermost frame is runpy's), not the code it ran."""
    frames = traceback.extract_tb(exc.__traceback__)
    return bool(frames) and frames[-1].filename == _RUNPY


def _user_traceback(tb: TracebackType | None) -> TracebackType | None:
    """The traceback from the script's first frame down: the frames of this file and runpy, which only
    started the script, are dropped (None when nothing else is left, e.g. a SyntaxError in the script)."""
    while tb is not None and tb.tb_frame.f_code.co_filename in (__file__, _RUNPY):
        tb = tb.tb_next
    return tb


def _session(spec: dict[str, Any], raw_dir: Path) -> Any:
    """The recorder of the pass the spec names (both have start(), stop() and trace_written)."""
    from tenprof.capture.schedule import Schedule

    schedule = Schedule.parse(spec["schedule"]) if spec.get("schedule") else None
    stop_code = runpy._run_code.__code__  # type: ignore[attr-defined]
    if spec.get("pass") in (Pass.COUNTERS, Pass.STALLS):
        from tenprof.capture.counters import CountersSession

        scopes = tuple(spec.get("replay_scopes", ()))
        return CountersSession(raw_dir, bool(spec.get("keep_all")), scopes, stop_code=stop_code)
    if spec.get("pass") == Pass.TENSORS:
        from tenprof.capture.tensors import TensorsSession

        return TensorsSession(
            raw_dir,
            schedule,
            stop_code=stop_code,
            access_library=spec.get("access_library", ""),
            access_all_ops=bool(spec.get("access_all_ops")),
        )
    from tenprof.capture.timeline import TimelineOptions, TimelineSession

    options = TimelineOptions(
        lines=spec.get("lines", True),
        shapes=spec.get("shapes", True),
        memory=spec.get("memory", True),
        schedule=schedule,
        verify=spec.get("verify", False),
        overhead_steps=int(spec.get("overhead_steps", 0)),
        capture=str(spec.get("capture", "kineto")),
    )
    return TimelineSession(raw_dir, options, stop_code=stop_code)


def run_child(spec: dict[str, Any]) -> int:
    raw_dir = Path(spec["raw_dir"])
    raw_dir.mkdir(parents=True, exist_ok=True)
    status: dict[str, Any] = {
        "exit_code": None,
        "cut_short": False,
        "reason": "",
        "trace_written": False,
        "pid": os.getpid(),  # names the access pass's files (per process: the script may start others)
    }
    try:
        import torch  # noqa: F401
    except ImportError:
        status["error"] = "torch is not installed in this Python; install it (pip install torch) to capture"
        _write_status(raw_dir, status)
        return EXIT_CAPTURE_FAILED

    from tenprof.capture import environment

    status["env"] = environment.describe()
    target: str = spec["target"]
    sys.argv = [target, *spec.get("args", [])]
    if not spec.get("module"):
        sys.path.insert(0, os.path.dirname(os.path.abspath(target)))
    else:
        sys.path.insert(0, os.getcwd())
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _on_sigterm)
    _die_with_parent()
    session = _session(spec, raw_dir)
    # In every pass alike, so that torch.compile generates the same kernels under the same names in each run:
    # Inductor's provenance tracking (each kernel's stack traces; kernels merged as in a plain run), and with
    # --compiled-lines its origin comments, off by default because they change the program (identical kernels
    # of different lines are no longer merged: compiled GPT-2 launched 440 kernels, not 45; capture/compiled_code.py)
    from tenprof.capture.compiled_code import prepare_inductor

    prepare_inductor(bool(spec.get("compiled_lines")))
    try:
        session.start()
    except Exception as exc:
        status["error"] = (
            f"the {spec.get('pass', 'timeline')} recorder could not start: {exc.__class__.__name__}: {exc}"
        )
        _write_status(raw_dir, status)
        return EXIT_CAPTURE_FAILED
    if getattr(session, "access_error", ""):
        status["access_error"] = session.access_error
    started = time.perf_counter()
    exit_code = 0
    # The exception that ended the script, held until the recording stops: its traceback keeps the script's
    # frames, and so its tensors, alive. Let go of at the end of its `except` block, the module's globals and
    # the tensors they hold are freed before the stop, and the recording ends with what held the memory at
    # an out-of-memory error already given back.
    ended_by: BaseException | None = None
    try:
        if spec.get("module"):
            runpy.run_module(target, run_name="__main__", alter_sys=True)
        else:
            runpy.run_path(target, run_name="__main__")
    except SystemExit as exc:
        code = exc.code
        exit_code = code if isinstance(code, int) else (0 if code is None else 1)
        if code is not None and not isinstance(code, int):
            print(code, file=sys.stderr)
        if exit_code != 0:
            status.update(cut_short=True, reason=f"the script exited with status {exit_code}")
    except KeyboardInterrupt as exc:
        ended_by = exc
        exit_code = 130
        where = raised_at(exc)
        status.update(cut_short=True, reason="interrupted by Ctrl-C" + (f" at {where}" if where else ""))
    except Terminated as exc:
        ended_by = exc
        exit_code = 143
        where = raised_at(exc)
        status.update(cut_short=True, reason="terminated by SIGTERM" + (f" at {where}" if where else ""))
    except BaseException as exc:
        ended_by = exc
        exit_code = 1
        memory = post_mortem(exc, raw_dir)  # first: the script's tensors are still held by the traceback
        if memory is not None:
            status["out_of_memory"] = {**memory, "where": raised_at(exc)}
        status.update(cut_short=True, reason=_failure(exc, target if spec.get("module") else ""))
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # saving must not be cut short in turn
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        (raw_dir / SAVING_FILE).touch()  # the launcher kills a terminated child only before this
        status["wall_time_s"] = time.perf_counter() - started
        try:
            session.stop()
        except Exception as exc:
            status["error"] = f"saving the trace failed: {exc.__class__.__name__}: {exc}"
        del ended_by  # the script's frames may go now
        try:  # each run's own generated files: the ones its kernels' line info points at
            from tenprof.capture.compiled_code import dump_compiled_code

            status["compiled_modules"] = dump_compiled_code(raw_dir)
        except Exception as exc:  # attribution of compiled kernels is lost, the trace is not
            status["compiled_code_error"] = f"{exc.__class__.__name__}: {exc}"
        status["trace_written"] = session.trace_written
        status["exit_code"] = exit_code
        status["cuda_device"] = _cuda_device()
        _write_status(raw_dir, status)
    return exit_code


def _cuda_device() -> int:
    """The CUDA device the script used (the current one at its end), -1 when CUDA was never used."""
    try:
        import torch

        return int(torch.cuda.current_device()) if torch.cuda.is_initialized() else -1  # type: ignore[no-untyped-call]
    except Exception:
        return -1


def main() -> None:
    spec = json.loads(Path(sys.argv[1]).read_text())
    code = run_child(spec)
    sys.stdout.flush()
    sys.stderr.flush()
    sys.exit(code)


if __name__ == "__main__":
    main()
