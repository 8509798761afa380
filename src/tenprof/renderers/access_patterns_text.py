"""The access patterns section of `tenprof report`: the reads that touch the most 32-byte sectors beyond
what a contiguous read of the same bytes would (strided, gathered, scattered), each with its op, line,
tensor and how its warps accessed memory."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape

from tenprof.analyses.tensors.access_patterns import describe


def render_access_patterns(rows: list[Any], console: Console) -> None:
    """`rows`: UncoalescedRead (report.sections.access_patterns): the pattern, the tensor's type, where it was made."""
    console.print(
        "[bold]Uncoalesced reads[/bold] (accesses pass: each sampled warp's lanes compared; sectors beyond "
        "a contiguous read of the same bytes)"
    )
    for row in rows:
        p = row.pattern
        wasted = p.sectors - p.min_sectors
        where = " ".join(filter(None, [p.op or "a kernel outside ops", f"at {p.line}" if p.line else ""]))
        tensor = f"T{p.tensor_id} {row.tensor}" + (f" (made at {row.made_at})" if row.made_at else "")
        console.print(f"  {wasted:12.0f} extra sectors  {escape(where)} reads {escape(tensor)}")
        console.print(f"{'':22}{escape(describe(p))}")
