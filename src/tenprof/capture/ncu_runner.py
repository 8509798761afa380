"""Running the counters pass's child under Nsight Compute (`ncu`): finding it, the command, progress.

torch-free (the launcher uses it). ncu replays only kernels inside the child's `tenprof_keep` NVTX
ranges (see tenprof.capture.counters), each several times, collecting `METRICS` (tenprof.core.ncu_names).
"""

from __future__ import annotations

import os
import re
import shutil
import time
from collections.abc import Callable
from pathlib import Path

from tenprof.core.ncu_names import KEEP_RANGE, METRICS
from tenprof.errors import UsageError

_PROFILING = re.compile(r"==PROF== Profiling \"([^\"]*)\"")
_PERMISSION = ("ERR_NVGPUCTRPERM", "does not have permission")


def find_ncu(explicit: str = "", needed_by: str = "counters") -> str:
    """The ncu executable: `--ncu PATH`, else ncu on PATH, else the usual install folders; not found, a
    UsageError naming the pass that needs it (`needed_by`)."""
    if explicit:
        if not (Path(explicit).is_file() and os.access(explicit, os.X_OK)):
            raise UsageError(f"--ncu {explicit}: not an executable")
        return explicit
    found = shutil.which("ncu")
    if found:
        return found
    for candidate in [*sorted(Path("/opt/nvidia").glob("nsight-compute/*/ncu")), Path("/usr/local/cuda/bin/ncu")]:
        if candidate.is_file():
            return str(candidate)
    what = {"counters": "its hardware metrics", "stalls": "its warp stall samples"}.get(needed_by, "its replays")
    raise UsageError(
        f"the {needed_by} pass needs Nsight Compute for {what}: ncu was not found on PATH "
        "(install Nsight Compute, or pass --ncu /path/to/ncu)"
    )


def ncu_command(ncu: str, report_base: Path, child: list[str], metrics: bool = True, stalls: bool = False) -> list[str]:
    """The counters pass collects METRICS; the stalls pass collects the SourceCounters section (per-PC
    warp-state samples and the SASS); one run can collect both."""
    what = (["--metrics", ",".join(METRICS)] if metrics else []) + (["--section", "SourceCounters"] if stalls else [])
    return [
        ncu,
        "--target-processes",
        "all",
        "--nvtx",
        "--nvtx-include",
        f"{KEEP_RANGE}/",
        *what,
        "--force-overwrite",
        "--export",
        str(report_base),
        *child,
    ]


def permission_problem(log_text: str) -> str:
    if any(marker in log_text for marker in _PERMISSION):
        return (
            "ncu may not read the GPU's performance counters (ERR_NVGPUCTRPERM): run as root, or allow "
            "non-admin profiling (NVreg_RestrictProfilingToAdminUsers=0, "
            "https://developer.nvidia.com/ERR_NVGPUCTRPERM)"
        )
    return ""


class Progress:
    """Counts ncu's `==PROF== Profiling "kernel"` lines and prints done / to do, elapsed and an estimate."""

    def __init__(
        self, expected: int, write: Callable[[str], None], every_s: float = 5.0, label: str = "counters"
    ) -> None:
        self.expected = expected
        self.label = label
        self.done = 0
        self.started = time.monotonic()
        self._write = write
        self._every = every_s
        self._last = 0.0

    def feed(self, line: str) -> None:
        if not _PROFILING.search(line):
            return
        self.done += 1
        now = time.monotonic()
        if now - self._last >= self._every:
            self._last = now
            self._write(self.text(now))

    def text(self, now: float | None = None) -> str:
        elapsed = (now or time.monotonic()) - self.started
        todo = f"/~{self.expected}" if self.expected else ""
        left = ""
        if self.expected and self.done and self.done < self.expected:
            left = f", ~{elapsed / self.done * (self.expected - self.done):.0f}s left"
        return f"tenprof {self.label}: {self.done}{todo} kernels replayed, {elapsed:.0f}s{left}"
