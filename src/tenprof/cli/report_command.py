"""`tenprof report DIR`: summary and tallies (or the same as JSON with --json)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rich.console import Console

from tenprof.analyses import tally as tallies
from tenprof.analyses.compiled import compiled_report
from tenprof.analyses.counters import operators_report
from tenprof.analyses.findings import Thresholds, find_all, not_judged
from tenprof.analyses.memory import memory_report
from tenprof.analyses.stalls import kernel_stalls, stall_rollup
from tenprof.analyses.summary import summarize
from tenprof.analyses.temporal import temporal_breakdown
from tenprof.analyses.tensor_forest import Forest
from tenprof.analyses.tensor_stall_cost import tensor_stall_cost
from tenprof.cli.common import console, non_negative_int, open_profile, threshold_override
from tenprof.cli.ranks_report import print_ranks_report, ranks_json
from tenprof.errors import UsageError
from tenprof.renderers.compiled_text import render_compiled
from tenprof.renderers.counters_text import render_counters
from tenprof.renderers.json_report import report_json
from tenprof.renderers.memory_text import render_memory
from tenprof.renderers.stall_cost_text import render_stall_cost
from tenprof.renderers.stalls_text import render_rollup, render_stalls
from tenprof.renderers.text import render_breakdown, render_findings, render_summary, render_tally
from tenprof.store.directory import rank_dir, rank_dirs
from tenprof.store.meta import META_FILE
from tenprof.store.profile import Profile


def all_tallies(profile: Profile) -> list[tallies.Tally]:
    found = [tallies.op_cpu_tally(profile)]
    if profile.has_gpu:
        found = [
            tallies.kernel_tally(profile),
            tallies.op_gpu_tally(profile),
            tallies.transfer_tally(profile),
            tallies.api_tally(profile),
            *found,
        ]
    return found


def print_report(profile: Profile, out: Console, limit: int | None, thresholds: Thresholds | None = None) -> None:
    """Findings first (most costly first), then the summary, the per-step breakdown and the tallies;
    then the memory section when the profile has a tensors pass."""
    if "timeline" in profile.meta.passes:
        render_findings(find_all(profile, thresholds), out, not_judged(profile))
        render_summary(summarize(profile), out)
        breakdown = temporal_breakdown(profile)
        if breakdown and profile.has_gpu:
            out.print()
            render_breakdown(breakdown, out)
        for t in all_tallies(profile):
            if t.rows:
                out.print()
                render_tally(t, out, limit)
    else:
        out.print(f"[bold]tenprof[/bold] · {' '.join(profile.meta.command)}: no timeline pass in this profile")
        for line in profile.missing():
            out.print(f"[yellow]Incomplete:[/yellow] {line}")
    compiled = compiled_report(profile) if "timeline" in profile.meta.passes else None
    if compiled is not None:
        out.print()
        render_compiled(compiled, out, limit)
    counters = operators_report(profile)
    if counters is not None:
        out.print()
        render_counters(counters, out, limit)
    stalls = kernel_stalls(profile)
    if stalls:
        out.print()
        render_stalls(stalls, out, limit)
        render_rollup(stall_rollup(profile), out, limit)
    memory = memory_report(profile, limit or 10)
    if memory is not None:
        out.print()
        render_memory(memory, out)
    if all(profile.has_pass(p) for p in ("tensors", "stalls", "accesses")):
        costs = tensor_stall_cost(profile)
        if costs:
            out.print()
            render_stall_cost(costs, Forest(profile), out, limit)


class ReportCommand:
    """Print the summary and the tallies of a profile (no GPU needed)."""

    def prepare_parser(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("profile", nargs="?", help="profile directory (from tenprof run or tenprof import)")
        parser.add_argument("--steps", default="", help="only these steps: '2:' (from 2 on), ':3' (before 3), '1,3-5'")
        parser.add_argument("--json", action="store_true", help="print the report as JSON")
        parser.add_argument("--limit", type=non_negative_int, default=15, help="rows per tally (0: all)")
        parser.add_argument(
            "--threshold",
            action="append",
            default=[],
            type=threshold_override,
            metavar="NAME=VALUE",
            help="override a finding's threshold (repeatable); see --list-thresholds",
        )
        parser.add_argument("--list-thresholds", action="store_true", help="print the findings' thresholds and exit")
        parser.add_argument(
            "--rank", type=int, default=None, help="a multi-rank profile: report this rank alone (default: merged)"
        )

    def run(self, args: argparse.Namespace) -> int:
        if args.list_thresholds:
            for name, default, doc in Thresholds.describe():
                print(f"{name} = {default:g}\n    {doc}")
            return 0
        if not args.profile:
            raise UsageError("give a profile directory (tenprof report tenprof-out)")
        thresholds = Thresholds().with_overrides(args.threshold)
        top = Path(args.profile)
        if rank_dirs(top) and not (top / META_FILE).exists():
            if args.rank is None:
                if args.json:
                    sys.stdout.write(ranks_json(top) + "\n")
                else:
                    print_ranks_report(top, console(), args.limit or None)
                return 0
            args.profile = str(rank_dir(top, args.rank))
            if not (Path(args.profile) / META_FILE).exists():
                raise UsageError(f"{top} has no rank {args.rank}; ranks: {', '.join(p.name for p in rank_dirs(top))}")
        elif args.rank is not None:
            raise UsageError(f"{top} is a single-process profile; --rank is for a directory of ranks")
        profile = open_profile(args)
        if args.json:
            sys.stdout.write(report_json(profile, all_tallies(profile), thresholds))
            sys.stdout.write("\n")
            return 0
        print_report(profile, console(), args.limit or None, thresholds)
        return 0
