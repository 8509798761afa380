"""The tensor forest as text (`forest.txt`): one block per group of repeated trees, views indented.

T12  float32[768, 2304]  7.1 MB  aten::addmm  model.py:41  read 3x  ops 210..388   (x4 trees)
├─ view        T13  float32[8, 256, 2304]
│  └─ split    T14  float32[8, 256, 768]  strided
└─ t           T15  ...
"""

from __future__ import annotations

from io import StringIO

from tenprof.analyses.tensors.tensor_forest import Forest, group_roots
from tenprof.core.units import size as format_bytes

MAX_CHILDREN = 12


def forest_text(forest: Forest, metric: str = "bytes", limit: int = 40, notes: list[str] | None = None) -> str:
    c = forest.columns
    out = StringIO()
    views = int(c["is_view"].sum()) if forest.size else 0
    storages = len(set(c["storage_id"].tolist())) if forest.size else 0
    out.write(
        f"Tensor forest: {forest.size} tensors on {storages} storages ({views} views), "
        f"{forest.op_count} ops seen; trees ordered by {metric}\n"
    )
    for note in notes or []:
        out.write(f"note: {note}\n")
    groups = group_roots(forest, metric)
    for group in groups[:limit]:
        out.write("\n")
        root = group.representative
        repeat = (
            f"   (x{len(group.members)} trees, {_metric_text(metric, group.total)} in all)"
            if len(group.members) > 1
            else ""
        )
        out.write(_node_line(forest, root) + repeat + "\n")
        source = int(c["source_tensor_id"][root])
        if source >= 0:
            kind = f", a view made by {c['view_op'][source]}" if c["is_view"][source] else ""
            out.write(f"   <- {c['source_op'][root]} of T{source} {forest.describe(source)}{kind}\n")
        _children(forest, root, "", out)
    if len(groups) > limit:
        out.write(f"\n... {len(groups) - limit} more groups of trees (tenprof export --format forest --limit 0)\n")
    return out.getvalue()


def _children(forest: Forest, node: int, prefix: str, out: StringIO) -> None:
    kids = forest.children.get(node, [])
    shown = kids[:MAX_CHILDREN]
    for i, kid in enumerate(shown):
        last = i == len(shown) - 1 and len(kids) <= MAX_CHILDREN
        op = str(forest.columns["view_op"][kid]).removeprefix("aten::")
        out.write(f"{prefix}{'└─' if last else '├─'} {op:<12} {_node_line(forest, kid, view=True)}\n")
        _children(forest, kid, prefix + ("   " if last else "│  "), out)
    if len(kids) > MAX_CHILDREN:
        out.write(f"{prefix}└─ ... {len(kids) - MAX_CHILDREN} more views\n")


def _node_line(forest: Forest, tensor: int, view: bool = False) -> str:
    c = forest.columns
    parts = [f"T{tensor}", forest.describe(tensor)]
    if not view:
        parts.append(format_bytes(int(c["nbytes"][tensor])))
        parts.append(forest.creator_op(tensor) or "(made unseen)")
        line = forest.creator_line(tensor)
        if line:
            parts.append(line)
        library = forest.creator_library_line(tensor)
        if library:
            parts.append(f"via {library}")
    elif not forest.is_contiguous(tensor):
        parts.append("strided")
    parts.append(f"read {int(c['reads'][tensor])}x")
    if int(c["writes"][tensor]):
        parts.append(f"written {int(c['writes'][tensor])}x")
    if not view:
        free = int(c["free_op_seq"][tensor])
        parts.append(f"ops {int(c['first_use_op_seq'][tensor])}..{free if free >= 0 else 'end'}")
    return "  ".join(parts)


def _metric_text(metric: str, value: int) -> str:
    if metric == "bytes":
        return format_bytes(value)
    return f"{value} {'uses' if metric == 'uses' else 'ops'}"
