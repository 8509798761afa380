"""The per-operator hardware metrics section of `tenprof report` (counters pass), with rich."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from tenprof.analyses.kernels.counters import OperatorsReport
from tenprof.core.units import duration, size


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}%"


def render_counters(report: OperatorsReport, console: Console, limit: int | None) -> None:
    launches = sum(o.aggregated.launches for o in report.operators)
    replays = len({k.replay_id for o in report.operators for k in o.kernels})
    console.print(
        f"[bold]Hardware metrics per operator[/bold] (Nsight Compute: {replays} kernel replays stand for "
        f"{launches} launches)"
    )
    for warning in report.warnings:
        console.print(f"  [yellow]{escape(warning)}[/yellow]")
    table = Table(box=None, padding=(0, 1), show_edge=False)
    for name, justify in (
        ("Op", "left"),
        ("Line", "left"),
        ("Calls", "right"),
        ("Time", "right"),
        ("DRAM", "right"),
        ("DRAM%", "right"),
        ("SM%", "right"),
        ("Tensor%", "right"),
        ("Occup.", "right"),
        ("L2 hit", "right"),
        ("FLOP/B", "right"),
        ("Verdict", "left"),
    ):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    for o in report.operators[: limit or None]:
        a = o.aggregated
        table.add_row(
            escape(o.op),
            escape(o.line.rsplit("/", 1)[-1]),
            str(o.calls),
            duration(a.time_ns),
            "-" if a.dram_bytes is None else size(a.dram_bytes),
            _pct(a.dram_throughput_pct),
            _pct(a.sm_throughput_pct),
            _pct(a.tensor_pipe_pct),
            _pct(a.achieved_occupancy_pct),
            _pct(a.l2_hit_rate_pct),
            "-" if a.arithmetic_intensity is None else f"{a.arithmetic_intensity:.2f}",
            a.verdict,
        )
    console.print(table)
    if report.unattributed_kernels:
        total = sum(u.launches for u in report.unattributed_kernels)
        console.print(f"  {total} kernel launches got no metrics:")
        for u in report.unattributed_kernels[:5]:
            console.print(f"    {u.launches}x {escape(u.name[:80])}: {escape(u.reason)}")
