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
        if r.generated_file:
            console.print(f"                    generated source: {escape(r.generated_file)}")
    if any(r.generated_file for r in report.rows):
        console.print(
            "  The generated modules are kept in the profile: tenprof export DIR --format generated-code -o DIR2"
        )
