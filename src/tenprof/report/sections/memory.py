"""The memory section: the tensors pass's peak, what is alive at it, dead tensors and tensors kept too
long (`analyses.tensors.memory`), as many of each as the report's limit (10 when it has none)."""

from __future__ import annotations

import dataclasses
from typing import Any

from rich.console import Console

from tenprof.analyses.tensors.memory import MemoryReport, memory_report
from tenprof.renderers.memory_text import render_memory
from tenprof.report.sections.section import ReportOptions, Section
from tenprof.store.profile import Profile
from tenprof.store.schema import Pass


def analyse(profile: Profile, options: ReportOptions) -> MemoryReport | None:
    return memory_report(profile, options.limit or 10)


def text(report: MemoryReport, out: Console, options: ReportOptions) -> None:
    render_memory(report, out)


def json(report: MemoryReport) -> dict[str, Any]:
    return {"memory": dataclasses.asdict(report)}


SECTION: Section[MemoryReport] = Section("memory", (Pass.TENSORS,), analyse, text, json, ("memory",))
