"""Entry point: `main(argv) -> int` parses, dispatches, and turns TenprofError into one line + exit code."""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
from typing import Any

from tenprof.core.version import VERSION
from tenprof.errors import TenprofError

# command -> (module, class): a command's module is imported only when it is run (or when the whole
# command list is shown), as each pulls in the analyses it needs
_COMMANDS = {
    "run": ("tenprof.cli.run_command", "RunCommand"),
    "report": ("tenprof.cli.report_command", "ReportCommand"),
    "view": ("tenprof.cli.view_command", "ViewCommand"),
    "export": ("tenprof.cli.export_command", "ExportCommand"),
    "diff": ("tenprof.cli.diff_command", "DiffCommand"),
    "import": ("tenprof.cli.import_command", "ImportCommand"),
    "capture": ("tenprof.cli.capture_command", "CaptureCommand"),
    "import-ncu": ("tenprof.cli.import_ncu_command", "ImportNcuCommand"),
}


def _commands(only: str | None = None) -> dict[str, Any]:
    return {
        name: getattr(importlib.import_module(module), cls)()
        for name, (module, cls) in _COMMANDS.items()
        if only is None or name == only
    }


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The command line's parser; with `argv` naming a command first, that command's alone."""
    parser = argparse.ArgumentParser(
        prog="tenprof",
        description="Why is my PyTorch GPU workload slow, and which op and Python line should I fix first?",
    )
    parser.add_argument("--version", action="version", version=f"tenprof {VERSION}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    only = argv[0] if argv and argv[0] in _COMMANDS else None
    for name, command in _commands(only).items():
        p = sub.add_parser(name, help=(command.__doc__ or "").strip().splitlines()[0], description=command.__doc__)
        command.prepare_parser(p)
        p.set_defaults(handler=command)
    return parser


def _return_freed_memory() -> None:
    """Arrow's memory through the C allocator, which gives large freed blocks back to the system: with
    Arrow's default (mimalloc) a table written and dropped stays in the process, and a large import's
    peak is the sum of its tables instead of the largest (512 MB trace: 740 -> 640 MB, no slower).
    Arrow reads the choice from its environment once, when it makes its default pool: set for that
    moment only, so the scripts tenprof runs do not inherit it. A choice the user made is kept."""
    if "ARROW_DEFAULT_MEMORY_POOL" in os.environ:
        return
    os.environ["ARROW_DEFAULT_MEMORY_POOL"] = "system"
    try:
        import pyarrow as pa

        pa.default_memory_pool()
    finally:
        del os.environ["ARROW_DEFAULT_MEMORY_POOL"]


def main(argv: list[str] | None = None) -> int:
    given = list(sys.argv[1:] if argv is None else argv)
    try:
        _return_freed_memory()
        parser = build_parser(given)
    except KeyboardInterrupt:  # Ctrl-C while tenprof's modules load: nothing has started yet
        print("tenprof: error: interrupted; nothing was written", file=sys.stderr)
        return 130
    args = parser.parse_args(given)
    args.argv = given  # `run -l` hands them on to each rank
    try:
        return int(args.handler.run(args))
    except TenprofError as exc:
        print(f"tenprof: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:  # Ctrl-C in a command with nothing of its own to clean up (a report, a view)
        print("tenprof: error: interrupted", file=sys.stderr)
        return 130
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
    code = main()
    if code == 130:  # interrupted, cleaned up and said so: a further Ctrl-C must not end the exit in a traceback
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    sys.exit(code)
