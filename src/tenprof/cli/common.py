"""Options and helpers shared by the subcommands that read a profile."""

from __future__ import annotations

import argparse
import sys

from rich.console import Console

from tenprof.store.profile import Profile, load_profile


def add_profile_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("profile", help="profile directory (from tenprof run or tenprof import)")
    parser.add_argument(
        "--steps",
        default="",
        help="only these steps: '2:' (from 2 on, skipping cold steps), ':3' (before 3), '1,3-5' (inclusive)",
    )


def open_profile(args: argparse.Namespace) -> Profile:
    profile = load_profile(args.profile)
    if getattr(args, "steps", ""):
        from tenprof.analyses.selection import select_steps

        profile = select_steps(profile, args.steps)
    return profile


def console(width: int | None = None) -> Console:
    # Wide enough for kernel names when writing to a file or pipe; rich uses the terminal's width otherwise.
    return Console(file=sys.stdout, width=width or (None if sys.stdout.isatty() else 160), highlight=False)
