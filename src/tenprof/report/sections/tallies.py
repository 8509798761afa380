"""The tallies section: iprof-shaped tables of time per kernel, per op (GPU and CPU), per copy and per
CUDA call (`analyses.timeline.tally`); `all_tallies` is the list a profile supports, in the order they print."""

from __future__ import annotations

import dataclasses
from typing import Any

from rich.console import Console

from tenprof.analyses.timeline import tally as tallies
from tenprof.renderers.text import render_tally
from tenprof.report.sections.section import ReportOptions, Section
from tenprof.store.profile import Profile
from tenprof.store.schema import Pass


def all_tallies(profile: Profile) -> list[tallies.Tally]:
    """The tallies a profile supports: kernels, GPU time per op, copies and CUDA calls when it has GPU
    work, and CPU time per op always."""
    found = [tallies.op_cpu_tally(profile)]
    if profile.has_gpu:
        found = [
            tallies.kernel_tally(profile),
            tallies.op_gpu_tally(profile),
            tallies.transfer_tally(profile),
            tallies.api_tally(profile),
            *found,
        ]
    return found


def analyse(profile: Profile, options: ReportOptions) -> list[tallies.Tally]:
    return all_tallies(profile)


def text(found: list[tallies.Tally], out: Console, options: ReportOptions) -> None:
    with_rows = [t for t in found if t.rows]  # an empty table says nothing: left out of the text, not the JSON
    for i, t in enumerate(with_rows):
        if i:
            out.print()
        render_tally(t, out, options.limit)


def json(found: list[tallies.Tally]) -> dict[str, Any]:
    return {"tallies": [dataclasses.asdict(t) for t in found]}


SECTION: Section[list[tallies.Tally]] = Section("tallies", (Pass.TIMELINE,), analyse, text, json, ("tallies",))
