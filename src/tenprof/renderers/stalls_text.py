"""The stalls section of `tenprof report`: per sampled kernel, the instructions that took the blame, each
load with how its warps accessed memory where the accesses pass compared lanes (uncoalesced loads stand
out: `strided 16.0KiB: 32.0 sectors/req, ideal 4.0`)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape

from tenprof.analyses.kernels.stalls import KernelStalls, StallRollup
from tenprof.core.inductor import is_generated_file


def render_rollup(rows: list[StallRollup], console: Console, limit: int | None) -> None:
    console.print(
        "  By op and line (each sampled kernel counted once per op instance it stands for, a generated "
        "kernel once per launch):"
    )
    for r in rows[: limit or None]:
        line = f" at {escape(r.line)}" if r.line else ""
        load = f"; most blamed: {escape(r.top_load[:50])}" if r.top_load else ""
        console.print(
            f"    {r.memory_samples:10.0f} memory / {r.weighted_samples:10.0f} samples  {escape(r.op)}{line}{load}"
        )


def render_stalls(
    kernels: list[KernelStalls],
    console: Console,
    limit: int | None,
    load_patterns: dict[tuple[int, int], Any] | None = None,
) -> None:
    from tenprof.renderers.stall_cost_files import short_pattern

    console.print("[bold]Warp stalls, blamed on the instruction waited for[/bold] (Nsight Compute PC sampling)")
    for k in kernels[: limit or None]:
        where = f" in {escape(k.where)}" if k.where else ""
        console.print(
            f"  {escape(k.name[:70])}{where}: {k.samples:.0f} samples, {k.memory_share:.0%} waiting on memory"
        )
        for h in k.hot:
            mix = ", ".join(f"{r} {v:.0f}" for r, v in list(h.reasons.items())[:3])
            moved = f", {h.shifted_in:.0f} shifted here" if h.shifted_in else ""
            where = escape(h.source.rsplit("/", 1)[-1])
            source = f"  ({where})" if h.source and not h.source_text else ""
            console.print(f"    {h.share:5.1%}  {h.pc:#x}  {escape(h.text[:60]):<60}  {mix}{moved}{source}")
            pattern = (load_patterns or {}).get((k.replay_id, h.pc))
            if pattern is not None:
                console.print(f"{'':27}accessed: {escape(short_pattern(pattern))}")
            if h.source_text:
                console.print(f"{'':27}{where}: {escape(h.source_text[:100])}")
    if any(
        h.source_text and is_generated_file(h.source.rsplit(":", 1)[0]) for k in kernels[: limit or None] for h in k.hot
    ):
        console.print(
            "  torch.compile's generated code is kept in the profile: tenprof export DIR --format generated-code "
            "-o DIR2 writes each kernel's source as <kernel>.py, with these line numbers"
        )
