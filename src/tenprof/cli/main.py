"""Entry point: `main(argv) -> int` parses, dispatches, and turns TenprofError into one line + exit code."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from tenprof import __version__
from tenprof.errors import TenprofError


def _commands() -> dict[str, Any]:
    from tenprof.cli.diff_command import DiffCommand
    from tenprof.cli.export_command import ExportCommand
    from tenprof.cli.import_command import ImportCommand
    from tenprof.cli.import_ncu_command import ImportNcuCommand
    from tenprof.cli.report_command import ReportCommand
    from tenprof.cli.run_command import RunCommand
    from tenprof.cli.view_command import ViewCommand

    return {
        "run": RunCommand(),
        "report": ReportCommand(),
        "view": ViewCommand(),
        "export": ExportCommand(),
        "diff": DiffCommand(),
        "import": ImportCommand(),
        "import-ncu": ImportNcuCommand(),
    }


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tenprof",
        description="Why is my PyTorch GPU workload slow, and which op and Python line should I fix first?",
    )
    parser.add_argument("--version", action="version", version=f"tenprof {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, command in _commands().items():
        p = sub.add_parser(name, help=(command.__doc__ or "").strip().splitlines()[0], description=command.__doc__)
        command.prepare_parser(p)
        p.set_defaults(handler=command)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)  # `run -l` hands them on to each rank
    try:
        return int(args.handler.run(args))
    except TenprofError as exc:
        print(f"tenprof: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except BrokenPipeError:  # `tenprof report ... | head` stopped reading: not an error
        _silence_stdout()
        return 0


def _silence_stdout() -> None:
    """Point stdout's file descriptor at /dev/null: Python flushes stdout once more at exit, which would
    fail on the closed pipe again ("Exception ignored ... BrokenPipeError") and make the exit status 120."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # stdout is not a file (a test's capture): nothing will flush to a pipe
        pass


def entry_point() -> None:
    sys.exit(main())
