"""The report's sections, in one registry: the text report (`tenprof report`, and after `run` and
`import`), its JSON (`--json`, `export --format json`) and anything else that shows a whole report loop
over `all_sections()`, so a section exists in every one of them or in none.

Each section is a module of this package, named in `NAMES` in report order, that defines `SECTION`, a
`Section[T]` (section.py): the passes a profile needs for it, an `analyse(profile, options)` returning
its data T (None: nothing to show for this profile), its text rendering, and its JSON: the top-level keys
it fills (null when the passes are missing or there is nothing to show). The modules are imported the
first time the sections are asked for, not with this package (they import the analyses and renderers they
use), but for `tallies`, whose `all_tallies` this package exports. Adding a section is adding its module
and its name in `NAMES`.
"""

from __future__ import annotations

import importlib
from functools import cache
from typing import Any

import orjson
from rich.console import Console

from tenprof.renderers.text import render_cut_short
from tenprof.report.sections.section import ReportOptions, Section, shown
from tenprof.report.sections.tallies import all_tallies
from tenprof.store.profile import Profile
from tenprof.store.schema import Pass

__all__ = [
    "NAMES",
    "ReportOptions",
    "Section",
    "all_sections",
    "all_tallies",
    "render_text",
    "report_data",
    "report_json",
    "section_values",
    "shown",
]

# The sections in the order the text report shows them and the JSON report holds their keys: each the
# name of its module in this package.
NAMES = (
    "findings",
    "summary",
    "step_time",
    "steps",
    "tallies",
    "compiled",
    "perf_model",
    "counters",
    "stalls",
    "memory",
    "access_patterns",
    "tensor_stall_cost",
)


@cache
def all_sections() -> tuple[Section[Any], ...]:
    """Every section, in `NAMES` order (each module imported once, on the first call). Any: each
    section's data has its own type, which its own module checks."""
    return tuple(_load(name) for name in NAMES)


def _load(name: str) -> Section[Any]:
    section: Section[Any] = importlib.import_module(f"{__name__}.{name}").SECTION
    return section


def section_values(profile: Profile, options: ReportOptions) -> list[object]:
    """Each section's data (`Section.data`), in `NAMES` order: computed once, rendered as text, JSON or both."""
    return [section.data(profile, options) for section in all_sections()]


def render_text(profile: Profile, out: Console, options: ReportOptions, values: list[object] | None = None) -> None:
    """Every section the profile supports, in order (from `values`, `section_values`'s, when given)."""
    if profile.meta.run.cut_short:  # first: every section after it stands on a partial run
        render_cut_short(profile.meta.run.cut_short_reason, out)
    if not profile.has_pass(Pass.TIMELINE):
        out.print(f"[bold]tenprof[/bold] · {' '.join(profile.meta.command)}: no timeline pass in this profile")
        for line in profile.missing():
            out.print(f"[yellow]Incomplete:[/yellow] {line}")
    for section, data in zip(all_sections(), values or section_values(profile, options), strict=True):
        if data is None or not section.has_content(data):
            continue
        if section.spaced:
            out.print()
        section.text(data, out, options)


def report_data(profile: Profile, options: ReportOptions, values: list[object] | None = None) -> dict[str, Any]:
    """The JSON report: the schema version, then every section's keys: null where the profile lacks the
    section's passes (or the section does not apply, as compiled code to an eager run), an empty list
    where it has them and found nothing. From `values` (`section_values`'s) when given."""
    data: dict[str, Any] = {"schema_version": profile.meta.schema_version}
    for section, value in zip(all_sections(), values or section_values(profile, options), strict=True):
        data.update(dict.fromkeys(section.keys) if value is None else section.json(value))
    return data


def report_json(profile: Profile, options: ReportOptions | None = None) -> str:
    return orjson.dumps(
        report_data(profile, options or ReportOptions()), option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY
    ).decode()
