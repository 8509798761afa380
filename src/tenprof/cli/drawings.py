"""Files drawn from a finished profile for people to open next to it: the tensor forest (forest.txt,
forest.dot and, with graphviz, forest.svg) when it has a tensors pass, and the tensor stall cost
(tensor_stall_cost.csv, blame.dot, blame.svg) when it has the tensors, stalls and accesses passes.

`tenprof run` writes them once capture is done (capture writes raw files and tables only). They are
views: a failure leaves the tables as they are, is printed, and is noted in the tensors pass's status;
`tenprof export --format forest|stall-cost|blame-dot` makes them again.
"""

from __future__ import annotations

from pathlib import Path

from tenprof.store.meta import read_meta, write_meta
from tenprof.store.profile import load_profile
from tenprof.store.schema import Pass


def write_drawings(out_dir: Path) -> list[str]:
    """Write what the profile supports; the problems met, one line each."""
    meta = read_meta(out_dir)
    tensors = meta.passes.get(Pass.TENSORS)
    if tensors is None or tensors.state == "failed":
        return []
    problems = [p for p in (_forest(out_dir), write_stall_cost_files(out_dir)) if p]
    if problems:
        tensors.reason = "; ".join(filter(None, [tensors.reason, *problems]))
        write_meta(out_dir, meta)
    return problems


def _forest(out_dir: Path) -> str:
    try:
        from tenprof.renderers.forest_files import write_forest

        write_forest(load_profile(out_dir), out_dir)
    except Exception as exc:  # the tables are written; the drawings can be made again with `tenprof export`
        return f"the forest files could not be written: {exc.__class__.__name__}: {exc}"
    return ""


def write_stall_cost_files(out_dir: Path) -> str:
    """tensor_stall_cost.csv and blame.dot (+ .svg) when the tensors, stalls and accesses passes were
    built; a note on failure."""
    try:
        profile = load_profile(out_dir)
        if not all(profile.has_pass(p) for p in (Pass.TENSORS, Pass.STALLS, Pass.ACCESSES)):
            return ""
        from tenprof.analyses.tensor_forest import Forest
        from tenprof.analyses.tensor_stall_cost import tensor_stall_cost
        from tenprof.renderers.stall_cost_files import write_stall_cost

        costs = tensor_stall_cost(profile)
        if costs:
            write_stall_cost(costs, Forest(profile), out_dir)
    except Exception as exc:  # the tables are written; the files can be made again with `tenprof export`
        return f"the tensor stall cost files could not be written: {exc.__class__.__name__}: {exc}"
    return ""
