"""The torch.compile section of `tenprof report`: how much of the compiled code's kernel time is
attributed to fused aten ops and source lines, and the top generated kernels with what they fuse."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape

from tenprof.analyses.compiled import CompiledReport


def _short(path: str) -> str:
    parts = path.replace("\\", "/").split("/")
    return "/".join(parts[-2:]) if len(parts) > 2 else path


def render_compiled(report: CompiledReport, console: Console, limit: int | None) -> None:
    console.print(
        f"[bold]Compiled code (torch.compile)[/bold]: {report.compiled_ns / 1e6:.2f} ms of kernel time "
        f"({report.compiled_ns / max(report.kernel_ns, 1):.0%} of all); attributed to fused aten ops "
        f"{report.ops_share:.1%}, to source lines {report.lines_share:.1%}"
    )
    total = max(report.kernel_ns, 1)
    console.print(
        f"  all kernels of the steady steps, compiled or not: {report.all_with_ops_ns / total:.1%} attributed to aten "
        f"ops, {report.all_with_lines_ns / total:.1%} to source lines"
    )
    for r in report.rows[: limit or 10]:
        lines = ", ".join(_short(x) for x in r.lines.split(";") if x)[:90]
        console.print(f"  {r.time_ns / 1e6:9.3f} ms  x{r.calls:<5d} {escape(r.kernel[:60])}")
        what = f"computes {r.aten_ops[:90]}" if r.aten_ops else "no aten ops known"
        detail = what + (f"; from {lines}" if lines else "") + f"  ({r.source}, {r.confidence} confidence)"
        console.print(f"                    {escape(detail)}")
        shape = ", ".join(filter(None, [r.kind, r.memory_ops, r.launch]))
        if shape:
            console.print(f"                    {escape(shape)}")
        if r.region:
            how = "its forward called at" if r.region.startswith("backward") else "called at"
            called = f" ({how} {_short(r.called_from)})" if r.called_from else ""
            console.print(f"                    region: {escape(r.region + called)}")
        if r.config:
            console.print(f"                    config: {escape(r.config)}")
        if r.declared:
            console.print(f"                    {escape(r.declared)}")
        if r.generated_file:
            kept = f"; kept as {r.kernel}.py" if r.source == "inductor-comments" and report.has_generated_code else ""
            console.print(f"                    generated source: {escape(r.generated_file)}{escape(kept)}")
    _render_gaps(report, console)
    if report.has_generated_code:
        console.print(
            "  The generated code is kept in the profile: tenprof export DIR --format generated-code -o DIR2 writes "
            "the wrappers and each kernel's source"
        )


def _render_gaps(report: CompiledReport, console: Console) -> None:
    """What could not be attributed, and why: the honest end of the section (imported traces mostly)."""
    compiled = max(report.compiled_ns, 1)
    gaps = []
    if report.compiled_ns > report.with_ops_ns:
        share = (report.compiled_ns - report.with_ops_ns) / compiled
        gaps.append(f"{share:.1%} of the compiled time attributed to no aten op")
    if report.compiled_ns > report.with_lines_ns:
        gaps.append(f"{(report.compiled_ns - report.with_lines_ns) / compiled:.1%} to no source line")
    if report.low_confidence_ns:
        gaps.append(
            f"{report.low_confidence_ns / compiled:.1%} attributed only with low confidence (aten ops read from "
            "kernel names, where a multi-word op splits into words, or from the wrapper's GEMM calls)"
        )
    if not gaps:
        return
    why = (
        ""
        if report.has_generated_code
        else ": the trace carries no Inductor provenance; `tenprof run` keeps the generated code and its lines"
    )
    console.print(f"  [yellow]Gaps[/yellow]: {escape('; '.join(gaps))}{escape(why)}")
