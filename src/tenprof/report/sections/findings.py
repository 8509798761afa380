"""The findings section: the findings the profile supports, most costly first, and what the findings could
not judge and why; both judged on one context (`judging`), as building it scans the largest tables."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.console import Console

from tenprof.analyses.findings import Finding, find_all, judging, not_judged
from tenprof.renderers.finding_text import rendered
from tenprof.renderers.text import render_findings
from tenprof.report.sections.section import ReportOptions, Section
from tenprof.store.profile import Profile
from tenprof.store.schema import Pass


@dataclass(frozen=True)
class FindingsData:
    found: list[Finding]
    not_judged: list[str]


def analyse(profile: Profile, options: ReportOptions) -> FindingsData:
    ctx = judging(profile, options.thresholds)
    return FindingsData(find_all(profile, ctx=ctx), not_judged(profile, ctx))


def text(data: FindingsData, out: Console, options: ReportOptions) -> None:
    render_findings(data.found, out, data.not_judged)


def json(data: FindingsData) -> dict[str, Any]:
    return {"findings": [rendered(f).model_dump() for f in data.found], "not_judged": data.not_judged}


SECTION: Section[FindingsData] = Section(
    "findings", (Pass.TIMELINE,), analyse, text, json, ("findings", "not_judged"), spaced=False
)
