"""A finding as people read it: its title and evidence with their quantities written out
(core.quantities), for the text report and the JSON alike."""

from __future__ import annotations

from tenprof.analyses.findings import Finding
from tenprof.core.quantities import format_quantities


def rendered(finding: Finding) -> Finding:
    """A copy of `finding` whose title and evidence lines read as text (numbers formatted)."""
    return finding.model_copy(
        update={"title": format_quantities(finding.title), "seen": [format_quantities(s) for s in finding.seen]}
    )
