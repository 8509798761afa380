"""Options and helpers shared by the subcommands that read a profile."""

from __future__ import annotations

import argparse
import math
import re
import sys
from pathlib import Path
from typing import TextIO, cast

from rich.console import Console

from tenprof.errors import UsageError
from tenprof.store.directory import RANK_DIR_PREFIX, rank_dir, rank_dirs
from tenprof.store.meta import META_FILE
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


def regex(text: str) -> str:
    """argparse type of view's --exclude/--include: a regular expression that compiles (a bad one used to
    end the report in re's traceback)."""
    try:
        re.compile(text)
    except re.error as exc:
        raise argparse.ArgumentTypeError(f"not a regular expression ({exc}): {text!r}") from None
    return text


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
        "--rank", type=int, default=None, help="a directory of ranks (rankNNNNN/): this rank's profile alone"
    )
    parser.add_argument(
        "--steps",
        default="",
        help="only these steps: '2:' (from 2 on, skipping cold steps), ':3' (before 3), '1,3-5' (inclusive)",
    )


def holds_ranks(path: Path) -> bool:
    """A directory of one profile per rank (`rankNNNNN/`), not a profile itself."""
    return bool(rank_dirs(path)) and not (path / META_FILE).exists()


def rank_profile(top: Path, rank: int | None, command: str) -> Path:
    """The profile a command reads: `top` itself, or with `rank`, that rank's folder of a directory of
    ranks. A directory of ranks with no rank given is refused, naming its ranks and what reads them all
    (the same words from every command that reads one profile)."""
    if not holds_ranks(top):
        if rank is not None:
            raise UsageError(f"{top} is a single-process profile; --rank is for a directory of ranks")
        return top
    ranks = ", ".join(p.name for p in rank_dirs(top))
    if rank is None:
        first = rank_dirs(top)[0]
        choose = f"--rank {_rank_number(first)}" if command != "diff" else str(first)
        raise UsageError(
            f"{top} holds one profile per rank ({ranks}): tenprof {command} reads one rank's, e.g. {choose}; "
            f"tenprof report {top} merges them"
        )
    path = rank_dir(top, rank)
    if not (path / META_FILE).exists():
        raise UsageError(f"{top} has no rank {rank}; ranks: {ranks}")
    return path


def _rank_number(path: Path) -> int:
    return int(path.name[len(RANK_DIR_PREFIX) :])


def open_profile(args: argparse.Namespace) -> Profile:
    path = rank_profile(Path(args.profile), getattr(args, "rank", None), getattr(args, "command", "") or "report")
    profile = load_profile(path)
    profile.check()  # a damaged table fails here, in one line, before any part of a report is printed
    if getattr(args, "steps", ""):
        from tenprof.analyses.timeline.selection import select_steps

        profile = select_steps(profile, args.steps)
    return profile


class _Console(Console):
    def on_broken_pipe(self) -> None:
        # rich exits with status 1 when the reader went away (`tenprof report | head`); main() exits with 0.
        self.quiet = True
        raise BrokenPipeError


class _TrimmedLines:
    """A text stream that writes each line without its trailing spaces: rich pads every cell of a table or
    grid to its column's width, which a terminal hides and a file, a pipe or a diff keeps."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.pending = ""

    def write(self, text: str) -> int:
        lines = (self.pending + text).split("\n")
        self.pending = lines.pop()
        if lines:
            self.stream.write("".join(line.rstrip(" ") + "\n" for line in lines))
        return len(text)

    def flush(self) -> None:
        if self.pending:
            self.stream.write(self.pending.rstrip(" "))
            self.pending = ""
        self.stream.flush()

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        return self.stream.fileno()


def console(width: int | None = None) -> Console:
    # Wide enough for kernel names when writing to a file or pipe; rich uses the terminal's width otherwise.
    if sys.stdout.isatty():
        return _Console(file=sys.stdout, width=width, highlight=False)
    trimmed = cast(TextIO, _TrimmedLines(sys.stdout))  # rich needs only write, flush, isatty and fileno
    return _Console(file=trimmed, width=width or 160, highlight=False)
