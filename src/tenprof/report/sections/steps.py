"""The per-step breakdown section: where each step's GPU time went (compute, communication, transfers,
idle; `analyses.timeline.temporal`). A run without GPU work has no steps to break down: an empty list."""

from __future__ import annotations

import dataclasses
from typing import Any

from rich.console import Console

from tenprof.analyses.timeline.temporal import StepBreakdown, temporal_breakdown
from tenprof.renderers.text import render_breakdown
from tenprof.report.sections.section import ReportOptions, Section
from tenprof.store.profile import Profile
from tenprof.store.schema import Pass


def analyse(profile: Profile, options: ReportOptions) -> list[StepBreakdown]:
    return temporal_breakdown(profile) if profile.has_gpu else []


def text(rows: list[StepBreakdown], out: Console, options: ReportOptions) -> None:
    render_breakdown(rows, out)


def json(rows: list[StepBreakdown]) -> dict[str, Any]:
    return {"steps": [dataclasses.asdict(row) for row in rows]}


SECTION: Section[list[StepBreakdown]] = Section("steps", (Pass.TIMELINE,), analyse, text, json, ("steps",))
