"""Options and helpers shared by the subcommands that read a profile."""

from __future__ import annotations

import argparse
import math
import sys

from rich.console import Console

from tenprof.store.profile import Profile, load_profile


def non_negative_int(text: str) -> int:
    """argparse type of --limit and --depth: a whole number, 0 or more (a negative one used to be taken
    and silently drop rows from the end)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"needs a whole number, 0 or more, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"needs a whole number, 0 or more, got {value}")
    return value


def non_negative_float(text: str) -> float:
    """argparse type of view's --threshold: a number, 0 or more ('inf' is one: it hides everything)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"needs a number, 0 or more, got {text!r}") from None
    if math.isnan(value) or value < 0:
        raise argparse.ArgumentTypeError(f"needs a number, 0 or more, got {text}")
    return value


def threshold_override(text: str) -> str:
    """argparse type of report's --threshold NAME=VALUE: VALUE is a number, 0 or more (every threshold is
    a share, a count, a size or a time). Thresholds.with_overrides checks the name."""
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"needs NAME=VALUE (tenprof report --list-thresholds), got {text!r}")
    try:
        non_negative_float(value)
    except argparse.ArgumentTypeError as exc:
        raise argparse.ArgumentTypeError(f"{name.strip()} {exc}") from None
    return text


def add_profile_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("profile", help="profile directory (from tenprof run or tenprof import)")
    parser.add_argument(
        "--steps",
        default="",
        help="only these steps: '2:' (from 2 on, skipping cold steps), ':3' (before 3), '1,3-5' (inclusive)",
    )


def open_profile(args: argparse.Namespace) -> Profile:
    profile = load_profile(args.profile)
    profile.check()  # a damaged table fails here, in one line, before any part of a report is printed
    if getattr(args, "steps", ""):
        from tenprof.analyses.selection import select_steps

        profile = select_steps(profile, args.steps)
    return profile


class _Console(Console):
    def on_broken_pipe(self) -> None:
        # rich exits with status 1 when the reader went away (`tenprof report | head`); main() exits with 0.
        self.quiet = True
        raise BrokenPipeError


def console(width: int | None = None) -> Console:
    # Wide enough for kernel names when writing to a file or pipe; rich uses the terminal's width otherwise.
    return _Console(file=sys.stdout, width=width or (None if sys.stdout.isatty() else 160), highlight=False)
