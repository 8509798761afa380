"""The tensor stall cost section: each memory stall blamed on a load, charged to the tensor that load read
(`analyses.tensors.tensor_stall_cost`), with the tensor's name, what made it, how the charged kernels read it and
what to change (`analyses.tensors.tensor_advice`); its JSON carries the words the text prints."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from rich.console import Console

from tenprof.analyses.tensors.access_patterns import LoadPatterns, describe, load_patterns
from tenprof.analyses.tensors.tensor_advice import advice
from tenprof.analyses.tensors.tensor_forest import Forest
from tenprof.analyses.tensors.tensor_stall_cost import TensorCost, tensor_stall_cost
from tenprof.renderers.stall_cost_files import BUCKETS, telling_read
from tenprof.renderers.stall_cost_text import render_stall_cost, tensor_label
from tenprof.report.sections.section import ReportOptions, Section
from tenprof.store.profile import Profile
from tenprof.store.schema import Pass


@dataclass(frozen=True)
class StallCostData:
    costs: list[TensorCost]
    forest: Forest | None  # the tensor forest the costs are drawn on; None without costs (not built)
    patterns: LoadPatterns | None = None  # how the charged kernels read each tensor; None without costs


def analyse(profile: Profile, options: ReportOptions) -> StallCostData:
    costs = tensor_stall_cost(profile)
    return StallCostData(costs, Forest(profile) if costs else None, load_patterns(profile) if costs else None)


def text(data: StallCostData, out: Console, options: ReportOptions) -> None:
    assert data.forest is not None  # the text is shown only with costs (has_content), which have a forest
    render_stall_cost(data.costs, data.forest, out, options.limit, data.patterns)


def json(data: StallCostData) -> dict[str, Any]:
    if not data.costs:
        return {"tensor_stall_cost": []}
    forest = data.forest
    assert forest is not None  # built whenever there are costs
    rows = []
    for cost in data.costs:
        row = dataclasses.asdict(cost)
        read = telling_read(cost, data.patterns)
        row["read_pattern"] = None if read is None else {**dataclasses.asdict(read), "op_seqs": list(read.op_seqs[:8])}
        # the names and words the text report prints, for readers of the JSON and the page
        if cost.tensor_id >= 0:
            row["tensor"], row["made_by"] = tensor_label(forest, cost.tensor_id)
            row["read_as"] = describe(read) if read is not None else ""
            row["advice"] = advice(cost, forest, data.patterns)
        else:
            row["tensor"], row["made_by"], row["read_as"], row["advice"] = BUCKETS[cost.tensor_id], "", "", ""
        rows.append(row)
    return {"tensor_stall_cost": rows}


def has_content(data: StallCostData) -> bool:
    return bool(data.costs)


SECTION: Section[StallCostData] = Section(
    "tensor_stall_cost",
    (Pass.TENSORS, Pass.STALLS, Pass.ACCESSES),
    analyse,
    text,
    json,
    ("tensor_stall_cost",),
    has_content=has_content,
)
