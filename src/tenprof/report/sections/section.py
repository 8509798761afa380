"""What one section of the report is: `Section[T]`, the options every section reads (`ReportOptions`),
and the default test of whether a section's data has anything to show (`shown`).

T is the section's data: what its `analyse` returns and its `text` and `json` take, so that mypy checks
the three against each other. Each module of this package defines one `SECTION`; this one defines none.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from rich.console import Console

from tenprof.analyses.findings import Thresholds
from tenprof.store.profile import Profile

T = TypeVar("T")


@dataclass(frozen=True)
class ReportOptions:
    limit: int | None = None  # rows per table in text (None: all)
    thresholds: Thresholds | None = None  # the findings' (None: the defaults)


def shown(data: object) -> bool:
    """Whether a section's data has anything to show (None and empty lists do not)."""
    return data is not None and not (isinstance(data, list) and not data)


@dataclass(frozen=True)
class Section(Generic[T]):
    name: str  # the name of its module in this package
    passes: tuple[str, ...]  # the profile must have all of these
    analyse: Callable[[Profile, ReportOptions], T | None]  # None: nothing to show, its keys null in JSON
    text: Callable[[T, Console, ReportOptions], None]
    json: Callable[[T], dict[str, Any]]  # top-level keys of the JSON report
    keys: tuple[str, ...]  # the keys `json` fills: null when the profile lacks the section's passes
    spaced: bool = True  # a blank line before it in text
    has_content: Callable[[T], bool] = shown  # whether the text shows it (an empty list: no)

    def data(self, profile: Profile, options: ReportOptions) -> T | None:
        if not all(profile.has_pass(p) for p in self.passes):
            return None
        return self.analyse(profile, options)
