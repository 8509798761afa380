"""What a finding says: what was seen (numbers, events, Python lines), why it matters, what to do."""

from __future__ import annotations

from pydantic import BaseModel, Field


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
