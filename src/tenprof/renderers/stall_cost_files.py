"""`tensor_stall_cost.csv` and `blame.dot` (+ `.svg` with graphviz): the tensor stall cost as a table and
as the tensor forest with node size by stall share and the blamed path (from the hottest tensor's root
down to the view the kernels read) in red."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from tenprof.analyses.tensor_forest import Forest
from tenprof.analyses.tensor_stall_cost import NO_ACCESS, NO_TENSOR, UNRESOLVED, TensorCost
from tenprof.renderers.forest_dot import forest_dot, write_dot_and_svg

BUCKETS = {
    NO_TENSOR: "(no tensor: workspace or allocator slack)",
    NO_ACCESS: "(no access record for the load)",
    UNRESOLVED: "(unresolved memory stall)",
}


def write_cost_csv(costs: list[TensorCost], forest: Forest, path: Path) -> None:
    path.write_text(cost_csv(costs, forest), newline="")


def cost_csv(costs: list[TensorCost], forest: Forest) -> str:
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
                ]
            )
        return handle.getvalue()


def blame_dot(costs: list[TensorCost], forest: Forest, limit: int = 40) -> str:
    values = {c.tensor_id: 100 * c.share for c in costs if c.tensor_id >= 0}
    hottest = next((c.tensor_id for c in costs if c.tensor_id >= 0), -1)
    highlight = set(forest.path_to_root(hottest)) if hottest >= 0 else set()
    return forest_dot(forest, "bytes", limit, values=values, highlight=highlight)


def write_stall_cost(costs: list[TensorCost], forest: Forest, directory: Path) -> list[Path]:
    table = directory / "tensor_stall_cost.csv"
    write_cost_csv(costs, forest, table)
    return [table, *write_dot_and_svg(blame_dot(costs, forest), directory, "blame")]
