"""`--schedule wait=W,warmup=U,active=A`: which tenprof.step() windows the timeline records (no torch)."""

from __future__ import annotations

from dataclasses import dataclass

from tenprof.errors import UsageError


@dataclass(frozen=True)
class Schedule:
    """torch.profiler's wait/warmup/active schedule over tenprof.step() calls, one cycle."""

    wait: int = 0
    warmup: int = 0
    active: int = 1

    @staticmethod
    def parse(text: str) -> Schedule:
        values = {"wait": 0, "warmup": 0, "active": 1}
        for part in text.split(","):
            key, _, value = part.partition("=")
            if key.strip() not in values or not value.strip().isdigit():
                raise UsageError(f"bad --schedule part {part!r}; expected e.g. wait=1,warmup=1,active=3")
            values[key.strip()] = int(value)
        if values["active"] < 1:
            raise UsageError("--schedule needs active >= 1")
        return Schedule(**values)
