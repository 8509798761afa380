"""`tenprof run -l "LAUNCHER ARGS" script.py`: start the ranks with the user's launcher, each rank running
`tenprof run` on itself, then print the merged report.

tenprof never starts ranks of its own: torchrun (or `python -m torch.distributed.run`) is given
`-m tenprof run ...` (its way to run a module), any other launcher (mpirun, srun) `python -m tenprof run
...`. The exit code is the launcher's.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

from tenprof.errors import UsageError

_LAUNCHER_FLAGS = ("-l", "--launcher")


def rank_command(launcher: str, argv: list[str], target: list[str]) -> list[str]:
    """The launcher's command line: its own words, then `tenprof run` with the same arguments minus -l
    (`target` is the script and its arguments, the end of argv, passed on untouched)."""
    words = shlex.split(launcher)
    if not words:
        raise UsageError("-l needs a launcher command, e.g. -l 'torchrun --nproc-per-node 2'")
    rest: list[str] = []
    skip_value = False
    options = argv[: len(argv) - len(target)]
    for word in options[1:] if options[:1] == ["run"] else options:
        if skip_value:
            skip_value = False
        elif word in _LAUNCHER_FLAGS:
            skip_value = True
        elif not any(word.startswith(flag + "=") for flag in _LAUNCHER_FLAGS):
            rest.append(word)
    if Path(words[0]).name == "torchrun" or "torch.distributed.run" in words:
        return [*words, "-m", "tenprof", "run", *rest, *target]
    return [*words, sys.executable, "-m", "tenprof", "run", *rest, *target]


def run_under_launcher(
    launcher: str, argv: list[str], target: list[str], out_dir: Path, quiet: bool, limit: int
) -> int:
    command = rank_command(launcher, argv, target)
    print("tenprof: starting the ranks: " + shlex.join(command), file=sys.stderr, flush=True)
    try:
        code = subprocess.call(command)
    except FileNotFoundError:
        raise UsageError(f"the launcher {command[0]!r} was not found") from None
    if not quiet:
        from tenprof.cli.common import console
        from tenprof.cli.ranks_report import print_ranks_report

        if out_dir.is_dir():
            print_ranks_report(out_dir, console(), limit or None)
    return code
