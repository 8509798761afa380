"""`tenprof report DIR`: every section of the report (report.sections) as text, or as JSON with --json."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rich.console import Console

from tenprof.analyses.findings import Thresholds
from tenprof.cli.common import console, holds_ranks, non_negative_int, open_profile, threshold_override
from tenprof.errors import UsageError
from tenprof.report.ranks import print_ranks_report, ranks_json
from tenprof.report.sections import ReportOptions, render_text, report_json
from tenprof.store.profile import Profile


def print_report(profile: Profile, out: Console, limit: int | None, thresholds: Thresholds | None = None) -> None:
    """Every section of the report (report.sections): findings first, then the summary, the per-step
    breakdown, the tallies, and the sections of the other passes the profile has."""
    render_text(profile, out, ReportOptions(limit, thresholds))


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
        parser.add_argument(
            "--scheduler",
            default=None,
            metavar="ADDRESS",
            help="a multi-rank profile: each rank's part of the merged report made as a task of the Dask cluster "
            "at ADDRESS, or of this machine's cores ('local'); every worker must see the profile",
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
        if holds_ranks(top) and args.rank is None:  # merged; --rank N: that rank's own report
            if args.json:
                sys.stdout.write(ranks_json(top, args.scheduler) + "\n")
            else:
                print_ranks_report(top, console(), args.limit or None, args.scheduler)
            return 0
        if args.scheduler:
            raise UsageError("--scheduler makes the merged report of a multi-rank profile; this is one profile")
        profile = open_profile(args)
        if args.json:
            sys.stdout.write(report_json(profile, ReportOptions(thresholds=thresholds)))
            sys.stdout.write("\n")
            return 0
        print_report(profile, console(), args.limit or None, thresholds)
        return 0
