"""The access patterns section: the reads that waste the most 32-byte sectors (strided, gathered,
scattered), most first, each with the tensor's type and the line that made it (`analyses.tensors.access_patterns`,
`analyses.tensors.tensor_forest`); None for accesses recorded before the lanes were compared."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from rich.console import Console

from tenprof.analyses.tensors.access_patterns import WASTEFUL, AccessPattern, load_patterns
from tenprof.analyses.tensors.tensor_forest import Forest
from tenprof.renderers.access_patterns_text import render_access_patterns
from tenprof.report.sections.section import ReportOptions, Section
from tenprof.store.profile import Profile
from tenprof.store.schema import Pass


@dataclass(frozen=True)
class UncoalescedRead:
    pattern: AccessPattern
    tensor: str  # its type, e.g. float32[4096, 4096]
    made_at: str  # the line that made it (its base tensor's, for a view)


def analyse(profile: Profile, options: ReportOptions) -> list[UncoalescedRead] | None:
    """The reads that waste the most sectors (strided, gathered, scattered), most first; None for accesses
    recorded before the lanes were compared (nothing to say either way)."""
    patterns = load_patterns(profile)
    if not patterns.recorded:
        return None
    found = [p for p in patterns.patterns if p.kind in WASTEFUL and not p.is_write]
    if not found:
        return []
    forest = Forest(profile)
    return [
        UncoalescedRead(p, forest.describe(p.tensor_id), forest.creator_line(forest.path_to_root(p.tensor_id)[-1]))
        for p in found[: options.limit or 10]
    ]


def text(rows: list[UncoalescedRead], out: Console, options: ReportOptions) -> None:
    render_access_patterns(rows, out)


def json(rows: list[UncoalescedRead]) -> dict[str, Any]:
    return {
        "access_patterns": [
            {
                **dataclasses.asdict(r.pattern),
                "op_seqs": list(r.pattern.op_seqs[:8]),
                "tensor": r.tensor,
                "made_at": r.made_at,
            }
            for r in rows
        ]
    }


SECTION: Section[list[UncoalescedRead]] = Section(
    "access_patterns", (Pass.TENSORS, Pass.ACCESSES), analyse, text, json, ("access_patterns",)
)
