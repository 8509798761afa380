"""`tenprof report DIR`: summary and tallies (or the same as JSON with --json)."""

from __future__ import annotations

import argparse
import sys

from rich.console import Console

from tenprof.analyses import tally as tallies
from tenprof.analyses.summary import summarize
from tenprof.cli.common import add_profile_arguments, console, open_profile
from tenprof.renderers.json_report import report_json
from tenprof.renderers.text import render_summary, render_tally
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


def print_report(profile: Profile, out: Console, limit: int | None) -> None:
    render_summary(summarize(profile), out)
    for t in all_tallies(profile):
        if t.rows:
            out.print()
            render_tally(t, out, limit)


class ReportCommand:
    """Print the summary and the tallies of a profile (no GPU needed)."""

    def prepare_parser(self, parser: argparse.ArgumentParser) -> None:
        add_profile_arguments(parser)
        parser.add_argument("--json", action="store_true", help="print the report as JSON")
        parser.add_argument("--limit", type=int, default=15, help="rows per tally (0: all)")

    def run(self, args: argparse.Namespace) -> int:
        profile = open_profile(args)
        if args.json:
            sys.stdout.write(report_json(profile, all_tallies(profile)))
            sys.stdout.write("\n")
            return 0
        print_report(profile, console(), args.limit or None)
        return 0
