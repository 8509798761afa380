"""memory-growth: memory that every step allocates and never frees (a leak), ranked first: the run will
run out of memory, and it says when.

The timeline's allocator reports, replayed into blocks (analyses.timeline.live_memory), judged on each
device over the analysed steps. A step "leaves memory behind" when blocks it allocated are still
allocated at the end of the last analysed step; the last two steps are not judged, as what they made
may still be in use (the loss kept until the next step overwrites it, a prefetched batch). It fires
when, over five analysed steps or more:
- at least `memory_growth.min_share` of the judged steps leave memory behind, the median step
  `memory_growth.min_bytes_per_step` or more (the first steps' one-off state, such as an optimizer's,
  is made in step 0, which is not analysed, or in one step only);
- and the allocator's allocated total at the step ends rises (least squares) by at least half of that:
  blocks kept while as many older ones are freed (a bounded cache) are no growth.

The growth per step is that slope (on a GPU against the step numbers; on the CPU, whose allocator counts
only what it made while the profiler recorded, against the steps' places among the recorded ones); the
steps left until the card is full divide its free memory (the card's less what the allocator reserved at
the end) by it. What leaks is summed by line and op (analyses.timeline.live_memory), over the judged steps
and the slow steps among them (left out of the judgement, not of what is kept). Steps that each keep
several blocks (GRAPH_BLOCKS, the median step) made by several ops, or two blocks or more made by two ops
of one line of the user's, mean a whole step's graph is kept: a running loss summed without .item(), or
outputs stored outside torch.no_grad(), keep every step's autograd graph and the activations it saved,
all made on the model's one line. One block a step, or one op's blocks per line: tensors kept on purpose
(a list of outputs).

Where no steps were marked and the loop's iterations were inferred, it judges only iterations that each run
a backward pass (`iterations_run_backward`): the repeated calls of one forward pass read as iterations too
(52 conv2d of a ResNet-50's single forward pass, a particle transformer's 11 blocks: public traces without
steps or stacks), and the activations each layer keeps for the backward then read as a leak of every step,
urgent, first. A leak in an unmarked loop of inference goes unjudged (the report says so: mark the steps).
"""

from __future__ import annotations

import numpy as np

from tenprof.analyses.findings.context import Context
from tenprof.analyses.findings.model import Finding
from tenprof.analyses.timeline.live_memory import Blocks, Holder, blocks, step_numbers
from tenprof.core.quantities import size

MIN_STEPS = 5  # analysed: three judged and the two last
NOT_JUDGED_LAST = 2
HOLDERS_SHOWN = 4
# a step that keeps this many blocks or more, made by two ops or more: a whole step's graph is kept
GRAPH_BLOCKS = 4


def check(ctx: Context) -> list[Finding]:
    if ctx.step_count < MIN_STEPS or ctx.profile.meta.run.out_of_memory is not None:
        return []  # after an out-of-memory error its post-mortem names what was kept, one block a step
    if ctx.inferred is not None and not iterations_run_backward(ctx):
        return []
    found = blocks(ctx.profile)
    if not len(found):
        return []
    order = np.argsort(ctx.step_start, kind="stable")
    start, end = ctx.step_start[order], ctx.step_end[order]
    index = np.searchsorted(start, found.start_ns, side="right") - 1
    inside = (index >= 0) & (found.start_ns < end[np.maximum(index, 0)])
    judged = len(start) - NOT_JUDGED_LAST
    outlive = (found.end_ns < 0) | (found.end_ns > end[-1])
    kept = outlive & inside & (index < judged)
    # what is named as kept: also what a slow step between the judged ones made (it leaks as the others do;
    # left out of the judgement only), so 'one a step' stays true of the steps it spans
    in_a_step = step_numbers(found, ctx.all_step_start, ctx.all_step_end, ctx.all_step_numbers) >= 0
    named = outlive & in_a_step & (found.start_ns >= start[0]) & (found.start_ns < start[judged])
    each = [_judge(ctx, found, kept & found.on(d), named & found.on(d), index, judged, d, end) for d in found.devices]
    growing = [f for f in each if f is not None]
    # one finding: the device that grows fastest (a leak of GPU tensors also keeps their CPU-side copies)
    return [max(growing, key=lambda f: f.numbers["growth_bytes_per_step"])] if growing else []


def iterations_run_backward(ctx: Context) -> bool:
    """Whether every analysed step but the last runs backward ops (the last inferred iteration may end, with
    its last call on the main thread, before its backward does)."""
    backward = ctx.profile.column("ops", "is_backward").astype(bool)
    index = ctx.step_index(ctx.profile.column("ops", "start_ns")[backward])
    return bool(np.isin(np.arange(len(ctx.step_start) - 1), index).all())


def _judge(
    ctx: Context,
    found: Blocks,
    kept: np.ndarray,
    named: np.ndarray,
    index: np.ndarray,
    judged: int,
    device: str,
    step_end: np.ndarray,
) -> Finding | None:
    per_step = np.bincount(index[kept], weights=found.nbytes[kept], minlength=judged)[:judged]
    leaving = int((per_step > 0).sum())
    typical = float(np.median(per_step))
    if leaving < ctx.t.memory_growth_min_share * judged or typical < ctx.t.memory_growth_min_bytes_per_step:
        return None
    totals = _allocated_at(ctx, device, step_end)
    if totals is None:
        return None
    numbers = ctx.step_numbers[np.argsort(ctx.step_start, kind="stable")]
    # Rounded to the byte: a fit of whole MiB reads 1048575.99
    places = _growth_steps(ctx, device, numbers)
    slope = float(round(np.polyfit(places, totals.astype(np.float64), 1)[0]))
    # where the two differ, the CPU's totals left out steps run with the capture off
    uncounted = int(numbers[-1] - numbers[0] - (places[-1] - places[0]))
    if slope < 0.5 * typical:
        return None
    held = ctx.holders(found, named)
    blocks_per_step = float(np.median(np.bincount(index[kept], minlength=judged)[:judged]))
    steps_left = _steps_until_full(ctx, device, slope)
    title = f"Memory grows {size(slope)} a step on {device}"
    if held:
        title += f": {held[0].line if not held[0].line.startswith('(') else held[0].op} keeps what it makes"
    if steps_left is not None:
        title += f"; the card is full in about {steps_left:,} more steps"
    seen = [
        f"{leaving} of the {judged} steps judged leave memory allocated to the end "
        f"({size(typical)} the median step); allocated at the step ends: {size(totals[0])} after step "
        f"{numbers[0]}, {size(totals[-1])} after step {numbers[-1]} ({size(slope)} a step, least squares"
        + (f"; the CPU allocator did not count the {uncounted} steps run with the capture off)" if uncounted else ")"),
        "kept, by the line that made it:",
        *(h.describe() for h in held[:HOLDERS_SHOWN]),
    ]
    if len(held) > HOLDERS_SHOWN:
        rest = held[HOLDERS_SHOWN:]
        seen.append(f"{len(rest)} more lines keep {size(sum(h.total_bytes for h in rest))}")
    return Finding(
        id="memory-growth",
        title=title,
        cost_ns=0,
        seen=seen,
        where=[h.line for h in held[:3] if not h.line.startswith("(")],
        why="Memory allocated every step and never freed adds up until the allocator cannot find more: the run "
        "dies of an out-of-memory error, however long it has run.",
        fix=_fix(held, blocks_per_step),
        numbers={
            "growth_bytes_per_step": slope,
            "median_kept_bytes_per_step": typical,
            "steps_leaving_memory": float(leaving),
            "steps_judged": float(judged),
            **({"steps_until_full": float(steps_left)} if steps_left is not None else {}),  # known on a GPU
        },
        urgent=True,
    )


def _growth_steps(ctx: Context, device: str, numbers: np.ndarray) -> np.ndarray:
    """What the allocated totals are fitted against: on a GPU the step numbers, as the caching allocator
    counts every block, also those of the steps left out between the judged ones (timed with the capture off,
    slow, compiling). The CPU allocator counts only what it made while the profiler recorded (c10's profiled
    CPU reporter): there each judged step's place among the recorded steps."""
    if device.startswith("cuda"):
        return numbers.astype(np.float64)
    return np.searchsorted(np.sort(ctx.all_step_numbers), numbers).astype(np.float64)


def _allocated_at(ctx: Context, device: str, step_end: np.ndarray) -> np.ndarray | None:
    """The allocator's allocated total on `device` at each step's end (its last report before it)."""
    m = ctx.profile.table("memory")
    kinds = ctx.profile.strings("memory", "device_type")
    index = m.column("device").to_numpy()
    kind, _, number = device.partition(":")
    mine = kinds.equals(kind) & ((index == int(number)) if number else True)
    ts = m.column("ts_ns").to_numpy()[mine]
    total = m.column("total_allocated_bytes").to_numpy()[mine]
    order = np.argsort(ts, kind="stable")
    ts, total = ts[order], total[order]
    last = np.searchsorted(ts, step_end, side="right") - 1
    if (last < 0).any():
        return None
    return np.asarray(total[last], dtype=np.int64)


def _steps_until_full(ctx: Context, device: str, slope: float) -> int | None:
    """The card's memory left at the end of the recording, in steps of `slope`; None off CUDA or unknown."""
    kind, _, number = device.partition(":")
    if kind != "cuda" or not number or slope <= 0:
        return None
    card = next((g for g in ctx.profile.meta.gpus if g.index == int(number) and g.total_memory_bytes > 0), None)
    if card is None:
        return None
    m = ctx.profile.table("memory")
    on = ctx.profile.strings("memory", "device_type").equals("cuda") & (m.column("device").to_numpy() == int(number))
    last = np.flatnonzero(on)[-1]
    reserved = int(m.column("total_reserved_bytes")[int(last)].as_py())
    used = reserved if reserved >= 0 else int(m.column("total_allocated_bytes")[int(last)].as_py())
    return max(0, int((card.total_memory_bytes - used) / slope))


def _fix(held: list[Holder], blocks_per_step: float) -> str:
    ops_of_line: dict[str, set[str]] = {}
    for h in held:
        if not h.line.startswith("("):
            ops_of_line.setdefault(h.line, set()).add(h.op)
    # one line keeping what two of its ops made, a step: a call returns one value, the rest is kept by its graph
    one_line = blocks_per_step >= 2 and any(len(ops) >= 2 for ops in ops_of_line.values())
    if one_line or (blocks_per_step >= GRAPH_BLOCKS and len({h.op for h in held}) >= 2):
        return (
            f"Each step keeps {blocks_per_step:.0f} blocks made by {len({h.op for h in held})} ops: most likely a "
            "whole step's autograd graph is kept alive, with the activations it saved, by a tensor that still "
            "requires grad stored across steps (a running total such as `total_loss += loss`, a list of losses or "
            "outputs): store loss.item() or t.detach() instead, and run evaluation under torch.no_grad()."
        )
    lines = ", ".join(h.line for h in held[:2] if not h.line.startswith("(")) or "the ops named above"
    return (
        f"Tensors made at {lines} are kept across steps (appended to a list or a dict, or a cache that never "
        "forgets): keep only what you need of them (.item(), .detach().cpu()), or drop the reference each step."
    )
