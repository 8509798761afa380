"""`tenprof run`: one child process per pass, in turn; each pass's recording becomes its tables.

This module does not import torch: the child does. The parent forwards Ctrl-C to the child (which
stops the script and saves), waits, imports the raw recording into tables, and writes meta.json.
Whatever happens to the child, what it managed to record is kept under `<dir>/<pass>/raw/`.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tenprof.capture.accesses_build import (
    DEFAULT_EVERY,
    AccessTool,
    AccessToolUnavailable,
    build_access_tool,
    find_toolkit,
)
from tenprof.capture.log_filter import LogFilter, ProfilerLog, StderrRelay
from tenprof.capture.module_lookup import module_problem
from tenprof.capture.ncu_runner import Progress, find_ncu, ncu_command
from tenprof.capture.overhead_plan import DEFAULT_COUNT as DEFAULT_OVERHEAD_STEPS
from tenprof.capture.ranks import RankInfo
from tenprof.capture.schedule import Schedule
from tenprof.core.rawfiles import (
    KILLED_FILE,
    NCU_LOG_FILE,
    NCU_REPORT_BASE,
    PROFILER_LOG_FILE,
    SAVING_FILE,
    STATUS_FILE,
)
from tenprof.core.version import VERSION
from tenprof.errors import UsageError
from tenprof.importers.timeline_import import now_iso
from tenprof.record.pass_builders import (
    expected_replays_of,
    finish_accesses,
    finish_counters,
    finish_stalls,
    finish_tensors,
    finish_timeline,
)
from tenprof.store.directory import open_output_dir
from tenprof.store.meta import GpuInfo, Meta, OutOfMemory, PassStatus, TimelineInfo, write_meta
from tenprof.store.schema import Pass
from tenprof.store.writer import PassWriter

PASSES = tuple(Pass)  # in the order they run
NCU_PASSES = (Pass.COUNTERS, Pass.STALLS)
STOP_GRACE_S = 10.0  # see stop_grace_s


def all_passes(ncu: str = "") -> tuple[tuple[str, ...], dict[str, str]]:
    """`--passes all`: the passes that can run here, and why each of the others cannot. The timeline and
    tensors passes always; the ncu passes (counters, stalls) where ncu and a GPU are found, and the
    accesses pass where the CUDA toolkit (nvcc, compute-sanitizer) and a GPU are."""
    passes: list[str] = [Pass.TIMELINE, Pass.TENSORS]
    left_out: dict[str, str] = {}
    if not gpu_present():
        return tuple(passes), dict.fromkeys((*NCU_PASSES, Pass.ACCESSES), "no NVIDIA GPU here")
    for name in NCU_PASSES:
        try:
            find_ncu(ncu, name)
            passes.append(name)
        except UsageError:
            left_out[name] = "ncu (Nsight Compute) was not found; --ncu PATH names it"
    try:
        find_toolkit()
        passes.append(Pass.ACCESSES)
    except AccessToolUnavailable as exc:
        left_out[Pass.ACCESSES] = str(exc)
    return tuple(passes), left_out


def gpu_present() -> bool:
    """An NVIDIA GPU on this machine, seen without CUDA (the launcher never initialises it): a device
    node of the driver, or a GPU that nvidia-smi lists."""
    if Path("/dev/nvidia0").exists():
        return True
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return False
    try:
        listed = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=20, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return False
    return "GPU" in listed


@dataclass
class RunRequest:
    target: str
    args: list[str]
    module: bool
    out_dir: Path
    force: bool = False
    passes: tuple[str, ...] = (Pass.TIMELINE,)
    lines: bool = True
    shapes: bool = True
    memory: bool = True
    schedule: str = ""
    verify: bool = False
    ncu: str = ""
    counters_all: bool = False
    access_every: int = DEFAULT_EVERY
    access_all_ops: bool = False  # record every op's launches, not the first of each (op, line, input layouts)
    replay_scopes: tuple[str, ...] = ()
    rank: RankInfo | None = None
    overhead_steps: int = DEFAULT_OVERHEAD_STEPS
    capture: str = "kineto"  # the timeline pass's capture: kineto, or native (experimental)
    # Inductor's origin comments on in every pass: each compiled kernel's source lines written into it, at the
    # price of a program whose identical kernels of different lines are not merged (capture/compiled_code.py)
    compiled_lines: bool = False
    quiet: bool = False  # no progress or notes from tenprof (errors and failed passes are still said)
    python: str = field(default_factory=lambda: sys.executable)


@dataclass
class RunResult:
    exit_code: int
    meta: Meta


def _check_request(req: RunRequest) -> None:
    unknown = [p for p in req.passes if p not in PASSES]
    if unknown:
        raise UsageError(f"unknown pass {unknown[0]!r}; available: {', '.join(PASSES)}")
    repeated = sorted({p for p in req.passes if req.passes.count(p) > 1})
    if repeated:
        raise UsageError(f"pass {repeated[0]!r} given twice in --passes")
    if not req.module and not Path(req.target).is_file():
        raise UsageError(f"{req.target}: no such script")
    if req.module and req.python == sys.executable:  # another Python has its own modules: it will say
        problem = module_problem(req.target, [os.getcwd(), *sys.path])
        if problem:
            raise UsageError(f"cannot run -m {req.target}: {problem}")
    if req.schedule:
        Schedule.parse(req.schedule)
    for name in (p for p in req.passes if p in NCU_PASSES):
        find_ncu(req.ncu, name)  # fail before any pass runs, naming the fix
    if req.access_every < 1:
        raise UsageError("--access-every must be at least 1")
    if Pass.ACCESSES in req.passes and Pass.TENSORS not in req.passes:
        raise UsageError(
            "the accesses pass records during the tensors pass's run (addresses need its tensors): "
            "add tensors, e.g. --passes tensors,accesses"
        )


def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    # The child must import this very tenprof, also when it runs from a source checkout.
    src = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def _shares_ncu_run(passes: tuple[str, ...]) -> bool:
    """Counters and stalls asked together: one ncu run collects both (the counters pass's)."""
    return Pass.COUNTERS in passes and Pass.STALLS in passes


def _ordered(passes: tuple[str, ...]) -> tuple[str, ...]:
    """A pass built from another pass's run comes right after it: stalls after counters when they share
    ncu's run, accesses after tensors (always)."""
    ordered = list(passes)
    for rider, host in ((Pass.STALLS, Pass.COUNTERS), (Pass.ACCESSES, Pass.TENSORS)):
        if rider in ordered and host in ordered and (rider != Pass.STALLS or _shares_ncu_run(passes)):
            ordered.remove(rider)
            ordered.insert(ordered.index(host) + 1, rider)
    return tuple(ordered)


def _run_child(
    req: RunRequest, raw_dir: Path, pass_name: str, expected_replays: int = 0, access: AccessTool | None = None
) -> int:
    spec = {
        "pass": pass_name,
        "raw_dir": str(raw_dir),
        "target": req.target,
        "args": req.args,
        "module": req.module,
        "lines": req.lines,
        "shapes": req.shapes,
        "memory": req.memory,
        "schedule": req.schedule,
        "verify": req.verify,
        "overhead_steps": req.overhead_steps,
        "capture": req.capture,
        "compiled_lines": req.compiled_lines,
        "keep_all": req.counters_all,
        "replay_scopes": list(req.replay_scopes),
        "access_library": str(access.library) if access is not None else "",
        "access_all_ops": req.access_all_ops,
    }
    spec_path = raw_dir / "spec.json"
    spec_path.write_text(json.dumps(spec))
    command = [req.python, "-m", "tenprof.capture.child", str(spec_path)]
    piped = pass_name in NCU_PASSES
    if piped:
        shared = _shares_ncu_run(req.passes)
        command = ncu_command(
            find_ncu(req.ncu),
            raw_dir / NCU_REPORT_BASE,
            command,
            metrics=pass_name == Pass.COUNTERS,
            stalls=pass_name == Pass.STALLS or shared,
        )
    # A session of its own: a Ctrl-C at the terminal reaches only this process, which forwards exactly
    # one SIGINT; SIGTERM and SIGHUP are forwarded as SIGTERM. The child saves on either.
    env = _child_env()
    if piped:
        # ncu follows every process the script starts (--target-processes all); Inductor's pool of
        # compile workers would each start under its injection. Compile in the script's own process.
        env.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")
    if access is not None:
        env.update(access.environment(raw_dir, every=req.access_every))
    # The script's stderr is read here, through the filter of the profiler library's own log lines (in this
    # process, so that nothing is lost if the child crashes); its stdout is left as it is.
    relay = None if piped else StderrRelay(raw_dir / PROFILER_LOG_FILE, tty=os.isatty(2))
    try:
        proc = subprocess.Popen(
            command,
            env=env,
            start_new_session=True,
            stdout=subprocess.PIPE if piped else None,
            stderr=subprocess.STDOUT if relay is None else relay.child_fd,
            text=piped,
            errors="replace" if piped else None,
        )
    except BaseException:
        if relay is not None:
            relay.close()
        raise

    watchdog: list[threading.Timer] = []

    def forward(signum: int, frame: Any) -> None:
        try:
            proc.send_signal(signal.SIGINT if signum == signal.SIGINT else signal.SIGTERM)
        except OSError:
            pass
        if signum != signal.SIGINT and not watchdog:
            watchdog.append(threading.Timer(stop_grace_s(), _kill_if_unresponsive, args=(proc, raw_dir)))
            watchdog[0].daemon = True
            watchdog[0].start()

    watched = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    previous = {s: signal.signal(s, forward) for s in watched}
    try:
        if piped and proc.stdout is not None:
            _relay_ncu_output(proc.stdout, raw_dir / NCU_LOG_FILE, expected_replays, pass_name, req.quiet)
        elif relay is not None:
            relay.pump(proc)  # until the child has exited and its stderr is drained
        return proc.wait()
    finally:
        for timer in watchdog:
            timer.cancel()
        for s, handler in previous.items():
            signal.signal(s, handler)
        # The marker only told the watchdog the child had begun saving; the profile does not keep it.
        (raw_dir / SAVING_FILE).unlink(missing_ok=True)
        if relay is not None:
            relay.close()


def stop_grace_s() -> float:
    """How long a terminated script has to begin saving before it is killed (TENPROF_STOP_GRACE_S): a
    launcher such as torchrun kills its workers 30 s after its SIGTERM, and the tables still have to be
    built from what the script had written by then."""
    try:
        return max(0.1, float(os.environ.get("TENPROF_STOP_GRACE_S", STOP_GRACE_S)))
    except ValueError:
        return STOP_GRACE_S


def _kill_if_unresponsive(proc: subprocess.Popen[Any], raw_dir: Path) -> None:
    """SIGTERM was forwarded and the script never got back to Python to save (blocked in a call that does
    not return, such as a collective waiting for a rank that died): kill it, so that what it had already
    written (the trace parts of earlier recording windows) is built into the profile while there is time."""
    if proc.poll() is not None or (raw_dir / SAVING_FILE).exists():
        return
    (raw_dir / KILLED_FILE).touch()
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass


def _relay_ncu_output(stream: Any, log_path: Path, expected: int, pass_name: str, quiet: bool = False) -> None:
    """ncu's lines go to its log and drive the progress line; the script's own lines go to stdout, less the
    profiler library's own log lines, which go to raw/profiler.log (all lines are in ncu's log too)."""

    def show(text: str) -> None:
        if not quiet:
            print(text, file=sys.stderr, flush=True)

    progress = Progress(expected, show, label=pass_name)
    profiler_log = ProfilerLog(log_path.parent / PROFILER_LOG_FILE)
    script = LogFilter(lambda data: sys.stdout.write(data.decode(errors="replace")), profiler_log.write)
    with log_path.open("w") as log:
        for line in stream:
            log.write(line)
            if line.startswith("==PROF=="):
                progress.feed(line)
            elif line.startswith("==ERROR==") or line.startswith("==WARNING=="):
                print(line.rstrip(), file=sys.stderr)
            else:
                script.feed(line.encode())
    script.close()
    profiler_log.close()
    show(progress.text() + " (done)")


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


def run_profile(req: RunRequest) -> RunResult:
    """Run each pass in turn (each one a run of the script); the first pass's run describes the run.

    A pass whose script run was interrupted or failed stops the passes after it: they are marked as not
    run, with the reason, and what the earlier passes recorded is kept.

    The output directory is checked (and made) before the script runs. Replacing a profile (`force`)
    writes the new one into a staging directory that takes the old one's place only at the end."""
    _check_request(req)
    output = open_output_dir(req.out_dir, req.force)
    try:
        result = _run_passes(dataclasses.replace(req, out_dir=output.path))
    except BaseException:
        if output.staged:
            print(
                f"tenprof: {req.out_dir} is unchanged; what this run recorded is in {output.path}",
                file=sys.stderr,
                flush=True,
            )
        raise
    output.commit()
    return result


def _run_passes(req: RunRequest) -> RunResult:
    command = (["-m", req.target] if req.module else [req.target]) + req.args
    meta = Meta(
        tenprof_version=VERSION,
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
            "overhead_steps": str(req.overhead_steps),
            "capture": req.capture,
            "compiled_lines": str(req.compiled_lines).lower(),
            **(_access_options(req) if Pass.ACCESSES in req.passes else {}),
        },
        timeline=TimelineInfo(lines=req.lines),
    )
    if req.rank is not None:
        meta.rank, meta.local_rank = req.rank.rank, req.rank.local_rank
        meta.world_size, meta.launcher = req.rank.world_size, req.rank.launcher
    exit_code = 0
    stopped = ""
    access, access_problem = _access_tool(req)
    for index, pass_name in enumerate(_ordered(req.passes)):
        if pass_name == Pass.STALLS and _shares_ncu_run(req.passes) and not stopped:
            meta = _stalls_from_counters_run(req, meta)
            continue
        if pass_name == Pass.ACCESSES:
            meta = _accesses_from_tensors_run(req, meta, access_problem)
            continue
        if stopped:
            meta.passes[pass_name] = PassStatus(state="failed", reason=f"not run: {stopped}")
            write_meta(req.out_dir, meta)
            continue
        meta.passes[pass_name] = PassStatus(state="running", started_at=now_iso())
        write_meta(req.out_dir, meta)
        writer = PassWriter(req.out_dir, pass_name)
        raw_dir = writer.tmp_dir / "raw"
        raw_dir.mkdir()
        started = time.perf_counter()
        expected = expected_replays_of(req.out_dir) if pass_name in NCU_PASSES else 0
        code = _run_child(req, raw_dir, pass_name, expected, access if pass_name == Pass.TENSORS else None)
        ran = time.perf_counter()
        # From here on, what was recorded is turned into tables and meta.json; a Ctrl-C now would only
        # lose work, so it is ignored until the pass is written (the raw files are kept in any case).
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            meta = _finish_pass(req, pass_name, writer, raw_dir, meta, code, (started, ran), describes_run=index == 0)
        finally:
            signal.signal(signal.SIGINT, previous)
        if code != 0:
            exit_code = code if code >= 0 else 128 - code
            stopped = f"the script stopped early in the {pass_name} pass (exit status {exit_code})"
    return RunResult(exit_code, meta)


def _access_options(req: RunRequest) -> dict[str, str]:
    return {"access_every": str(req.access_every), "access_ops": "all" if req.access_all_ops else "first of each kind"}


def _stalls_from_counters_run(req: RunRequest, meta: Meta) -> Meta:
    """The stalls pass built from the report of the counters pass's ncu run (no second run)."""
    started = time.perf_counter()
    counters = meta.passes.get(Pass.COUNTERS)
    writer = PassWriter(req.out_dir, Pass.STALLS)
    report_dir = req.out_dir / Pass.COUNTERS / "raw"
    if counters is None or not report_dir.is_dir():
        pass_status = PassStatus(state="failed", reason="not run: the counters pass's ncu run left no report")
    else:
        cut = counters.reason if counters.state == "partial" else ""
        pass_status = finish_stalls(writer, report_dir, req.ncu, "", cut)
        if pass_status.state != "failed":
            pass_status.reason = "; ".join(filter(None, [pass_status.reason, "sampled in the counters pass's ncu run"]))
    return _commit_rider(req, meta, Pass.STALLS, writer, pass_status, started)


def _commit_rider(
    req: RunRequest, meta: Meta, name: str, writer: PassWriter, pass_status: PassStatus, started: float
) -> Meta:
    """Write a pass built from another pass's run (no run of its own) and record it in meta.json."""
    pass_status.started_at = now_iso()
    pass_status.duration_s = pass_status.build_s = time.perf_counter() - started
    pass_status.rows = dict(writer.rows)
    writer.commit()
    meta.passes[name] = pass_status
    write_meta(req.out_dir, meta)
    return meta


def _access_tool(req: RunRequest) -> tuple[AccessTool | None, str]:
    """The access tool, built now if needed; or why the accesses pass cannot run (the others still do)."""
    if Pass.ACCESSES not in req.passes:
        return None, ""
    if not req.quiet:
        print("tenprof: preparing the access tool (built with nvcc on first use)", file=sys.stderr, flush=True)
    try:
        return build_access_tool(), ""
    except AccessToolUnavailable as exc:
        print(f"tenprof: the accesses pass will not run: {exc}", file=sys.stderr, flush=True)
        return None, str(exc)


def _accesses_from_tensors_run(req: RunRequest, meta: Meta, problem: str) -> Meta:
    """The accesses pass built from what the access tool wrote during the tensors pass's run."""
    started = time.perf_counter()
    writer = PassWriter(req.out_dir, Pass.ACCESSES)
    tensors = meta.passes.get(Pass.TENSORS)
    tensors_raw = req.out_dir / Pass.TENSORS / "raw"
    status = _read_status(tensors_raw) if tensors_raw.is_dir() else {}
    if problem or status.get("access_error"):
        pass_status = PassStatus(state="failed", reason=problem or str(status["access_error"]))
    elif tensors is None or not status.get("pid"):
        pass_status = PassStatus(state="failed", reason="not run: the tensors pass's run did not start")
    else:
        cut = tensors.reason if tensors.state == "partial" and status.get("cut_short") else ""
        try:
            pass_status = finish_accesses(writer, tensors_raw, int(status["pid"]), cut)
        except Exception as exc:  # never lose the recording to a bug in building the tables
            reason = f"building the profile failed: {exc.__class__.__name__}: {exc}"
            pass_status = PassStatus(state="failed", reason=reason)
    return _commit_rider(req, meta, Pass.ACCESSES, writer, pass_status, started)


def _read_status(raw_dir: Path) -> dict[str, Any]:
    if (raw_dir / STATUS_FILE).exists():
        try:
            status: dict[str, Any] = json.loads((raw_dir / STATUS_FILE).read_text())
            return status
        except ValueError:
            pass
    return {}


def _finish_pass(
    req: RunRequest,
    pass_name: str,
    writer: PassWriter,
    raw_dir: Path,
    meta: Meta,
    code: int,
    times: tuple[float, float],
    describes_run: bool,
) -> Meta:
    """`times`: when the pass's run started and when its process ended (perf counter)."""
    started, ran = times
    status = _read_status(raw_dir)
    if status:
        cut_short = bool(status.get("cut_short"))
        cut_reason = str(status.get("reason", ""))
    else:
        cut_short = True
        cut_reason = (
            f"terminated, and killed {stop_grace_s():g} s later: the script never got back to Python to save "
            "(blocked in a call that did not return, such as a collective waiting for a rank that died); what "
            "the capture had written before is kept"
            if (raw_dir / KILLED_FILE).exists()
            else f"the profiled process was killed by {_signal_name(code)}"
            if code < 0
            else "the profiled process died"
        )
    try:
        if describes_run:
            env = status.get("env", {})
            meta.host = env.get("host", "") or socket.gethostname()  # the child's words, if it lived to say them
            meta.python_version = env.get("python_version", "")
            meta.torch_version = env.get("torch_version", "")
            meta.cuda_version = env.get("cuda_version", "")
            meta.driver_version = env.get("driver_version", "")
            meta.gpus = [GpuInfo(**g) for g in env.get("gpus", [])]
            meta.run.exit_code = code
            meta.pid = int(status.get("pid", 0) or 0)
            meta.run.cuda_device = int(status.get("cuda_device", -1))
            meta.run.wall_time_s = float(status.get("wall_time_s", time.perf_counter() - started))
            meta.run.cut_short = cut_short
            meta.run.cut_short_reason = cut_reason
            if isinstance(status.get("out_of_memory"), dict):
                meta.run.out_of_memory = OutOfMemory(**status["out_of_memory"])
        error = str(status.get("error", ""))
        cut = cut_reason if cut_short else ""
        if pass_name == Pass.TIMELINE:
            pass_status = finish_timeline(writer, raw_dir, meta, error, req.schedule)
        elif pass_name == Pass.TENSORS:
            pass_status = finish_tensors(writer, raw_dir, meta, error, cut)
        elif pass_name == Pass.COUNTERS:
            pass_status = finish_counters(writer, raw_dir, req.out_dir, req.ncu, error, cut)
        elif pass_name == Pass.STALLS:
            pass_status = finish_stalls(writer, raw_dir, req.ncu, error, cut)
    except Exception as exc:  # never lose the recording to a bug in building the tables
        pass_status = PassStatus(state="failed", reason=f"building the profile failed: {exc.__class__.__name__}: {exc}")
    pass_status.started_at = meta.passes[pass_name].started_at
    finished = time.perf_counter()
    pass_status.duration_s, pass_status.run_s, pass_status.build_s = finished - started, ran - started, finished - ran
    pass_status.rows = dict(writer.rows)
    writer.commit()  # raw files are kept even when the pass failed
    meta.passes[pass_name] = pass_status
    write_meta(req.out_dir, meta)
    return meta
