"""`tenprof import-ncu REPORT.ncu-rep -o DIR`: an Nsight Compute report you made -> a profile."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tenprof.cli.common import console
from tenprof.cli.report_command import print_report
from tenprof.importers.ncu_import import import_ncu_report
from tenprof.store.profile import load_profile


class ImportNcuCommand:
    """Read an Nsight Compute report (needs ncu_report: pip install ncu-report) into a counters pass."""

    def prepare_parser(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("report", help="Nsight Compute report (.ncu-rep)")
        parser.add_argument("-o", "--output", default=None, help="profile directory (default: <report>.tenprof)")
        parser.add_argument("--force", action="store_true", help="replace the output directory if it is a profile")
        parser.add_argument("--quiet", action="store_true", help="print nothing but errors")

    def run(self, args: argparse.Namespace) -> int:
        report = Path(args.report)
        out_dir = (
            Path(args.output) if args.output else report.with_name(report.name.removesuffix(".ncu-rep") + ".tenprof")
        )
        import_ncu_report(report, out_dir, args.force)
        if not args.quiet:
            print_report(load_profile(out_dir), console(), 15)
            print(f"tenprof: profile written to {out_dir}/ (tenprof report {out_dir})", file=sys.stderr)
        return 0
