"""`tenprof export DIR --format FORMAT -o FILE`: the formats, their writers and the passes they need are
in `cli.export_formats`; this module parses the command line and opens the output safely."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import IO

from tenprof.analyses.tensor_forest import METRICS
from tenprof.cli.export_formats import BY_NAME, NAMES, ExportOptions, format_from_name, reason
from tenprof.errors import UsageError
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
        from tenprof.cli.common import open_profile

        fmt = BY_NAME[args.format] if args.format else format_from_name(args.output)
        if fmt.folder:
            _check_code_folder(args.output or fmt.default_name, args.force)
        if fmt.name == "html" and _holds_ranks(Path(args.profile)):
            return _ranks_page(Path(args.profile), args.output or fmt.default_name, args.force)
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
        handle = sys.stdout.buffer if output == "-" else open_output(Path(output), args.force)
        try:
            fmt.write(profile, handle, options)
        finally:
            if handle is not sys.stdout.buffer:
                handle.close()
        if output != "-":
            print(f"wrote {output} ({fmt.name})", file=sys.stderr)
        return 0


def _holds_ranks(path: Path) -> bool:
    from tenprof.store.directory import rank_dirs
    from tenprof.store.meta import META_FILE

    return bool(rank_dirs(path)) and not (path / META_FILE).exists()


def _ranks_page(top: Path, output: str, force: bool) -> int:
    """The page of a directory of ranks: the merged report (per-rank breakdown side by side, stragglers)
    on top of the first rank's own report."""
    from tenprof.cli.ranks_report import ranks_data
    from tenprof.renderers.html_page import write_html
    from tenprof.store.directory import rank_dirs
    from tenprof.store.profile import load_profile

    first = load_profile(rank_dirs(top)[0])
    first.check()
    extra = {"ranks": ranks_data(top), "title": f"{top} ({len(rank_dirs(top))} ranks)"}
    handle = sys.stdout.buffer if output == "-" else open_output(Path(output), force)
    try:
        write_html(first, handle, extra=extra)
    finally:
        if handle is not sys.stdout.buffer:
            handle.close()
    if output != "-":
        print(f"wrote {output} (html, {len(rank_dirs(top))} ranks)", file=sys.stderr)
    return 0


def open_output(path: Path, force: bool) -> IO[bytes]:
    """`path` opened for writing, its missing parent folders made first; UsageError, in one line, when
    that cannot be done (a parent is a file, no permission, the path is a folder) or when the file exists
    and `force` was not given (tenprof overwrites nothing unasked)."""
    if path.is_file() and not force:
        raise UsageError(f"{path} exists; pass --force to replace it, or choose another -o")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot make the folder {path.parent} for -o {path}: {reason(exc)}") from exc
    if path.is_dir():
        raise UsageError(f"-o {path} is a folder; give a file name (e.g. -o {path / BY_NAME['perfetto'].default_name})")
    try:
        return path.open("wb")
    except OSError as exc:
        raise UsageError(f"cannot write -o {path}: {reason(exc)}") from exc


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
    if out_dir.is_dir() and any(out_dir.iterdir()) and not force:
        raise UsageError(f"{out_dir} is not empty; pass --force to write into it, or choose another -o")
