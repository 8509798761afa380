"""What a finding says: what was seen (numbers, events, Python lines), why it matters, what to do."""

from __future__ import annotations

from collections.abc import Callable

from pydantic import BaseModel, Field, PrivateAttr


class Finding(BaseModel):
    id: str = Field(description="stable identifier of the check, e.g. sync-in-loop")
    title: str = Field(description="one line naming the problem and its size")
    cost_ns: int = Field(description="estimated time it costs over the analysed steps; findings are ranked by it")
    seen: list[str] = Field(default_factory=list, description="evidence: measured numbers and events")
    where: list[str] = Field(default_factory=list, description="the Python lines involved, worst first")
    why: str = Field(description="why it matters")
    fix: str = Field(description="what to do about it")
    numbers: dict[str, float] = Field(default_factory=dict, description="the key numbers, machine-readable")
    once: bool = Field(False, description="a one-off cost (start-up), ranked after the costs paid every step")
    urgent: bool = Field(
        False,
        description="the run failed or will fail (out of memory): ranked before every cost of time, whatever its "
        "cost_ns (often 0)",
    )

    # How the fix reads once other findings own part of what it was drawn from: given those parts and the kind
    # of time left the largest, the advice for the rest (set by a check whose advice is drawn from several
    # causes, idle-gaps; asked by findings.causes when it moves time to the findings that name a cause).
    # Not part of the JSON.
    _refix: Callable[[frozenset[str], str], str] | None = PrivateAttr(default=None)

    def refix(self, owned: frozenset[str], main_kind: str) -> None:
        if self._refix is not None:
            self.fix = self._refix(owned, main_kind)

    def set_refix(self, refix: Callable[[frozenset[str], str], str]) -> None:
        self._refix = refix
