"""The warp stalls section: per sampled kernel, the instructions that took the most blame after the blame
shift, then the same samples by op and line (`analyses.kernels.stalls`); each sampled load with how its warps
read memory, where an accesses pass compared lanes (`analyses.tensors.access_patterns`)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from rich.console import Console

from tenprof.analyses.kernels.stalls import KernelStalls, StallRollup, kernel_stalls, stall_rollup
from tenprof.analyses.tensors.access_patterns import AccessPattern, stalled_load_patterns
from tenprof.renderers.stalls_text import render_rollup, render_stalls
from tenprof.report.sections.section import ReportOptions, Section
from tenprof.store.profile import Profile
from tenprof.store.schema import Pass


@dataclass(frozen=True)
class LoadAt:
    """How the sampled load at one PC of one replayed kernel read memory."""

    replay_id: int
    pc: int
    pattern: AccessPattern


@dataclass(frozen=True)
class StallsData:
    kernels: list[KernelStalls]
    by_op_and_line: list[StallRollup]
    load_patterns: list[LoadAt] = dataclasses.field(default_factory=list)  # how each sampled load read


def analyse(profile: Profile, options: ReportOptions) -> StallsData:
    kernels = kernel_stalls(profile)
    if not kernels:
        return StallsData([], [])
    loads = [LoadAt(rid, pc, p) for (rid, pc), p in stalled_load_patterns(profile).items()]
    return StallsData(kernels, stall_rollup(profile), loads)


def text(data: StallsData, out: Console, options: ReportOptions) -> None:
    patterns = {(load.replay_id, load.pc): load.pattern for load in data.load_patterns}
    render_stalls(data.kernels, out, options.limit, patterns)
    render_rollup(data.by_op_and_line, out, options.limit)


def json(data: StallsData) -> dict[str, Any]:
    return {"stalls": dataclasses.asdict(data)}


def has_content(data: StallsData) -> bool:
    return bool(data.kernels)


SECTION: Section[StallsData] = Section(
    "stalls", (Pass.STALLS,), analyse, text, json, ("stalls",), has_content=has_content
)
