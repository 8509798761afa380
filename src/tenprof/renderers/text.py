"""Terminal output with rich: the summary, iprof-shaped tallies, the call-path tree and the flat view.

Each function takes plain result objects and a rich Console; the CLI decides where the console writes.
"""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.tree import Tree

from tenprof.analyses.findings import Finding
from tenprof.analyses.timeline.calltree import FlatRow, Node
from tenprof.analyses.timeline.overhead import Overhead
from tenprof.analyses.timeline.summary import MemoryPeak, Summary
from tenprof.analyses.timeline.tally import Tally
from tenprof.analyses.timeline.temporal import StepBreakdown
from tenprof.core.quantities import format_quantities
from tenprof.core.units import duration, size
from tenprof.renderers.finding_text import rendered


def render_cut_short(reason: str, console: Console) -> None:
    """The first line of a report whose run was cut short: what the rest stands on is partial."""
    console.print(f"[bold red]The run was cut short:[/bold red] {escape(reason)}")


def render_summary(summary: Summary, console: Console) -> None:
    console.print(f"[bold]tenprof[/bold] · {summary.source}: {escape(summary.command)}")
    for note in summary.notes:
        console.print(f"[yellow]Incomplete:[/yellow] {escape(note)}")
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold")
    grid.add_column()
    grid.add_row("Device", escape("; ".join(summary.devices) + (f" on {summary.host}" if summary.host else "")))
    if summary.versions:
        grid.add_row("Software", summary.versions)
    if summary.wall_time_s:
        grid.add_row("Wall time", f"{summary.wall_time_s:.3f}s (script), {duration(summary.window_ns)} profiled")
    else:
        grid.add_row("Profiled", duration(summary.window_ns))
    if summary.kernel_count or summary.transfer_count:
        busy = f"{summary.gpu_busy_percent:.1f}% of the profiled window ({duration(summary.gpu_busy_ns)})"
        if summary.step_count:
            busy += f"; {summary.steps_gpu_busy_percent:.1f}% within the {summary.step_count} complete steps"
        grid.add_row("GPU busy", busy)
        grid.add_row(
            "Kernels",
            f"{summary.kernel_count} launches, {duration(summary.kernel_time_ns)}; "
            f"{summary.transfer_count} copies/sets, {duration(summary.transfer_time_ns)}",
        )
        a = summary.attribution
        grid.add_row(
            "Attribution",
            f"{a.op_percent:.1f}% of kernel time to an aten op"
            + (f" or your own kernel's launch ({a.user_kernel_percent:.1f}%)" if a.to_user_kernel_ns else "")
            + f", {a.user_line_percent:.1f}% to a line of your code"
            + (
                f" ({a.uncopied_percent:.1f}% launched in steps recorded without ops that no recorded step matched)"
                if a.uncopied_ns
                else ""
            ),
        )
    shapes = f"; {summary.shapes_note}" if summary.shapes_note else ""
    grid.add_row("Ops", f"{summary.op_count} aten op instances{shapes}")
    if summary.step_count:
        grid.add_row(
            "Steps",
            f"{summary.step_count} complete: median {duration(summary.step_median_ns)} "
            f"(min {duration(summary.step_min_ns)}, max {duration(summary.step_max_ns)})",
        )
    elif summary.inferred_steps:
        grid.add_row(
            "Steps",
            f"none marked; the findings judge {summary.inferred_steps} iterations inferred from the loop's repeated "
            "calls (mark them with tenprof.step() to be sure)",
        )
    else:
        grid.add_row("Steps", "none marked (call tenprof.step() once per iteration)")
    grid.add_row("Overhead", escape(overhead_line(summary.overhead)))
    grid.add_row("Memory", escape(memory_line(summary.memory_peak)))
    for number, holder in enumerate(summary.memory_peak.held[:HELD_IN_TEXT] if summary.memory_peak else []):
        grid.add_row("" if number else "  held by", escape(format_quantities(holder.describe())))
    console.print(grid)


HELD_IN_TEXT = 3  # the lines that held the memory peak, in the text summary (--json and the page: more)


def memory_line(peak: MemoryPeak | None) -> str:
    if peak is None:
        return "no memory events were recorded (profile_memory off)"
    reserved = f" ({size(peak.reserved_bytes)} reserved)" if peak.reserved_bytes >= 0 else ""
    where = f", in {peak.op}" if peak.op else ""
    where += f" at {peak.line}" if peak.line else ""
    at_least = "at least " if peak.summed_from_events else ""
    summed = " (the trace records no totals: summed from its events)" if peak.summed_from_events else ""
    return (
        f"peak {at_least}{size(peak.allocated_bytes)} allocated on {peak.device}{summed}{reserved}, "
        f"{duration(peak.at_ns)} into the recording{where}"
    )


def overhead_line(o: Overhead) -> str:
    """What profiling cost, measured or estimated, and which numbers it inflates; or why it is unknown."""
    if not o.known or o.profiled_step_ns is None or o.unprofiled_step_ns is None:
        return f"not measured: {o.note}"
    timed = o.timed_unprofiled_step_ns if o.timed_unprofiled_step_ns is not None else o.unprofiled_step_ns
    steps = f"{duration(int(timed))} a step un-profiled, {duration(int(o.profiled_step_ns))} recorded"
    if o.verdict == "within noise":
        text = f"{o.method}: no overhead measurable beyond the steps' own variation: {steps} ({o.verdict_note}"
        text += f", p = {o.p_value:.2f})" if o.p_value is not None else ")"
    elif o.verdict == "too few steps":
        text = f"{o.method}: {steps}; too few steps to tell the profiler's cost: {o.verdict_note}"
    else:
        text = (
            f"{o.method}: {steps} ({o.ratio or 0:.2f}x, {100 * (o.profiler_share or 0):.0f}% of a recorded step is "
            "the profiler's)"
        )
    if o.unprofiled_gpu_busy_share is not None:
        text += f"; un-profiled the GPU is busy {100 * o.unprofiled_gpu_busy_share:.0f}%"
    count = o.measured_steps
    how = f"{count} step{'s' if count != 1 else ''} run with the capture off" if o.method == "measured" else None
    return f"{text}. Inflated by it: CPU times and gaps; not: GPU times and counts. From {how or 'a cost model'}."


def render_tally(tally: Tally, console: Console, limit: int | None = 15) -> None:
    table = Table(title=f"{tally.title} — Time = {tally.time_meaning}", title_justify="left", expand=False)
    table.add_column("Name", justify="left", overflow="ellipsis", max_width=70, no_wrap=True)
    for col in ("Time", "Time(%)", "Calls", "Average", "Min", "Max"):
        table.add_column(col, justify="right", no_wrap=True)
    rows = tally.rows if limit is None else tally.rows[:limit]
    for r in rows:
        table.add_row(
            escape(r.name),  # names are data: "[no op]" or a C++ template must not read as markup
            duration(r.total_ns),
            f"{r.percent:.2f}%",
            str(r.calls),
            duration(r.average_ns),
            duration(r.min_ns),
            duration(r.max_ns),
        )
    hidden = len(tally.rows) - len(rows)
    if hidden > 0:
        rest = sum(r.total_ns for r in tally.rows[len(rows) :])
        share = 100.0 * rest / tally.total_ns if tally.total_ns else 0.0
        table.add_row(f"... {hidden} more", duration(rest), f"{share:.2f}%", "", "", "", "")
    table.add_row("[bold]Total[/bold]", duration(tally.total_ns), "100.00%", str(tally.total_calls), "", "", "")
    console.print(table)


def render_tree(tree: Node, console: Console, metric: str) -> None:
    total = tree.metric(metric) or 1

    def label(node: Node) -> str:
        inc = node.metric(metric)
        exc = node.metric(metric, inclusive=False)
        value = str(inc) if metric == "calls" else duration(inc)
        self_part = "" if metric == "calls" or node.kind in ("frame", "scope", "root") else f" (self {duration(exc)})"
        return f"{value} {100.0 * inc / total:5.1f}%{self_part}  {escape(node.label)}"

    rich_root = Tree(label(tree))
    stack = [(tree, rich_root)]
    while stack:
        node, rich_node = stack.pop()
        children = sorted(node.children.values(), key=lambda c: (-c.metric(metric), c.label))
        branches = [(c, rich_node.add(label(c))) for c in children]
        stack.extend(reversed(branches))
    console.print(rich_root)


def render_flat(rows: list[FlatRow], console: Console, metric: str, limit: int = 40) -> None:
    table = Table(title=f"Sorted by exclusive {metric}", title_justify="left")
    table.add_column("Self", justify="right")
    table.add_column("Total", justify="right")
    table.add_column("Kind")
    table.add_column("Name", overflow="ellipsis", max_width=90, no_wrap=True)
    fmt = (lambda v: str(v)) if metric == "calls" else duration
    for r in rows[:limit]:
        table.add_row(fmt(r.self_value), fmt(r.total_value), r.kind, escape(r.name))
    console.print(table)


SEEN_SHOWN = 5  # evidence lines per finding in the text report; --json and the page have all of them


def render_findings(findings: list[Finding], console: Console, not_judged: list[str] | None = None) -> None:
    """Most costly first; each finding: title, up to SEEN_SHOWN lines of evidence (a line says how many more
    `--json` has), lines, why, fix."""
    for note in not_judged or []:
        console.print(f"[yellow]Not judged:[/yellow] {escape(note)}")
    if not findings:
        console.print("[bold]Findings:[/bold] none above their thresholds (tenprof report --list-thresholds)\n")
        return
    console.print(f"[bold]Findings[/bold] ({len(findings)}, most costly first)")
    for number, f in enumerate(map(rendered, findings), 1):
        cost = _cost(f)
        console.print(f"[bold]{number}. {escape(f.title)}[/bold]  [dim]{f.id}, {cost}[/dim]")
        for line in f.seen[:SEEN_SHOWN]:
            console.print(f"   seen: {escape(line)}")
        if len(f.seen) > SEEN_SHOWN:
            console.print(f"   seen: [dim]{len(f.seen) - SEEN_SHOWN} more (tenprof report --json)[/dim]")
        if f.where:
            console.print(f"   where: {escape('; '.join(f.where[:3]))}")
        console.print(f"   why: {escape(f.why)}", overflow="fold")
        console.print(f"   fix: {escape(f.fix)}", overflow="fold")
    console.print()


def _cost(f: Finding) -> str:
    """What a finding costs: step time, else what it saves instead; 'urgent' for a run that fails."""
    if f.urgent and not f.cost_ns:
        return "urgent: the run fails or will fail"
    saved_memory = f.numbers.get("bytes_saved")
    if saved_memory and not f.cost_ns:
        return f"costs {size(saved_memory)} of memory"
    cost = f"costs {duration(f.cost_ns)}"
    saved = f.numbers.get("gpu_time_saved_ns")
    if saved:  # GPU time whose saving the host's work hides in part: the step's cost, then the GPU's
        cost += f" of the steps, {duration(int(saved))} of GPU time"
    recorded = f.numbers.get("recorded_cost_ns")
    if recorded and not f.cost_ns:  # host time the steps hide once un-profiled (findings.causes)
        cost += f" of the steps un-profiled, {duration(int(recorded))} as recorded"
    return cost


def render_breakdown(rows: list[StepBreakdown], console: Console, limit: int = 12) -> None:
    table = Table(title="Per step: where the time went (GPU view)", title_justify="left")
    for col in ("Step", "Duration", "Compute", "Communication", "Transfers", "Idle"):
        table.add_column(col, justify="right")
    for r in rows[:limit]:
        d = r.duration_ns or 1
        table.add_row(
            str(r.step),
            duration(r.duration_ns),
            *(
                f"{duration(v)} {100 * v / d:.0f}%"
                for v in (r.compute_ns, r.communication_ns, r.transfers_ns, r.idle_ns)
            ),
        )
    if len(rows) > limit:
        table.add_row(f"... {len(rows) - limit} more", "", "", "", "", "")
    console.print(table)
