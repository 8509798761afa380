"""`tensor_stall_cost.csv` and `blame.dot` (+ `.svg` with graphviz): the tensor stall cost as a table and
as the tensor forest with node size by stall share and the blamed path (from the hottest tensor's root
down to the view the kernels read) in red. Where the access pass compared lanes, each tensor's telling
read by the charged kernels (the most wasteful of those moving a tenth of its bytes, else the heaviest)
adds its pattern: columns of the table, a line of the node's label."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from tenprof.analyses.tensors.access_patterns import AccessPattern, LoadPatterns
from tenprof.analyses.tensors.tensor_forest import Forest
from tenprof.analyses.tensors.tensor_stall_cost import NO_ACCESS, NO_TENSOR, UNRESOLVED, TensorCost
from tenprof.core import units
from tenprof.renderers.forest_dot import forest_dot, write_dot_and_svg

BUCKETS = {
    NO_TENSOR: "(no tensor: workspace or allocator slack)",
    NO_ACCESS: "(no access record for the load)",
    UNRESOLVED: "(unresolved memory stall)",
}


PATTERN_COLUMNS = (
    "pattern",
    "stride_bytes",
    "stride_elements",
    "stride_dim",
    "sectors_per_request",
    "ideal_sectors_per_request",
    "reads_over",
)


def telling_read(cost: TensorCost, patterns: LoadPatterns | None) -> AccessPattern | None:
    """The pattern of the tensor's read (by the kernels charged for it) that explains its cost."""
    if patterns is None or cost.tensor_id < 0:
        return None
    return patterns.telling_read(cost.tensor_id, cost.kernels)


def _pattern_cells(p: AccessPattern | None) -> list[str]:
    if p is None:
        return [""] * len(PATTERN_COLUMNS)
    return [
        p.kind,
        "" if p.stride is None else str(p.stride),
        "" if p.stride_elements is None else str(p.stride_elements),
        "" if p.stride_dim is None else str(p.stride_dim),
        f"{p.sectors_per_request:.2f}",
        f"{p.ideal_per_request:.2f}",
        f"{p.reads_over:.2f}",
    ]


def write_cost_csv(costs: list[TensorCost], forest: Forest, path: Path, patterns: LoadPatterns | None = None) -> None:
    path.write_text(cost_csv(costs, forest, patterns), newline="")


def cost_csv(costs: list[TensorCost], forest: Forest, patterns: LoadPatterns | None = None) -> str:
    c = forest.columns
    with io.StringIO(newline="") as handle:
        out = csv.writer(handle)
        out.writerow(
            [
                "tensor",
                "view_of",
                "view_op",
                "type",
                "creator_op",
                "line",
                "samples",
                "percent",
                "inferred_samples",
                "kernels",
                "load_pcs",
                *PATTERN_COLUMNS,
            ]
        )
        for cost in costs:
            t = cost.tensor_id
            if t < 0:
                row = [BUCKETS[t], "", "", "", "", ""]
            else:
                parent = int(c["parent_tensor_id"][t])
                row = [
                    f"T{t}",
                    f"T{parent}" if parent >= 0 else "",
                    str(c["view_op"][t]),
                    forest.describe(t),
                    forest.creator_op(t),
                    forest.creator_line(t),
                ]
            out.writerow(
                [
                    *row,
                    f"{cost.samples:.1f}",
                    f"{100 * cost.share:.2f}",
                    f"{cost.inferred:.1f}",
                    ";".join(cost.kernels),
                    ";".join(hex(p) for p in cost.load_pcs),
                    *_pattern_cells(telling_read(cost, patterns)),
                ]
            )
        return handle.getvalue()


def blame_dot(costs: list[TensorCost], forest: Forest, limit: int = 40, patterns: LoadPatterns | None = None) -> str:
    values = {c.tensor_id: 100 * c.share for c in costs if c.tensor_id >= 0}
    hottest = next((c.tensor_id for c in costs if c.tensor_id >= 0), -1)
    highlight = set(forest.path_to_root(hottest)) if hottest >= 0 else set()
    notes = {c.tensor_id: short_pattern(p) for c in costs if (p := telling_read(c, patterns)) is not None}
    return forest_dot(forest, "bytes", limit, values=values, highlight=highlight, notes=notes)


def short_pattern(p: AccessPattern) -> str:
    """`strided 16.0KiB (dim 0): 32.0 sectors/req, ideal 4.0`-style label text."""
    head = p.kind
    if p.kind == "strided" and p.stride is not None:
        head += f" {units.size(p.stride)}" + (f" (dim {p.stride_dim})" if p.stride_dim is not None else "")
    return f"{head}: {p.sectors_per_request:.1f} sectors/req, ideal {p.ideal_per_request:.1f}"


def write_stall_cost(
    costs: list[TensorCost], forest: Forest, directory: Path, patterns: LoadPatterns | None = None
) -> list[Path]:
    table = directory / "tensor_stall_cost.csv"
    write_cost_csv(costs, forest, table, patterns)
    return [table, *write_dot_and_svg(blame_dot(costs, forest, patterns=patterns), directory, "blame")]
