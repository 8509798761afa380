"""The compiled code section: kernels of torch.compile'd code attributed to the aten ops they fuse and
to their lines (`analyses.kernels.compiled`); None when no kernel time is in compiled code (an eager run)."""

from __future__ import annotations

import dataclasses
from typing import Any

from rich.console import Console

from tenprof.analyses.kernels.compiled import CompiledReport, compiled_report
from tenprof.renderers.compiled_text import render_compiled
from tenprof.report.sections.section import ReportOptions, Section
from tenprof.store.profile import Profile
from tenprof.store.schema import Pass


def analyse(profile: Profile, options: ReportOptions) -> CompiledReport | None:
    return compiled_report(profile)


def text(report: CompiledReport, out: Console, options: ReportOptions) -> None:
    render_compiled(report, out, options.limit)


def json(report: CompiledReport) -> dict[str, Any]:
    data = dataclasses.asdict(report)
    data["ops_share"], data["lines_share"] = report.ops_share, report.lines_share
    return {"compiled": data}


SECTION: Section[CompiledReport] = Section("compiled", (Pass.TIMELINE,), analyse, text, json, ("compiled",))
