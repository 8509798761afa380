"""`tenprof import TRACE -o DIR`: a torch.profiler / Kineto trace (.json, .json.gz, .json.zst) -> a profile;
a folder of them (one per rank) -> one profile per rank, `DIR/rankNNNNN`.

Every way it can fail is one `tenprof: error:` line and a non-zero exit, never a traceback:
- a folder with no trace in it, or a tenprof profile given in place of a trace (which `report` reads);
- a trace of a folder that fails: one line for it (its path said once), the others are kept; when all
  fail, nothing is left, not even the folder this import made;
- Ctrl-C (exit 130): what the import was writing is removed, in this process and in the worker
  processes alike, and none of them prints a traceback.

The rank of each profile of a folder is the one its trace names (Kineto's distributedInfo: a whole
number, which alone may name a folder), else its place in name order; it is kept in meta.json, so the
merged report and `report --rank N` say the trace's own rank.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import signal
import sys
import time
from concurrent.futures import Future, ProcessPoolExecutor
from multiprocessing.synchronize import Event
from pathlib import Path

from tenprof.cli.common import console
from tenprof.cli.report_command import print_report
from tenprof.errors import Interrupted, TenprofError, TraceFormatError, UsageError
from tenprof.importers.interrupts import ignore_sigint_in_worker, raise_once, sigint_held, sigint_ignored
from tenprof.importers.timeline_import import import_trace
from tenprof.store.profile import load_profile

TRACE_SUFFIXES = (".json", ".json.gz", ".json.zst")
_INTERRUPTED = "\0interrupted"  # what a rank's worker returns when Ctrl-C stopped its import


class ImportCommand:
    """Import a torch.profiler trace the user already has, then print its report."""

    def prepare_parser(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "trace",
            help="a torch.profiler trace (.json, .json.gz or .json.zst), or a folder of them, one per rank",
        )
        parser.add_argument("-o", "--output", default=None, help="profile directory (default: <trace name>.tenprof)")
        parser.add_argument("--force", action="store_true", help="replace the output directory if it is a profile")
        parser.add_argument("--quiet", action="store_true", help="print nothing but errors")
        parser.add_argument(
            "--scheduler",
            default=None,
            metavar="ADDRESS",
            help="a folder's ranks imported as tasks of the Dask cluster at ADDRESS (tcp://host:8786), or of a "
            "cluster of this machine's cores ('local'); the traces and the output must be paths every worker "
            "sees (pip install 'tenprof[cluster]')",
        )

    def run(self, args: argparse.Namespace) -> int:
        trace = Path(args.trace)
        if trace.is_dir():
            traces = folder_traces(trace)
            out_dir = Path(args.output) if args.output else trace.with_name(trace.name + ".tenprof")
            return import_ranks(traces, out_dir, args.force, args.quiet, args.scheduler)
        if args.scheduler:
            raise UsageError("--scheduler imports the ranks of a folder of traces; give the folder")
        name = trace.name.removesuffix(".gz").removesuffix(".zst").removesuffix(".json")
        out_dir = Path(args.output) if args.output else trace.with_name(name + ".tenprof")
        existed = out_dir.exists()
        try:
            import_trace(trace, out_dir, args.force)
        except KeyboardInterrupt:  # import_trace removed what it had written
            left = f"{out_dir} is as it was" if existed else "nothing was written"
            raise Interrupted(f"interrupted; {left}") from None
        if not args.quiet:
            try:
                print_report(load_profile(out_dir), console(), 15)
            except KeyboardInterrupt:
                raise Interrupted(f"interrupted while printing the report; {out_dir} holds the whole profile") from None
            print(f"tenprof: profile written to {out_dir}/ (tenprof report {out_dir})", file=sys.stderr)
        return 0


def folder_traces(folder: Path) -> list[Path]:
    """The traces in `folder` (not its subfolders), as tensorboard_trace_handler writes them, one per rank;
    UsageError for a tenprof profile (`report` reads it), TraceFormatError for a folder with none."""
    from tenprof.store.directory import is_profile_dir, rank_dirs
    from tenprof.store.meta import META_FILE

    report = f"tenprof report {folder}"
    if is_profile_dir(folder) or rank_dirs(folder):
        raise UsageError(f"{folder} is a tenprof profile, not a trace; to see it: {report}")
    if (folder / META_FILE).is_file() and any(p.is_dir() for p in folder.iterdir()):
        # a meta.json beside pass folders: a profile of a tenprof from before the marker (its meta.json is
        # no trace either, and is not read as one)
        raise UsageError(f"{folder} looks like a tenprof profile (its {META_FILE}), not a trace; to see it: {report}")
    traces = [t for t in trace_files(folder) if t.name != META_FILE]
    if not traces:
        older = f" (if it is a profile: {report})" if (folder / META_FILE).is_file() else ""
        raise TraceFormatError(
            f"{folder} holds no trace ({', '.join(TRACE_SUFFIXES)} files){older}; give a torch.profiler trace, "
            "or a folder of them, one per rank"
        )
    return traces


def trace_files(folder: Path) -> list[Path]:
    """The traces in a folder (not its subfolders): what tensorboard_trace_handler writes, one per rank."""
    return sorted(p for p in folder.iterdir() if p.is_file() and p.name.endswith(TRACE_SUFFIXES))


def import_ranks(traces: list[Path], out_dir: Path, force: bool, quiet: bool, scheduler: str | None = None) -> int:
    """Each trace into its own rank profile, OUT/rankNNNNN, in parallel processes (or as tasks of a Dask
    cluster: `scheduler`, importers.cluster_import); then the merged report. The rank is the one the trace
    names, else the trace's place in name order (see the module). A trace that fails is reported in one
    line and the others are kept."""
    from tenprof.cli.launch import prepare_ranks_dir
    from tenprof.report.ranks import print_ranks_report
    from tenprof.store.directory import rank_dir

    ranks = _ranks(traces)
    prepare_ranks_dir(out_dir, force)
    created = not out_dir.exists()
    out_dir.mkdir(parents=True, exist_ok=True)
    # ranks are read in parallel already: each reads its trace in one process unless cores are left over
    per_rank = max(1, (os.cpu_count() or 1) // len(traces))
    jobs = [(t, rank_dir(out_dir, r), force, per_rank, r) for t, r in zip(traces, ranks, strict=True)]
    started = time.time()
    try:
        errors = _on_cluster(jobs, scheduler, quiet) if scheduler else _import_all(jobs, quiet)
    except KeyboardInterrupt:
        with sigint_ignored():
            _remove_written(out_dir, [job[1] for job in jobs], created, started)
        left = f"{out_dir} was removed" if created else f"the rank profiles it had written in {out_dir} were removed"
        raise Interrupted(f"interrupted; {left}") from None
    except TenprofError:  # no import ran (the scheduler could not be reached): leave nothing behind
        if created:
            _remove_folder_if_empty(out_dir)
        raise
    failed = sum(1 for e in errors if e)
    if failed == len(jobs) and created:
        _remove_folder_if_empty(out_dir)  # all failed: leave nothing behind
    if force:
        _remove_other_ranks(out_dir, {target for _, target, _, _, _ in jobs})
    if not quiet and failed < len(jobs):
        print_ranks_report(out_dir, console(), 15, scheduler)
        print(
            f"tenprof: {len(jobs) - failed} rank profiles written to {out_dir}/ (tenprof report {out_dir})",
            file=sys.stderr,
        )
    return 1 if failed else 0


def _ranks(traces: list[Path]) -> list[int]:
    """The rank each trace names, when every trace names one and no two the same; else their places."""
    from tenprof.importers.formats.kineto_reader import trace_rank

    named = [trace_rank(t) for t in traces]
    given = [r for r in named if r is not None]
    if len(given) == len(traces) and len(set(given)) == len(given):
        return given
    return list(range(len(traces)))


_Job = tuple[Path, Path, bool, int, int]


def _import_all(jobs: list[_Job], quiet: bool) -> list[str]:
    """Run the ranks' imports in worker processes; per job, '' or its error in one line (said as each
    ends). On Ctrl-C the workers stop and remove what they were writing before KeyboardInterrupt is
    raised here (see `_stop_workers`)."""
    context = multiprocessing.get_context()
    stop = context.Event()
    pool = ProcessPoolExecutor(
        max_workers=max(1, min(len(jobs), os.cpu_count() or 1)),
        mp_context=context,
        initializer=_start_worker,
        initargs=(stop,),
    )
    futures: list[Future[str]] = []
    errors: list[str] = []
    try:
        with sigint_held():  # the workers start with SIGINT blocked, until they ignore it
            futures.extend(pool.submit(_import_one, job) for job in jobs)
        for (trace, target, *_), future in zip(jobs, futures, strict=False):
            error = future.result()
            if error == _INTERRUPTED:  # a worker saw the Ctrl-C before this process did
                raise KeyboardInterrupt
            errors.append(error)
            _say(trace, target, error, quiet)
    except KeyboardInterrupt:
        with sigint_ignored():
            _stop_workers(pool, stop)
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    return errors


def _on_cluster(jobs: list[_Job], scheduler: str, quiet: bool) -> list[str]:
    """The ranks' imports as tasks of a Dask cluster (importers.cluster_import), each said as it ends."""
    from tenprof.importers.cluster_import import import_on_cluster

    def done(index: int, error: str) -> None:
        _say(jobs[index][0], jobs[index][1], error, quiet)

    return import_on_cluster([(t, target, force, rank) for t, target, force, _, rank in jobs], scheduler, done)


def _say(trace: Path, target: Path, error: str, quiet: bool) -> None:
    """One rank's import ended: its error in one line, else (unless quiet) where it went."""
    if error:
        message = error if str(trace) in error else f"{trace}: {error}"
        print(f"tenprof: error: {message}", file=sys.stderr)
    elif not quiet:
        print(f"tenprof: {trace} -> {target}/{_warned(target)}", file=sys.stderr)


def _warned(target: Path) -> str:
    """' (what was left out or cut)' when the rank's import said so, else ''."""
    from tenprof.store.meta import read_meta
    from tenprof.store.schema import Pass

    status = read_meta(target).passes.get(Pass.TIMELINE)
    return f" ({status.reason})" if status is not None and status.reason else ""


def _stop_workers(pool: ProcessPoolExecutor, stop: Event) -> None:
    """Tell every worker to stop: the flag keeps queued imports from starting, and a SIGINT stops the
    ones running (which remove what they wrote); a terminal's Ctrl-C has sent them one already, which
    `raise_once` makes harmless. Then wait for them."""
    stop.set()
    processes = getattr(pool, "_processes", None) or {}  # the executor keeps its workers by pid
    for pid in list(processes):
        try:
            os.kill(pid, signal.SIGINT)
        except (ProcessLookupError, PermissionError):
            continue
    pool.shutdown(wait=True, cancel_futures=True)


_STOP: Event | None = None  # in a worker: set by the parent when Ctrl-C stopped the import


def _start_worker(stop: Event) -> None:
    global _STOP
    _STOP = stop
    ignore_sigint_in_worker()


def _import_one(job: _Job) -> str:
    """One rank's import, in a worker process: '' or what went wrong, in one line. SIGINT stops it (once)
    while it runs; between jobs the worker ignores it."""
    trace, target, force, workers, rank = job
    signal.signal(signal.SIGINT, raise_once)  # before the flag is read: a stop is never missed
    try:
        if _STOP is not None and _STOP.is_set():
            return _INTERRUPTED
        import_trace(trace, target, force, workers, rank)
    except KeyboardInterrupt:
        return _INTERRUPTED
    except TenprofError as exc:
        return str(exc)
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    return ""


def _remove_written(out_dir: Path, targets: list[Path], created: bool, started: float) -> None:
    """After Ctrl-C: the rank profiles this import completed (a rank's import removes its own unfinished
    one), then the folder when this import made it."""
    from tenprof.store.directory import MARKER_FILE, is_profile_dir, remove_profile

    for target in targets:
        if is_profile_dir(target) and (created or (target / MARKER_FILE).stat().st_mtime >= started):
            remove_profile(target)
    if created:
        _remove_folder_if_empty(out_dir)


def _remove_folder_if_empty(folder: Path) -> None:
    try:
        folder.rmdir()
    except OSError:  # something is in it (the user's, or a rank that was written): it stays
        pass


def _remove_other_ranks(out_dir: Path, kept: set[Path]) -> None:
    """Rank profiles of an earlier import into `out_dir` whose rank no trace of this one has: they would
    mix into the merged report. Only what tenprof wrote in them goes (a rank whose trace failed this
    time keeps its earlier profile)."""
    from tenprof.store.directory import is_profile_dir, rank_dirs, remove_profile

    for rank in rank_dirs(out_dir):
        if rank not in kept and is_profile_dir(rank):
            remove_profile(rank)
