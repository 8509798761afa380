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
import time
from pathlib import Path

from tenprof.errors import UsageError
from tenprof.store.directory import MARKER_FILE, is_profile_dir, rank_dirs, remove_profile

_LAUNCHER_FLAGS = ("-l", "--launcher")


def _long_prefixes() -> tuple[str, ...]:
    """What argparse accepts for --launcher: the flag or any unambiguous prefix (no other run option
    starts with --l)."""
    return tuple("--launcher"[:n] for n in range(3, len("--launcher") + 1))


def _names_launcher(word: str) -> bool:
    """`-l`, `-lVALUE`, `--launcher`, `--launcher=VALUE` and argparse's prefixes of it (`--launch ...`)."""
    if word.startswith("--"):
        return word.split("=", 1)[0] in _long_prefixes()
    return word.startswith("-l")


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
        elif _names_launcher(word):
            skip_value = "=" not in word and word in ("-l", *_long_prefixes())
        else:
            rest.append(word)
    if Path(words[0]).name == "torchrun" or "torch.distributed.run" in words:
        return [*words, "-m", "tenprof", "run", *rest, *target]
    return [*words, sys.executable, "-m", "tenprof", "run", *rest, *target]


def prepare_ranks_dir(out_dir: Path, force: bool) -> None:
    """Once, before any rank starts: an existing output directory is refused, unless --force and each
    rank folder in it is a profile tenprof can replace (each rank replaces its own folder, staged, when
    its profile is complete). Other files in the directory are kept."""
    if not out_dir.exists():
        return
    if not out_dir.is_dir():
        raise UsageError(f"{out_dir} exists and is not a directory; choose another with -o")
    entries = list(out_dir.iterdir())
    if not entries:
        return
    if not force:
        raise UsageError(f"{out_dir} already exists; pass --force to replace it or -o DIR to choose another")
    ranks = rank_dirs(out_dir)
    if not ranks:
        raise UsageError(f"{out_dir} holds no rank profiles; refusing to replace it (choose another with -o)")
    foreign = [r for r in ranks if not is_profile_dir(r)]
    if foreign:
        raise UsageError(f"{foreign[0]} is not a profile tenprof can replace (no marker); remove it yourself or use -o")


def remove_stale_ranks(out_dir: Path, started: float) -> None:
    """After a --force launch: rank profiles this launch did not rewrite (fewer ranks this time) would
    mix into the merged report; remove what tenprof wrote in them (and the folder, once empty)."""
    for rank in rank_dirs(out_dir):
        marker = rank / MARKER_FILE
        if is_profile_dir(rank) and marker.stat().st_mtime < started:
            remove_profile(rank)


def run_under_launcher(
    launcher: str, argv: list[str], target: list[str], out_dir: Path, quiet: bool, limit: int, force: bool = False
) -> int:
    prepare_ranks_dir(out_dir, force)
    started = time.time()
    command = rank_command(launcher, argv, target)
    if not quiet:
        print("tenprof: starting the ranks: " + shlex.join(command), file=sys.stderr, flush=True)
    try:
        code = subprocess.call(command)
    except FileNotFoundError:
        raise UsageError(f"the launcher {command[0]!r} was not found") from None
    if force and out_dir.is_dir():
        remove_stale_ranks(out_dir, started)
    if not quiet:
        from tenprof.cli.common import console
        from tenprof.report.ranks import print_ranks_report

        if out_dir.is_dir():
            print_ranks_report(out_dir, console(), limit or None)
    return code
