"""The performance-model section of `tenprof report`: MFU and tokens/s, the ops with the most kernel time
against their speed of light, the lines, user metrics, and the kernel time no formula covers."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from tenprof.analyses.perf_model import PerfModel, Speed, pipe_text


def _num(value: float | None, fmt: str) -> str:
    """A number, or '?' where it is not known (never 0)."""
    return "?" if value is None else format(value, fmt)


def _short(path: str) -> str:
    parts = path.replace("\\", "/").split("/")
    return "/".join(parts[-2:]) if len(parts) > 2 else path


def duration(ns: float) -> str:
    return f"{ns / 1e6:.3f} ms" if ns >= 1e5 else f"{ns / 1e3:.1f} us"


def _sol(percent: float | None) -> str:
    """Above 100%, the data came from cache faster than memory bandwidth allows: the floor, not a score."""
    if percent is None:
        return "?"
    return f"{percent:.0f}%" if percent <= 100 else ">100% (cache)"


def _speed_cells(speed: Speed) -> list[str]:
    flops = None if speed.flops is None else speed.flops / 1e9
    return [
        duration(speed.gpu_ns),
        _num(flops, ",.1f"),
        _num(speed.tflops_per_s, ".1f"),
        _num(speed.gbytes_per_s, ",.0f"),
        _sol(speed.sol_percent),
    ]


def render_perf_model(model: PerfModel, console: Console, limit: int | None) -> None:
    console.print(
        f"[bold]Performance model[/bold] (FLOPs and bytes from recorded shapes; {escape(model.peaks)}): "
        f"{model.modelled_percent:.0f}% of kernel time modelled"
    )
    if model.mfu_percent is not None:
        unprofiled = (
            f"; {model.unprofiled_mfu_percent:.1f}% on the step time measured with the capture off"
            if model.unprofiled_mfu_percent is not None
            else ""
        )
        console.print(
            f"  MFU {model.mfu_percent:.1f}% of {pipe_text(model.mfu_pipe)} "
            f"({_num(model.mfu_peak_tflops, '.0f')} TFLOP/s) on the profiled step time{unprofiled} "
            "(the modelled ops' FLOPs)"
        )
    if model.tokens_per_s is not None:
        console.print(f"  {model.tokens_per_s:,.0f} tokens/s (median of the steady steps)")
    rows = model.ops[: limit or 10]
    if rows:
        table = Table(box=None, pad_edge=False, header_style="bold")
        for title in ("op", "shapes", "calls", "GPU time", "GFLOP", "TFLOP/s", "GB/s", "SOL", "peak", "line"):
            table.add_column(title, overflow="fold")
        for r in rows:
            table.add_row(
                escape(r.name),
                escape(r.shapes[:40]),
                str(r.calls),
                *_speed_cells(r.speed),
                escape(pipe_text(r.pipe) + (f", {r.bound}-bound" if r.bound else "")),
                escape(_short(r.line)),
            )
        console.print(table)
    lines = model.lines[: min(limit or 5, 5)]
    if lines:
        console.print("  by line:")
        for line in lines:
            cells = _speed_cells(line.speed)
            console.print(
                f"    {escape(_short(line.line) or '(no line)'):40s} {cells[0]:>10s}  {cells[2]} TFLOP/s  "
                f"{cells[3]} GB/s  SOL {cells[4]}"
            )
    for u in model.user:
        what = ", ".join(f"{k}={v:.4g}" for k, v in sorted(u.metrics.items()))
        rate = ", ".join(
            filter(
                None,
                [
                    None if u.tflops_per_s is None else f"{u.tflops_per_s:.1f} TFLOP/s",
                    None if u.gbytes_per_s is None else f"{u.gbytes_per_s:,.0f} GB/s",
                ],
            )
        )
        console.print(
            f"  {u.owner} {escape(u.name)}: x{u.calls}, {duration(u.gpu_ns)} of kernels, {escape(what)}"
            + (f" -> {rate}" if rate else "")
        )
    for why in ("no formula", "shapes or values not recorded"):
        lost = [u for u in model.unknown if u.why == why]
        if lost:
            names = ", ".join(f"{escape(u.name)} ({duration(u.gpu_ns)})" for u in lost[:5])
            total = duration(sum(u.gpu_ns for u in lost))
            console.print(f"  not modelled ({why}): {total} of kernel time: {names}")
