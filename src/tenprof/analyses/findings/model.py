"""What a finding says: what was seen (numbers, events, Python lines), why it matters, what to do."""

from __future__ import annotations

from typing import Protocol

from pydantic import BaseModel, Field, PrivateAttr


class Advice(Protocol):
    """A finding's advice as the parts of its cost that other findings own leave it."""

    def fix(self, owned: frozenset[str], main_kind: str) -> str: ...


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

    # What the fix is drawn from, where a check draws it from several causes (idle-gaps): findings.causes asks
    # for it again once other findings own part of that time (`refix`). A frozen value (compared and pickled
    # with the finding); not part of the JSON.
    _advice: Advice | None = PrivateAttr(default=None)

    def refix(self, owned: frozenset[str], main_kind: str) -> None:
        """The fix for what is left once other findings own the `owned` parts, `main_kind` the largest left."""
        if self._advice is not None:
            self.fix = self._advice.fix(owned, main_kind)

    def set_advice(self, advice: Advice) -> None:
        self._advice = advice
