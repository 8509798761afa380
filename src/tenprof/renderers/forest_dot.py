"""The tensor forest as Graphviz DOT (and SVG through `dot` when graphviz is installed).

Bases are solid ellipses, views dashed; a node's area follows the chosen metric. View edges carry the
op that made the view; transformation links (clone, _to_copy, copy_) are dotted arrows from the tensor
whose values were taken. Nodes in `highlight` and the edges between them are drawn red (the blame
path of the tensor stall cost report uses this).
"""

from __future__ import annotations

import math
import shutil
import subprocess
from io import StringIO
from pathlib import Path

from tenprof.analyses.tensors.tensor_forest import Forest, group_roots
from tenprof.core.units import size as format_bytes
from tenprof.errors import UsageError

MAX_NODES = 400


def forest_dot(
    forest: Forest,
    metric: str = "bytes",
    limit: int = 40,
    values: dict[int, float] | None = None,
    highlight: set[int] | None = None,
    notes: dict[int, str] | None = None,
) -> str:
    """DOT text for the largest `limit` groups of trees (one representative tree per group).

    `values` overrides the metric per tensor (e.g. stall share); nodes are sized by it. `notes` adds a
    line to a tensor's label (e.g. how its reads were measured to access memory)."""
    c = forest.columns
    highlight = highlight or set()
    groups = group_roots(forest, metric)[:limit]
    nodes: list[int] = []
    repeats: dict[int, int] = {}
    for group in groups:
        repeats[group.representative] = len(group.members)
        for node, _ in forest.subtree_order(group.representative):
            if len(nodes) >= MAX_NODES:
                break
            nodes.append(node)
    for node in highlight:  # a highlighted path is always drawn, whole
        for step in forest.path_to_root(node):
            if step not in nodes:
                nodes.append(step)
    metric_values = forest.metric(metric)
    value_of = {n: float(values.get(n, 0.0)) if values is not None else float(metric_values[n]) for n in nodes}
    biggest = max(value_of.values(), default=0.0) or 1.0
    drawn = set(nodes)
    out = StringIO()
    out.write("digraph tensor_forest {\n  rankdir=TB;\n  node [fontname=Helvetica, fontsize=10];\n")
    out.write("  edge [fontname=Helvetica, fontsize=9];\n")
    for n in nodes:
        view = bool(c["is_view"][n])
        width = 0.8 + 2.2 * math.sqrt(max(value_of[n], 0.0) / biggest)
        label = f"T{n}\\n{forest.describe(n)}"
        if not view:
            label += f"\\n{format_bytes(int(c['nbytes'][n]))}"
            creator = forest.creator_op(n)
            line = forest.creator_line(n)
            if creator:
                label += f"\\n{creator}" + (f" @ {line}" if line else "")
        if values is not None and value_of[n] > 0:
            label += f"\\n{value_of[n]:.1f}%"
        if notes and n in notes:
            label += f"\\n{notes[n]}"
        if repeats.get(n, 1) > 1:
            label += f"\\nx{repeats[n]} trees"
        style = "dashed" if view else "solid"
        color = ", color=red, fontcolor=red, penwidth=2" if n in highlight else ""
        out.write(f'  T{n} [shape=ellipse, style={style}, width={width:.2f}, label="{_escape(label)}"{color}];\n')
    for n in nodes:
        parent = int(c["parent_tensor_id"][n])
        if parent >= 0 and parent in drawn:
            op = str(c["view_op"][n]).removeprefix("aten::")
            red = ", color=red, fontcolor=red, penwidth=2" if n in highlight and parent in highlight else ""
            out.write(f'  T{parent} -> T{n} [label="{_escape(op)}"{red}];\n')
        source = int(c["source_tensor_id"][n])
        if source >= 0 and source in drawn:
            op = str(c["source_op"][n]).removeprefix("aten::")
            out.write(f'  T{source} -> T{n} [style=dotted, label="{_escape(op)}"];\n')
    out.write("}\n")
    return out.getvalue()


def _escape(text: str) -> str:
    return text.replace('"', '\\"')


def has_graphviz() -> bool:
    return shutil.which("dot") is not None


def dot_to_svg(dot_text: str) -> bytes:
    """Render with graphviz's `dot`; a UsageError naming the fix when it is not installed."""
    exe = shutil.which("dot")
    if exe is None:
        raise UsageError("graphviz `dot` is not installed (apt install graphviz, or conda install graphviz)")
    done = subprocess.run([exe, "-Tsvg"], input=dot_text.encode(), capture_output=True, timeout=300, check=False)
    if done.returncode != 0:
        raise UsageError(f"dot failed: {done.stderr.decode(errors='replace').strip()[:200]}")
    return done.stdout


def write_dot_and_svg(dot: str, directory: Path, stem: str) -> list[Path]:
    """`<stem>.dot`, and `<stem>.svg` when graphviz is installed (skipped otherwise, never an error)."""
    written = [directory / f"{stem}.dot"]
    written[0].write_text(dot)
    if has_graphviz():
        written.append(directory / f"{stem}.svg")
        written[1].write_bytes(dot_to_svg(dot))
    return written
