"""`tenprof diff` as text: the two runs, the step change and whether it is beyond noise, the Python lines
that explain it (GPU and CPU time per step before and after), what no line holds, the ops and kernels
that changed most (new and gone ones marked), and the findings that appeared or went away."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from tenprof.analyses.compare.diff import Change, Diff
from tenprof.core.quantities import format_quantities
from tenprof.core.units import duration


def _ms(ns: float) -> str:
    return duration(ns)


def _signed(ns: float) -> str:
    return ("+" if ns >= 0 else "-") + duration(abs(ns))


def render_diff(d: Diff, console: Console, limit: int | None) -> None:
    b, a = d.before, d.after
    for title, side in (("Before", b), ("After ", a)):
        torch = f"torch {side.torch_version}" if side.torch_version else "torch version not recorded"
        console.print(f"[bold]{title}[/bold] {escape(side.name)}: {escape(side.device)}, {escape(torch)}")
    if b.device != a.device:
        console.print("  (two different GPUs: kernels and their times are not comparable one to one)")
    if b.torch_version != a.torch_version:
        console.print("  (two torch versions: its kernels and their choice may differ)")
    s = d.step
    tested = s.p_value == s.p_value  # nan: not tested
    noise = (
        "beyond the step-to-step noise"
        if s.beyond_noise
        else ("within the step-to-step noise" if tested else "not judged against noise")
    )
    p = "" if s.p_value != s.p_value else f", p = {s.p_value:.3f}"  # nan: not tested
    console.print(
        f"\n[bold]Step[/bold] {_ms(s.before_ns)} -> {_ms(s.after_ns)} ({_signed(s.delta_ns)}, "
        f"{(s.after_ns / s.before_ns - 1) if s.before_ns else 0:+.0%}): {noise} ({escape(s.test)}{p})"
    )
    on_gpu = bool(b.kernels or a.kernels)
    if on_gpu:
        console.print(f"  GPU busy: {b.busy_share:.0%} of the steps -> {a.busy_share:.0%}")
        parts = ", ".join(
            f"{name} {_ms(b.breakdown.get(name, 0.0))} -> {_ms(a.breakdown.get(name, 0.0))}"
            for name in ("compute", "communication", "transfers", "idle")
            if b.breakdown.get(name) or a.breakdown.get(name)
        )
        console.print(f"  per step: {parts}")
    else:
        console.print("  no GPU work in either run: the host's time only")
    rows = [
        ("kernel time per step", b.kernel_ns, a.kernel_ns, True),
        ("kernels per step", b.kernels, a.kernels, False),
        ("CPU time in top-level ops per step", b.op_cpu_ns, a.op_cpu_ns, True),
    ]
    if b.unprofiled_step_ns is not None and a.unprofiled_step_ns is not None:
        rows.append(("step measured un-profiled", b.unprofiled_step_ns, a.unprofiled_step_ns, True))
    for label, before, after, is_time in rows:
        shown = (_ms(before), _ms(after)) if is_time else (f"{before:.1f}", f"{after:.1f}")
        console.print(f"  {label}: {shown[0]} -> {shown[1]}")
    if not d.lines:
        console.print("  no Python lines in either run (a trace recorded without with_stack has none)")
    table = Table(title="Python lines, per step (most changed first)", title_justify="left")
    for column in ("line", "GPU before", "GPU after", "GPU change", "CPU before", "CPU after", "launches"):
        table.add_column(column, overflow="fold", justify="left" if column == "line" else "right")
    for c in d.lines[: limit or None]:
        table.add_row(
            escape(c.what),
            _ms(c.before_ns),
            _ms(c.after_ns),
            _signed(c.delta_ns),
            _ms(c.before_cpu_ns),
            _ms(c.after_cpu_ns),
            f"{c.before_count:.0f} -> {c.after_count:.0f}",
        )
    if d.lines:
        console.print(table)
    other = "" if d.other_remainder_ns is None else f"; split by {'CPU' if d.basis == 'GPU' else 'GPU'} time "
    other += "" if d.other_remainder_ns is None else f"instead, {_signed(d.other_remainder_ns)} would stay unexplained"
    if d.basis == "GPU":
        console.print(
            f"  split by GPU time: kernels with no line of yours {_signed(d.no_line_delta_ns)}; not in any line "
            f"(GPU idle, kernels overlapping) {_signed(d.remainder_ns)}; with the lines' GPU changes these add up "
            f"to the step's {_signed(s.delta_ns)}{other}"
        )
    else:
        console.print(
            f"  split by CPU time: ops with no line of yours {_signed(d.no_line_delta_ns)}; host time outside "
            f"ops {_signed(d.remainder_ns)}; with the lines' CPU changes these add up to the step's "
            f"{_signed(s.delta_ns)}{other}"
        )
    if on_gpu:
        _changed("Ops (name and input shapes), GPU time per step", d.ops, console, limit)
        _changed("Kernels, GPU time per step", d.kernels, console, limit)
    if d.vanished or d.appeared:
        console.print("\n[bold]Findings[/bold]")
        for text in d.vanished:
            console.print(f"  gone: {escape(format_quantities(text))}")
        for text in d.appeared:
            console.print(f"  new:  {escape(format_quantities(text))}")


def _changed(title: str, changes: list[Change], console: Console, limit: int | None) -> None:
    console.print(f"\n[bold]{title}[/bold]")
    for c in changes[: limit or None]:
        mark = f" [{c.status}]" if c.status else ""
        console.print(
            f"  {_signed(c.delta_ns):>10}  {_ms(c.before_ns)} -> {_ms(c.after_ns)}  "
            f"({c.before_count:.0f} -> {c.after_count:.0f} launches){escape(mark)}  {escape(c.what[:110])}"
        )
