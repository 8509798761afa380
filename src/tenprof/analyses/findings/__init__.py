"""Findings: the trace-reading expertise, as pure checks over a profile, ranked by the time they cost.

Each check lives in its own module and has the signature `check(ctx: Context) -> list[Finding]`.
Thresholds are named (`<check>.<name>`), documented in `thresholds.py`, and overridable from the
command line (`tenprof report --threshold sync.min_per_step=2`).
"""

from __future__ import annotations

from tenprof.analyses.findings.context import Context
from tenprof.analyses.findings.model import Finding
from tenprof.analyses.findings.thresholds import Thresholds
from tenprof.store.profile import Profile


def find_all(profile: Profile, thresholds: Thresholds | None = None) -> list[Finding]:
    """Every finding the profile supports, most costly first."""
    from tenprof.analyses.findings import cold_start, copies, idle, launch_bound, syncs, transfers, variance

    ctx = Context(profile, thresholds or Thresholds())
    found: list[Finding] = []
    for module in (launch_bound, idle, syncs, transfers, copies, cold_start, variance):
        found.extend(module.check(ctx))
    found.sort(key=lambda f: (-f.cost_ns, f.id))
    return found


__all__ = ["Finding", "Thresholds", "find_all"]
