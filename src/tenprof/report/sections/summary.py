"""The summary section: the run's headline numbers (`analyses.timeline.summary`); its JSON adds the percentages and
ratios the text computes from the fields, so readers of the JSON need not recompute them."""

from __future__ import annotations

import dataclasses
from typing import Any

from rich.console import Console

from tenprof.analyses.timeline.summary import Summary, summarize
from tenprof.renderers.text import render_summary
from tenprof.report.sections.section import ReportOptions, Section
from tenprof.store.profile import Profile
from tenprof.store.schema import Pass


def analyse(profile: Profile, options: ReportOptions) -> Summary:
    return summarize(profile)


def text(summary: Summary, out: Console, options: ReportOptions) -> None:
    render_summary(summary, out)


def json(summary: Summary) -> dict[str, Any]:
    data = dataclasses.asdict(summary)
    # properties the text shows, computed from the fields
    data["gpu_busy_percent"] = summary.gpu_busy_percent
    data["attribution"]["op_percent"] = summary.attribution.op_percent
    data["attribution"]["user_line_percent"] = summary.attribution.user_line_percent
    data["overhead"]["ratio"] = summary.overhead.ratio
    data["overhead"]["profiler_share"] = summary.overhead.profiler_share
    return {"summary": data}


SECTION: Section[Summary] = Section("summary", (Pass.TIMELINE,), analyse, text, json, ("summary",), spaced=False)
