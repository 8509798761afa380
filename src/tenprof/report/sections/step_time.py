"""The step time section: the analysed steps' wall time, split into parts (`analyses.timeline.step_time`); its
JSON adds the mean step, with the profiler's own part null where it was not known (not 0)."""

from __future__ import annotations

import dataclasses
from typing import Any

from rich.console import Console

from tenprof.analyses.timeline.step_time import PARTS, StepTime, step_time
from tenprof.renderers.step_time_text import render_step_time
from tenprof.report.sections.section import ReportOptions, Section
from tenprof.store.profile import Profile
from tenprof.store.schema import Pass


def analyse(profile: Profile, options: ReportOptions) -> StepTime:
    return step_time(profile)


def text(result: StepTime, out: Console, options: ReportOptions) -> None:
    render_step_time(result, out)


def json(result: StepTime) -> dict[str, Any]:
    mean = {
        "steps": [s.step for s in result.steady],
        "wall_ns": result.mean_wall_ns,
        # the profiler's own work where it was measured or estimated; not known is null, not 0
        "parts": {
            part: (None if part == "capture" and not result.capture_method else result.mean(part)) for part in PARTS
        },
    }
    return {"step_time": {**dataclasses.asdict(result), "mean_step": mean}}


def has_content(result: StepTime) -> bool:
    return bool(result.steps)  # a run without steps: the JSON still says so, the text says nothing


SECTION: Section[StepTime] = Section(
    "step_time", (Pass.TIMELINE,), analyse, text, json, ("step_time",), has_content=has_content
)
