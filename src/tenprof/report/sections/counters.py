"""The hardware counters section: each operator's metrics and roofline verdict from the counters pass
(`analyses.kernels.counters`), judged under the findings' thresholds; None where no kernel was measured."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from tenprof.analyses.findings import Thresholds
from tenprof.analyses.kernels.counters import OperatorsReport, operators_report
from tenprof.renderers.counters_text import render_counters
from tenprof.report.sections.section import ReportOptions, Section
from tenprof.store.profile import Profile
from tenprof.store.schema import Pass


def analyse(profile: Profile, options: ReportOptions) -> OperatorsReport | None:
    return operators_report(profile, (options.thresholds or Thresholds()).roofline())


def text(report: OperatorsReport, out: Console, options: ReportOptions) -> None:
    render_counters(report, out, options.limit)


def json(report: OperatorsReport) -> dict[str, Any]:
    return {"counters": report.model_dump()}  # a pydantic model: its JSON shape is declared there


SECTION: Section[OperatorsReport] = Section("counters", (Pass.COUNTERS,), analyse, text, json, ("counters",))
