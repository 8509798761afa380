"""`tenprof run`: start one child process per pass, then build the profile from what they recorded.

This module does not import torch: the child does. The parent forwards Ctrl-C to the child (which
stops the script and saves), waits, imports the raw recording into tables, and writes meta.json.
Whatever happens to the child, what it managed to record is kept under `<dir>/<pass>/raw/`.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tenprof import __version__
from tenprof.capture.rawfiles import CALLSITES_FILE, CHECKS_FILE, STATUS_FILE, TRACE_FILE
from tenprof.capture.schedule import Schedule
from tenprof.errors import TenprofError, UsageError
from tenprof.importers.trace_import import build_pass, now_iso
from tenprof.store.directory import prepare_output_dir
from tenprof.store.meta import GpuInfo, Meta, PassStatus, write_meta
from tenprof.store.writer import PassWriter

PASSES = ("timeline",)


@dataclass
class RunRequest:
    target: str
    args: list[str]
    module: bool
    out_dir: Path
    force: bool = False
    passes: tuple[str, ...] = ("timeline",)
    lines: bool = True
    shapes: bool = True
    memory: bool = True
    schedule: str = ""
    verify: bool = False
    python: str = field(default_factory=lambda: sys.executable)


@dataclass
class RunResult:
    exit_code: int
    meta: Meta


def _check_request(req: RunRequest) -> None:
    unknown = [p for p in req.passes if p not in PASSES]
    if unknown:
        raise UsageError(f"unknown pass {unknown[0]!r}; available: {', '.join(PASSES)}")
    if not req.module and not Path(req.target).is_file():
        raise UsageError(f"{req.target}: no such script")
    if req.schedule:
        Schedule.parse(req.schedule)


def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    # The child must import this very tenprof, also when it runs from a source checkout.
    src = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def _run_child(req: RunRequest, raw_dir: Path) -> int:
    spec = {
        "raw_dir": str(raw_dir),
        "target": req.target,
        "args": req.args,
        "module": req.module,
        "lines": req.lines,
        "shapes": req.shapes,
        "memory": req.memory,
        "schedule": req.schedule,
        "verify": req.verify,
    }
    spec_path = raw_dir / "spec.json"
    spec_path.write_text(json.dumps(spec))
    # A session of its own: a Ctrl-C at the terminal reaches only this process, which forwards exactly
    # one SIGINT; SIGTERM and SIGHUP are forwarded as SIGTERM. The child saves on either.
    proc = subprocess.Popen(
        [req.python, "-m", "tenprof.capture.child", str(spec_path)], env=_child_env(), start_new_session=True
    )

    def forward(signum: int, frame: Any) -> None:
        try:
            proc.send_signal(signal.SIGINT if signum == signal.SIGINT else signal.SIGTERM)
        except OSError:
            pass

    watched = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    previous = {s: signal.signal(s, forward) for s in watched}
    try:
        return proc.wait()
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


def run_profile(req: RunRequest) -> RunResult:
    _check_request(req)
    prepare_output_dir(req.out_dir, req.force)
    command = (["-m", req.target] if req.module else [req.target]) + req.args
    meta = Meta(
        tenprof_version=__version__,
        created_at=now_iso(),
        source="run",
        command=command,
        cwd=os.getcwd(),
        options={
            "passes": ",".join(req.passes),
            "lines": str(req.lines).lower(),
            "shapes": str(req.shapes).lower(),
            "memory": str(req.memory).lower(),
            "schedule": req.schedule,
        },
    )
    meta.passes["timeline"] = PassStatus(state="running", started_at=meta.created_at)
    write_meta(req.out_dir, meta)

    writer = PassWriter(req.out_dir, "timeline")
    raw_dir = writer.tmp_dir / "raw"
    raw_dir.mkdir()
    started = time.perf_counter()
    code = _run_child(req, raw_dir)
    # From here on, what was recorded is turned into tables and meta.json; a Ctrl-C now would only lose
    # work, so it is ignored until the profile is written (the raw files are kept in any case).
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        meta = _finish_run(req, writer, raw_dir, meta, code, started)
    finally:
        signal.signal(signal.SIGINT, previous)
    return RunResult(code if code >= 0 else 128 - code, meta)


def _finish_run(req: RunRequest, writer: PassWriter, raw_dir: Path, meta: Meta, code: int, started: float) -> Meta:
    status: dict[str, Any] = {}
    try:
        if (raw_dir / STATUS_FILE).exists():
            status = json.loads((raw_dir / STATUS_FILE).read_text())
        env = status.get("env", {})
        meta.host = env.get("host", "")
        meta.python_version = env.get("python_version", "")
        meta.torch_version = env.get("torch_version", "")
        meta.cuda_version = env.get("cuda_version", "")
        meta.driver_version = env.get("driver_version", "")
        meta.gpus = [GpuInfo(**g) for g in env.get("gpus", [])]
        meta.run.exit_code = code
        meta.run.wall_time_s = float(status.get("wall_time_s", time.perf_counter() - started))
        if status:
            meta.run.cut_short = bool(status.get("cut_short"))
            meta.run.cut_short_reason = str(status.get("reason", ""))
        else:
            meta.run.cut_short = True
            meta.run.cut_short_reason = (
                f"the profiled process was killed by {_signal_name(code)}" if code < 0 else "the profiled process died"
            )
        pass_status = finish_timeline(writer, raw_dir, meta, str(status.get("error", "")), req.schedule)
    except Exception as exc:  # never lose the recording to a bug in building the tables
        pass_status = PassStatus(state="failed", reason=f"building the profile failed: {exc.__class__.__name__}: {exc}")
    pass_status.duration_s = time.perf_counter() - started
    pass_status.rows = dict(writer.rows)
    writer.commit()  # raw files are kept even when the pass failed
    meta.passes["timeline"] = pass_status
    write_meta(req.out_dir, meta)
    return meta


def finish_timeline(writer: PassWriter, raw_dir: Path, meta: Meta, child_error: str, schedule: str) -> PassStatus:
    """Raw recording -> tables, for `tenprof run` and `tenprof.profile()` alike. A bad recording gives a
    failed status saying what went wrong (the raw files stay where they are); only bugs raise."""
    trace = raw_dir / TRACE_FILE
    pass_status = PassStatus(state="failed", started_at=meta.created_at)
    if child_error and not trace.exists():
        pass_status.reason = child_error
    elif not trace.exists():
        pass_status.reason = (
            "no trace was written"
            + (
                " (the --schedule's active steps were never reached; does the script call tenprof.step()?)"
                if schedule
                else ""
            )
            + (f"; {meta.run.cut_short_reason}" if meta.run.cut_short_reason else "")
        )
    else:
        try:
            report = build_pass(writer, trace, raw_dir / CALLSITES_FILE)
            pass_status.state = "partial" if meta.run.cut_short else "complete"
            pass_status.reason = "; ".join(
                ([f"cut short: {meta.run.cut_short_reason}"] if meta.run.cut_short else []) + report.warnings
            )
            meta.options["trace_span_ns"] = str(report.span_end_ns - report.span_start_ns)
            meta.options["clock_offset_ns"] = str(report.clock_offset_ns)
            meta.options["clock_uncertainty_ns"] = str(report.clock_uncertainty_ns)
            _compress(trace)
        except TenprofError as exc:
            pass_status.reason = f"the trace could not be imported: {exc}"
    if (raw_dir / CHECKS_FILE).exists():
        meta.checks = json.loads((raw_dir / CHECKS_FILE).read_text())
    return pass_status


def _compress(path: Path) -> None:
    with path.open("rb") as src, gzip.open(str(path) + ".gz", "wb", compresslevel=1) as dst:
        shutil.copyfileobj(src, dst, length=1 << 20)
    path.unlink()
