"""`tenprof view DIR`: the call-path tree (Python -> scope -> op -> kernel), or its flat sorted view."""

from __future__ import annotations

import argparse

from tenprof.analyses.timeline.calltree import METRICS, build_tree, flat, hide_frames, prune
from tenprof.cli.common import add_profile_arguments, console, non_negative_float, non_negative_int, open_profile, regex
from tenprof.errors import UsageError
from tenprof.renderers.text import render_flat, render_tree


class ViewCommand:
    """Show the call-path tree with inclusive/exclusive GPU and CPU time."""

    def prepare_parser(self, parser: argparse.ArgumentParser) -> None:
        add_profile_arguments(parser)
        parser.add_argument(
            "-m",
            "--metric",
            choices=METRICS,
            default=None,
            help="metric to show and sort by (default: gpu_time, or cpu_time for a profile without GPU work)",
        )
        parser.add_argument("--depth", type=non_negative_int, default=None, help="show at most this many levels")
        parser.add_argument(
            "--threshold",
            type=non_negative_float,
            default=0.5,
            help="hide nodes under this %% of the total (default 0.5; 0 shows all)",
        )
        parser.add_argument(
            "--exclude", type=regex, default=None, help="hide Python frames whose file matches this regex"
        )
        parser.add_argument(
            "--include", type=regex, default=None, help="show only Python frames whose file matches this regex"
        )
        parser.add_argument("--flat", action="store_true", help="flat view: nodes summed by name, sorted by self time")
        parser.add_argument("--limit", type=non_negative_int, default=40, help="rows in the flat view (0: all)")

    def run(self, args: argparse.Namespace) -> int:
        profile = open_profile(args)
        metric = args.metric or ("gpu_time" if profile.has_gpu else "cpu_time")
        if metric == "gpu_time" and not profile.has_gpu:  # every node would read 0 ns
            raise UsageError("this profile recorded no GPU work, so there is no GPU time to show: use -m cpu_time")
        tree = build_tree(profile)
        if args.exclude or args.include:
            tree = hide_frames(tree, exclude=args.exclude, include=args.include)
        out = console()
        if args.flat:
            rows = flat(tree, metric)
            render_flat(rows, out, metric, args.limit or len(rows))  # 0 means all, as in report and export
            return 0
        render_tree(prune(tree, metric, args.depth, args.threshold), out, metric)
        return 0
