"""`tenprof export DIR --format FORMAT -o FILE`: the formats, their writers and the passes they need are
in `report.formats`; this module parses the command line and opens the output safely."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO

from tenprof.analyses.tensors.tensor_forest import METRICS
from tenprof.errors import UsageError
from tenprof.report.formats import BY_NAME, NAMES, ExportOptions, format_from_name, reason
from tenprof.store.schema import TABLES


class ExportCommand:
    """Write a Perfetto trace, a hatchet tree, the JSON report or a table as CSV."""

    def prepare_parser(self, parser: argparse.ArgumentParser) -> None:
        from tenprof.cli.common import add_profile_arguments, non_negative_int

        add_profile_arguments(parser)
        parser.add_argument(
            "--format",
            choices=NAMES,
            default=None,
            help="output format (default: from the -o file name, else perfetto)",
        )
        parser.add_argument("-o", "--output", default=None, help="output file ('-' for standard output)")
        parser.add_argument(
            "--force",
            action="store_true",
            help="replace an existing output file (generated-code: files of the same names in its folder)",
        )
        parser.add_argument("--table", default="kernels", choices=sorted(TABLES), help="table for --format csv")
        parser.add_argument(
            "--metric", default="bytes", choices=METRICS, help="forest: order trees and size nodes by this"
        )
        parser.add_argument(
            "--limit", type=non_negative_int, default=40, help="forest: groups of trees to show (0: all)"
        )
        parser.add_argument(
            "--window", default="", help="perfetto: only START:END, in ms since the trace's start (e.g. 120:300)"
        )
        parser.add_argument(
            "--max-events",
            type=non_negative_int,
            default=0,
            help="perfetto: keep the N longest slices, summarising the rest on a track (0: all)",
        )

    def run(self, args: argparse.Namespace) -> int:
        from tenprof.cli.common import holds_ranks, open_profile

        fmt = BY_NAME[args.format] if args.format else format_from_name(args.output)
        if fmt.folder:
            _check_code_folder(args.output or fmt.default_name, args.force)
        if fmt.name in ("html", "json") and holds_ranks(Path(args.profile)) and args.rank is None:
            return _merged_ranks(fmt.name, Path(args.profile), args.output or fmt.default_name, args.force)
        profile = open_profile(args)
        fmt.check(profile)
        if (args.window or args.max_events) and fmt.name != "perfetto":
            raise UsageError(f"--window and --max-events cut a Perfetto trace, not --format {fmt.name}")
        if args.window:  # before the output is opened: a bad window leaves no empty file behind
            from tenprof.renderers.perfetto_cut import parse_window

            try:
                parse_window(args.window)
            except ValueError as exc:
                raise UsageError(str(exc)) from exc
        options = ExportOptions(
            table=args.table, metric=args.metric, limit=args.limit, window=args.window, max_events=args.max_events
        )
        if fmt.folder:
            fmt.write(profile, Path(args.output or fmt.default_name), options)
            return 0
        output = args.output or fmt.default_name.format(table=args.table)
        if output == "-":
            fmt.write(profile, sys.stdout.buffer, options)
            return 0
        write_output(Path(output), args.force, lambda out: fmt.write(profile, out, options))
        print(f"wrote {output} ({fmt.name})", file=sys.stderr)
        return 0


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


def _merged_ranks(name: str, top: Path, output: str, force: bool) -> int:
    """The formats that have a merged view of a directory of ranks: the JSON report (`tenprof report
    --json`'s merged one) and the page (the per-rank breakdown side by side, stragglers, on top of the
    first rank's own report)."""
    from tenprof.report.html_page import write_html
    from tenprof.report.ranks import ranks_data, ranks_json
    from tenprof.store.directory import rank_dirs
    from tenprof.store.profile import load_profile

    count = len(rank_dirs(top))
    if name == "json":

        def write(out: IO[bytes]) -> None:
            out.write((ranks_json(top) + "\n").encode())

    else:
        first = load_profile(rank_dirs(top)[0])
        first.check()
        extra = {"ranks": ranks_data(top), "title": f"{top} ({count} ranks)"}

        def write(out: IO[bytes]) -> None:
            write_html(first, out, extra=extra)

    if output == "-":
        write(sys.stdout.buffer)
        return 0
    write_output(Path(output), force, write)
    print(f"wrote {output} ({name}, {count} ranks merged)", file=sys.stderr)
    return 0


def check_output(path: Path, force: bool) -> None:
    """UsageError, in one line, when `path` cannot be written: it exists and `force` was not given
    (tenprof overwrites nothing unasked), it is a folder, or its folder is not there."""
    if path.is_file() and not force:
        raise UsageError(f"{path} exists; pass --force to replace it, or choose another -o")
    if path.is_dir():
        raise UsageError(f"-o {path} is a folder; give a file name (e.g. -o {path / BY_NAME['perfetto'].default_name})")
    if not path.parent.is_dir():  # as cp and tar: the folder must be there (a typo makes none)
        raise UsageError(f"cannot write -o {path}: {_missing_folder(path.parent)}")


def _missing_folder(folder: Path) -> str:
    """Why `folder` cannot hold an output, and what to do: a part of it is a file, or it is not there."""
    above = folder
    while not above.exists() and above != above.parent:
        above = above.parent
    if above.exists() and not above.is_dir():
        return f"a part of the path is a file ({above})"
    return f"{folder} does not exist (make it first: mkdir -p {folder})"


def write_output(path: Path, force: bool, write: Callable[[IO[bytes]], None]) -> None:
    """`write` into a hidden file beside `path`, then renamed over it: a writer that fails leaves no
    empty or half-written file, and with `force` the old file stays until the new one is whole."""
    check_output(path, force)
    try:  # a new file of a name no other has (never one the user made)
        handle, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tenprof-partial", dir=path.parent)
    except OSError as exc:
        raise UsageError(f"cannot write -o {path}: {reason(exc)}") from exc
    staging = Path(name)
    try:
        with os.fdopen(handle, "wb") as out:
            write(out)
        os.chmod(staging, 0o644 & ~_umask())
        os.replace(staging, path)
    except OSError as exc:
        staging.unlink(missing_ok=True)
        raise UsageError(f"cannot write -o {path}: {reason(exc)}") from exc
    except BaseException:
        staging.unlink(missing_ok=True)
        raise


def _check_code_folder(output: str, force: bool) -> None:
    """generated-code writes a folder of .py files: refuse an -o that is a file, standard output or a name
    like a file's (gen.txt), rather than make a folder of that name; and a folder that already holds
    something, unless `force` (then files of the names it writes are replaced, others kept)."""
    hint = "--format generated-code writes a folder of .py files: give a folder name with -o (e.g. -o code)"
    out_dir = Path(output)
    if output == "-":
        raise UsageError(f"cannot write to standard output (-o -); {hint}")
    if out_dir.exists() and not out_dir.is_dir():
        raise UsageError(f"-o {out_dir} is a file; {hint}")
    if not out_dir.exists() and out_dir.suffix[1:].isalpha():
        raise UsageError(f"-o {out_dir} looks like a file name; {hint}")
    if not out_dir.exists() and not out_dir.absolute().parent.is_dir():
        raise UsageError(f"cannot make -o {out_dir}: {_missing_folder(out_dir.absolute().parent)}")
    if out_dir.is_dir() and any(out_dir.iterdir()) and not force:
        raise UsageError(f"{out_dir} is not empty; pass --force to write into it, or choose another -o")
