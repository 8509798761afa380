"""`tenprof import TRACE -o DIR`: a torch.profiler / Kineto trace (.json or .json.gz) -> a profile."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tenprof.cli.common import console
from tenprof.cli.report_command import print_report
from tenprof.importers.trace_import import import_trace
from tenprof.store.profile import load_profile


class ImportCommand:
    """Import a torch.profiler trace the user already has, then print its report."""

    def prepare_parser(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("trace", help="Kineto / torch.profiler chrome trace (.json or .json.gz)")
        parser.add_argument("-o", "--output", default=None, help="profile directory (default: <trace name>.tenprof)")
        parser.add_argument("--force", action="store_true", help="replace the output directory if it is a profile")
        parser.add_argument("--quiet", action="store_true", help="print nothing but errors")

    def run(self, args: argparse.Namespace) -> int:
        trace = Path(args.trace)
        name = trace.name.removesuffix(".gz").removesuffix(".json")
        out_dir = Path(args.output) if args.output else trace.with_name(name + ".tenprof")
        import_trace(trace, out_dir, args.force)
        if not args.quiet:
            print_report(load_profile(out_dir), console(), 15)
            print(f"tenprof: profile written to {out_dir}/ (tenprof report {out_dir})", file=sys.stderr)
        return 0
