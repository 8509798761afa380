"""The tensor stall cost section of `tenprof report`: the tensors memory stalls were charged to, most
first, each with how its reads access memory (where the access pass compared lanes) and what to do
about it, and the share that could not be charged to a tensor."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape

from tenprof.analyses.tensors.access_patterns import LoadPatterns, describe
from tenprof.analyses.tensors.tensor_advice import advice
from tenprof.analyses.tensors.tensor_forest import Forest
from tenprof.analyses.tensors.tensor_stall_cost import TensorCost
from tenprof.renderers.stall_cost_files import BUCKETS, telling_read


def tensor_label(forest: Forest, t: int) -> tuple[str, str]:
    """A charged tensor as the report names it (`T12 float32[4096, 4096], view (aten::t) of T3`) and
    what made it (op, line, and the library line it came through)."""
    parent = int(forest.columns["parent_tensor_id"][t])
    what = f"T{t} {forest.describe(t)}"
    if parent >= 0:
        what += f", view ({forest.columns['view_op'][t]}) of T{forest.path_to_root(t)[-1]}"
    via = forest.creator_library_line(t)
    made = " ".join(filter(None, [forest.creator_op(t), forest.creator_line(t), f"(via {via})" if via else ""]))
    return what, made


def render_stall_cost(
    costs: list[TensorCost], forest: Forest, console: Console, limit: int | None, patterns: LoadPatterns | None = None
) -> None:
    console.print(
        "[bold]Tensors the memory stalls waited on[/bold] (stalls x accesses x tensors; each sampled kernel "
        "counted once per op instance it stands for)"
    )
    tensors = [c for c in costs if c.tensor_id >= 0]
    for c in tensors[: limit or 10]:
        t = c.tensor_id
        what, made = tensor_label(forest, t)
        guessed = f", {c.inferred / c.samples:.0%} inferred" if c.inferred else ""
        console.print(f"  {c.share:6.1%}  {escape(what)}  made by {escape(made or '?')}{guessed}")
        read_by = ", ".join(c.ops[:3]) or "kernels outside ops"
        console.print(f"          read by {escape(read_by)}: {escape(', '.join(k[:50] for k in c.kernels[:3]))}")
        reads = patterns.for_tensor(t, c.kernels) if patterns is not None else []
        shown = {id(r) for r in reads[:2]}
        telling = telling_read(c, patterns)
        for read in [*reads[:2], *([telling] if telling is not None and id(telling) not in shown else [])]:
            reader = (read.op or "a kernel outside ops") + (f" at {read.line}" if read.line else "")
            console.print(f"          {escape(reader)} reads it: {escape(describe(read))}")
        console.print(f"          do: {escape(advice(c, forest, patterns))}")
    total = sum(c.samples for c in costs)
    inferred = sum(c.inferred for c in costs)
    if inferred and total:
        console.print(
            f"  inferred, not measured: {inferred / total:.1%} of the memory stalls wait on asynchronous copies "
            "(TMA, cp.async) the sanitizer cannot follow; charged to the op's inputs by bytes"
        )
    rest = [c for c in costs if c.tensor_id < 0]
    if rest:
        parts = ", ".join(f"{c.share:.1%} {BUCKETS[c.tensor_id]}" for c in rest)
        console.print(f"  not charged to a tensor: {escape(parts)}")
