"""Building tenprof's native parts on first use: where the builds are cached, which compiler, and a build
that lands whole or not at all. torch-free.

Each native part (the call-site recorder, the CUPTI client, the access pass's tool) is built into a folder
of the cache named by a hash of what it is built from; a later run finds it there. A build runs in a fresh
folder beside its target and is renamed into place when every command succeeded, so a failed or
concurrent build (another rank) never leaves half a library where a run would load it. A failure raises
the part's own error with one line: the first error line of the compiler's output, and where the full log
was kept.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

from tenprof.errors import TenprofError

BUILD_TIMEOUT_S = 300


def cache_root(kind: str) -> Path:
    """$TENPROF_CACHE (else $XDG_CACHE_HOME/tenprof, else ~/.cache/tenprof) / `kind`."""
    base = os.environ.get("TENPROF_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "tenprof"
    )
    return Path(base) / kind


def find_compiler(unavailable: type[TenprofError]) -> str:
    """$CXX or g++, on PATH; else `unavailable` saying how to get one."""
    name = os.environ.get("CXX") or "g++"
    found = shutil.which(name)
    if found is None:
        raise unavailable(f"no C++ compiler ({name} not found): install g++ or set CXX")
    return found


def build_into(
    target: Path,
    commands: Callable[[Path], list[list[str]]],
    unavailable: type[TenprofError],
    what: str = "the build",
) -> None:
    """Run `commands(folder)` (each writing into `folder`) in a fresh folder beside `target`, and move it to
    `target` once all of them succeeded; raise `unavailable` ("`what` failed (first error); log: ...")."""
    target.parent.mkdir(parents=True, exist_ok=True)
    building = Path(tempfile.mkdtemp(prefix="build-", dir=target.parent))
    for command in commands(building):
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
        except (OSError, subprocess.SubprocessError) as exc:
            raise unavailable(f"{what} could not run ({exc})") from None
        if done.returncode != 0:
            (building / "build.log").write_text(" ".join(command) + "\n" + done.stdout + done.stderr)
            output = (done.stderr + done.stdout).splitlines()
            first = next((x for x in output if "error" in x), "") or next((x for x in output if x.strip()), "")
            raise unavailable(f"{what} failed ({first.strip()[:200]}); log: {building / 'build.log'}")
    try:
        building.rename(target)  # whole or not at all; another rank may have won the race
    except OSError:
        shutil.rmtree(building, ignore_errors=True)
