"""The merged report of a multi-rank profile: who ran where, per-rank step breakdown with min / median /
max, stragglers and where they fall behind, each rank's first findings, how clocks were aligned, and
kernels across ranks."""

from __future__ import annotations

import math

import numpy as np
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from tenprof.analyses.compare.ranks import RanksReport, RankSummary
from tenprof.analyses.timeline.step_time import PARTS
from tenprof.core.quantities import duration, format_quantities

COLUMNS: tuple[tuple[str, str], ...] = (
    ("Step", "step_ns"),
    ("Compute", "compute_ns"),
    ("Comm.", "communication_ns"),
    ("Exposed comm.", "exposed_ns"),
    ("Transfers", "transfers_ns"),
    ("Idle", "idle_ns"),
)


CPU_COLUMNS: tuple[tuple[str, str], ...] = (
    ("Step", "step_ns"),
    ("In torch ops", "cpu_ops_ns"),
    ("Outside ops", "outside_ops_ns"),
)


def _ms(ns: float) -> str:
    return f"{ns / 1e6:.2f}ms"


def _overlap(value: float) -> str:
    return "" if math.isnan(value) else f"{value:.0%}"


def render_ranks(report: RanksReport, kernels: list[dict[str, object]], console: Console, limit: int | None) -> None:
    ranks = report.ranks
    if not ranks:
        console.print("tenprof: no rank profiles (rankNNNNN/meta.json) were found")
        return
    console.print(
        f"[bold]tenprof[/bold] · {len(ranks)} ranks: {len(report.hosts)} host(s) ({escape(', '.join(report.hosts))}), "
        f"{len({(r.host, r.pid) for r in ranks})} processes, {len(report.devices)} devices"
    )
    gpu = any(r.device != "CPU" for r in ranks)
    columns = COLUMNS if gpu else CPU_COLUMNS  # a CPU run has no kernels: its GPU columns would all read 0
    marked = any(r.marked for r in ranks)
    if not marked:
        columns = (("Span", columns[0][1]), *columns[1:])
    title = "Per rank, median per step" if marked else "Per rank, the whole profiled span (no steps were marked)"
    table = Table(title=title, title_justify="left")
    names = ("Rank", "Host", "Device", "Steps", *(c for c, _ in columns), *(("Overlap",) if gpu else ()))
    for name in names:
        table.add_column(name, justify="left" if name in ("Host", "Device") else "right")
    for r in ranks:
        table.add_row(
            str(r.rank), escape(r.host), escape(r.device), str(r.steps) if r.marked else "none",
            *(_ms(getattr(r, key)) for _, key in columns), *((_overlap(r.overlap),) if gpu else ()),
        )  # fmt: skip
    for label, pick in (("min", np.min), ("median", np.median), ("max", np.max)):
        overlap = float(pick([r.overlap for r in ranks])) if not any(math.isnan(r.overlap) for r in ranks) else math.nan
        table.add_row(
            label, "", "", "", *(_ms(float(pick([getattr(r, key) for r in ranks]))) for _, key in columns),
            *((_overlap(overlap),) if gpu else ()),
        )  # fmt: skip
    console.print(table)
    if gpu:
        console.print(
            "  Exposed communication: a collective runs while no compute kernel does; "
            "overlap = 1 - exposed / communication."
        )
    else:
        console.print("  No GPU work was recorded: the host's time in torch ops and outside them.")
    _render_parts(ranks, console)
    if report.stragglers:
        for s in report.stragglers:
            op = f" ({escape(s.op)} most)" if s.op else ""
            where = f"; it spends {_ms(s.line_excess_ns)} more per step at {escape(s.line)}{op}" if s.line else ""
            console.print(f"[bold]Straggler: rank {s.rank}[/bold]: {escape(s.reason)}{where}")
    else:
        console.print("No straggler: no rank's collective wait or step time stands out.")
    _render_findings(ranks, console)
    _render_arrivals(report, console, limit)
    console.print(f"  Clocks: {escape(report.clock_method)}.")
    if any(r.clock_shift_ns for r in ranks):
        shifts = ", ".join(f"rank {r.rank} {r.clock_shift_ns / 1e6:+.3f}ms" for r in ranks[:16])
        more = f" (and {len(ranks) - 16} more: --json)" if len(ranks) > 16 else ""
        console.print(f"  Clock shifts: {shifts}{more}")
    _render_kernels(kernels, console, limit)


ARRIVAL_RANKS = 4  # per group, the ranks most often last that the text shows (--json: all)


def _render_arrivals(report: RanksReport, console: Console, limit: int | None) -> None:
    """Per process group: how many collectives were compared, the ranks most often last and their wait."""
    if not report.arrivals:
        return
    table = Table(title="Who arrived last at the collectives, per process group", title_justify="left")
    columns = ["Group", "Ranks", "Compared", "Most often last", "Others wait for it", "On time: step -"]
    columns.append("Bus bandwidth")
    for name in columns:
        table.add_column(name, justify="left" if name in ("Group", "Most often last", "Bus bandwidth") else "right")
    steps = late_steps(report)
    for g in report.arrivals[: limit or None]:
        slowest = sorted(g.last_share, key=lambda r: (-g.last_share[r], r))[:ARRIVAL_RANKS]
        said = ", ".join(f"rank {r} {g.last_share[r]:.0%}" for r in slowest if g.last_share[r] > 0)
        others = [w for r, w in g.mean_wait_ns.items() if r != g.most_often_last]
        name = f"{g.group} ({g.description})" if g.description else g.group
        bus = f"{g.bus_gbs:.1f} GB/s" if g.bus_gbs is not None else "sizes not in the trace"
        if g.bus_gbs is not None and g.link_peak_gbs:
            bus += f" of {g.link}'s {g.link_peak_gbs:.0f}"
        table.add_row(
            escape(name),
            str(len(g.ranks)),
            str(g.compared),
            said,
            _ms(float(np.mean(others))) if others else "",
            _ms(g.late_ns / (g.steps or steps)) if g.steps or steps else "",
            escape(bus),
        )
    console.print(table)
    console.print(
        "  Compared: the collectives of the steady steps (past the cold ones) where steps were marked. "
        "Others wait for it: their mean wait per collective. On time: how much sooner each step could end had the "
        "last rank arrived with the one before it (a bound). Bus bandwidth: nccl-tests' definition, median of the "
        "collectives of 1 MiB or more, from the last arrival to the end."
    )


def late_steps(report: RanksReport) -> float:
    """The steps the arrivals' lateness is spread over: the median rank's complete steps."""
    counts = [r.steps for r in report.ranks if r.steps > 0]
    return float(np.median(counts)) if counts else 0.0


def _render_parts(ranks: list[RankSummary], console: Console) -> None:
    """Where each rank's mean steady step went: the parts that take a share anywhere, per rank."""
    shown = [p for p in PARTS if any(r.parts.get(p, 0.0) > 0 for r in ranks)]
    if not shown:
        return
    table = Table(title="Where each rank's step went (mean steady step; the parts add up to it)", title_justify="left")
    table.add_column("Rank", justify="right")
    for part in shown:
        table.add_column(part, justify="right")
    for r in ranks:
        wall = sum(r.parts.values())
        table.add_row(
            str(r.rank),
            *(_share_of(r.parts.get(p), wall) for p in shown),
        )
    console.print(table)


def _render_findings(ranks: list[RankSummary], console: Console) -> None:
    """The first findings paid every step of the ranks that were judged (the first, the stragglers)."""
    for r in ranks:
        if r.cut_short:
            console.print(f"[bold red]Rank {r.rank} was cut short:[/bold red] {escape(r.cut_short)}")
    if not any(r.findings for r in ranks):
        return
    table = Table(
        title="First findings of the first rank, the ranks cut short and the stragglers (paid every step; --rank N "
        "for any rank)",
        title_justify="left",
    )
    for name in ("Rank", "Finding", "Cost / step", "Where"):
        table.add_column(name, justify="right" if name in ("Rank", "Cost / step") else "left")
    for r in ranks:
        for f in r.findings or []:
            table.add_row(
                str(r.rank),
                escape(format_quantities(f.title)),
                "urgent" if f.urgent and not f.cost_per_step_ns else format_quantities(duration(f.cost_per_step_ns)),
                escape(f.where),
            )
    console.print(table)


def _share_of(ns: float | None, wall: float) -> str:
    if ns is None:
        return "not measured"  # the profiler's own work, where its overhead was not told from noise
    return f"{_ms(ns)} ({ns / wall:.0%})" if wall else ""


def _render_kernels(rows: list[dict[str, object]], console: Console, limit: int | None) -> None:
    if not rows:
        return
    table = Table(title="Kernels across ranks (GPU time per rank)", title_justify="left")
    for name in ("Kernel", "Ranks", "Min", "Median", "Max"):
        table.add_column(name, justify="left" if name == "Kernel" else "right")
    for r in rows[: limit or None]:
        table.add_row(
            escape(str(r["name"])[:70]), str(r["ranks"]),
            *(_ms(float(r[k])) for k in ("min_ns", "median_ns", "max_ns")),  # type: ignore[arg-type]
        )  # fmt: skip
    console.print(table)
