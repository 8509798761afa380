"""`tenprof import TRACE -o DIR`: a torch.profiler / Kineto trace (.json or .json.gz) -> a profile."""

from __future__ import annotations

import argparse
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from tenprof.cli.common import console
from tenprof.cli.report_command import print_report
from tenprof.errors import TenprofError
from tenprof.importers.trace_import import import_trace
from tenprof.store.profile import load_profile


class ImportCommand:
    """Import a torch.profiler trace the user already has, then print its report."""

    def prepare_parser(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "trace",
            help="Kineto / torch.profiler chrome trace (.json or .json.gz), or a folder of them, one per rank",
        )
        parser.add_argument("-o", "--output", default=None, help="profile directory (default: <trace name>.tenprof)")
        parser.add_argument("--force", action="store_true", help="replace the output directory if it is a profile")
        parser.add_argument("--quiet", action="store_true", help="print nothing but errors")

    def run(self, args: argparse.Namespace) -> int:
        trace = Path(args.trace)
        if trace.is_dir() and trace_files(trace):
            out_dir = Path(args.output) if args.output else trace.with_name(trace.name + ".tenprof")
            return import_ranks(trace_files(trace), out_dir, args.force, args.quiet)
        name = trace.name.removesuffix(".gz").removesuffix(".json")
        out_dir = Path(args.output) if args.output else trace.with_name(name + ".tenprof")
        import_trace(trace, out_dir, args.force)
        if not args.quiet:
            print_report(load_profile(out_dir), console(), 15)
            print(f"tenprof: profile written to {out_dir}/ (tenprof report {out_dir})", file=sys.stderr)
        return 0


def trace_files(folder: Path) -> list[Path]:
    """The traces in a folder (not its subfolders): what tensorboard_trace_handler writes, one per rank."""
    return sorted(p for p in folder.iterdir() if p.is_file() and p.name.endswith((".json", ".json.gz")))


def import_ranks(traces: list[Path], out_dir: Path, force: bool, quiet: bool) -> int:
    """Each trace into its own rank profile, OUT/rankNNNNN, in parallel processes; then the merged report.
    The rank is the one the trace names (distributedInfo), else the trace's place in name order. A trace
    that fails is reported in one line and the others are kept."""
    from tenprof.cli.launch import prepare_ranks_dir
    from tenprof.cli.ranks_report import print_ranks_report
    from tenprof.importers.kineto_reader import trace_rank
    from tenprof.store.directory import rank_dir

    named = [trace_rank(t) for t in traces]
    distinct = {r for r in named if r is not None}
    ranks = [r or 0 for r in named] if len(distinct) == len(traces) else list(range(len(traces)))
    prepare_ranks_dir(out_dir, force)
    out_dir.mkdir(parents=True, exist_ok=True)
    workers = max(1, min(len(traces), os.cpu_count() or 1))
    # ranks are read in parallel already: each reads its trace in one process unless cores are left over
    per_rank = max(1, (os.cpu_count() or 1) // len(traces))
    jobs = [(t, rank_dir(out_dir, r), force, per_rank) for t, r in zip(traces, ranks, strict=True)]
    failed = 0
    with ProcessPoolExecutor(max_workers=workers) as pool:
        for (trace, target, _, _), error in zip(jobs, pool.map(_import_one, jobs), strict=True):
            if error:
                failed += 1
                print(f"tenprof: {trace}: {error}", file=sys.stderr)
            elif not quiet:
                print(f"tenprof: {trace} -> {target}/", file=sys.stderr)
    if force:
        _remove_other_ranks(out_dir, {target for _, target, _, _ in jobs})
    if not quiet and failed < len(jobs):
        print_ranks_report(out_dir, console(), 15)
        print(
            f"tenprof: {len(jobs) - failed} rank profiles written to {out_dir}/ (tenprof report {out_dir})",
            file=sys.stderr,
        )
    return 1 if failed else 0


def _remove_other_ranks(out_dir: Path, kept: set[Path]) -> None:
    """Rank profiles of an earlier import into `out_dir` whose rank no trace of this one has: they would
    mix into the merged report. Only what tenprof wrote in them goes (a rank whose trace failed this
    time keeps its earlier profile)."""
    from tenprof.store.directory import is_profile_dir, rank_dirs, remove_profile

    for rank in rank_dirs(out_dir):
        if rank not in kept and is_profile_dir(rank):
            remove_profile(rank)


def _import_one(job: tuple[Path, Path, bool, int]) -> str:
    """One rank's import, in a worker process: '' or what went wrong, in one line."""
    trace, target, force, workers = job
    try:
        import_trace(trace, target, force, workers)
    except TenprofError as exc:
        return str(exc)
    return ""
