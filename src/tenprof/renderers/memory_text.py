"""The memory section of `tenprof report` (from the tensors pass), with rich."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from tenprof.analyses.tensors.memory import HeldStorage, MemoryReport
from tenprof.core.units import size


def render_memory(report: MemoryReport, console: Console) -> None:
    console.print(f"[bold]Memory[/bold] ({report.device}, tensors pass: {report.op_count} ops)")
    a = report.allocator
    if a is not None:
        where = f"op {a.op_seq} ({escape(a.op)}" + (f" at {escape(a.line)})" if a.line else ")")
        console.print(
            f"  Peak: {size(a.peak_bytes)} allocated, reached in {where}: {size(a.tensor_bytes)} op outputs "
            f"({size(a.tensor_requested_bytes)} requested), {size(a.other_bytes)} that no op output owns"
        )
        for o in a.other:
            line = f" at {escape(o.line)}" if o.line else ""
            console.print(f"    {size(o.nbytes):>10}  in {o.count} block(s) allocated by {escape(o.op)}{line}")
    outputs = f"{size(report.peak_rounded_bytes)} at op {report.peak_op_seq} ({escape(report.peak_op)}"
    outputs += f" at {escape(report.peak_line)})" if report.peak_line else ")"
    console.print(f"  {'Op outputs alone peak' if a is not None else 'Peak (op outputs)'}: {outputs}")
    if report.allocator_peak_bytes >= 0:
        reference = a.peak_bytes if a is not None else report.peak_rounded_bytes
        gap = report.allocator_peak_bytes - reference
        line = f"  torch.cuda.max_memory_allocated(): {size(report.allocator_peak_bytes)}"
        if gap == 0:
            line += " (the same)"
        else:
            line += f" ({size(abs(gap))} {'more' if gap > 0 else 'less'}"
            if a is None and report.untracked_at_end_bytes > 0:
                line += f": {size(report.untracked_at_end_bytes)} still held at the end by no op output (workspaces)"
            line += ")"
        console.print(line)
    if report.at_peak:
        console.print(
            f"  Alive at the peak (largest first); {size(report.at_peak_unused_after_bytes)} of it is never used again:"
        )
        console.print(_table(report.at_peak, with_next=True))
    if report.dead:
        console.print(f"  Made and never read by any op: {size(report.dead_bytes)} in all (largest first)")
        console.print(_table(report.dead))
    if report.kept_alive:
        console.print("  Kept allocated long after their last use (bytes x ops held, largest first):")
        console.print(_table(report.kept_alive, held=True))


def _table(rows: list[HeldStorage], with_next: bool = False, held: bool = False) -> Table:
    table = Table(box=None, padding=(0, 1), show_edge=False)
    table.add_column("Tensor")
    table.add_column("Type")
    table.add_column("Bytes", justify="right")
    table.add_column("Like it", justify="right")
    table.add_column("Made by")
    table.add_column("Line")
    table.add_column("Ops alive", justify="right")
    if with_next:
        table.add_column("Next use", justify="right")
    if held:
        table.add_column("Last use", justify="right")
    for r in rows:
        cells = [
            f"T{r.tensor_id}",
            escape(r.what),
            size(r.nbytes),
            f"x{r.count}, {size(r.total_bytes)}" if r.count > 1 else "",
            escape(r.creator_op or "(unseen)"),
            escape(r.line),
            f"{r.alloc_op_seq}..{r.free_op_seq if r.free_op_seq >= 0 else 'end'}",
        ]
        if with_next:
            cells.append(str(r.next_use_op_seq) if r.next_use_op_seq >= 0 else "never")
        if held:
            cells.append(str(r.last_use_op_seq))
        table.add_row(*cells)
    return table
