"""out-of-memory: the post-mortem of a script that died of an out-of-memory error, ranked first.

What it stands on: the error and the caching allocator's state when it was raised (the run's
`meta.run.out_of_memory`, from capture.out_of_memory; for an imported trace, its last "[OutOfMemory]"
event), and the timeline's allocator reports, replayed into blocks (analyses.timeline.live_memory): the
blocks on the failing device live when the allocation failed (its event's time; without one, the end of
the recording) are what held the memory. They are summed by the
user's line and op that made them (analyses.timeline.live_memory), with the steps they were made in,
so a list that keeps one output a step reads "612 blocks of 128 MiB from train.py:12 (aten::mm), one a
step over steps 3-614".

An error a DataLoader worker raised (the DataLoader raises it again in the script's process, its message
naming the worker) is the worker's: its memory is not in the script's reports, and the finding says so.

The fix follows what the holders and the allocator say, in this order:
- the largest holder made one block a step over three steps or more: memory kept across steps (a leak);
- the free memory inside the reserved segments would have held the request, but no single free block
  could: fragmentation (expandable segments);
- else the step's peak is more than the card holds: lower it.
"""

from __future__ import annotations

import re

import numpy as np

from tenprof.analyses.findings.context import Context
from tenprof.analyses.findings.model import Finding
from tenprof.analyses.timeline.live_memory import Blocks, Holder, blocks, live_at, live_at_end
from tenprof.core.quantities import size
from tenprof.store.meta import OutOfMemory

_IN_WORKER = re.compile(r"in DataLoader worker process (\d+)")
HOLDERS_SHOWN = 4
MIN_LEAK_STEPS = 3  # a holder that made one block a step over this many steps kept memory across steps


def check(ctx: Context) -> list[Finding]:
    oom = ctx.profile.meta.run.out_of_memory
    if oom is None:
        return []
    worker = _IN_WORKER.search(oom.message)
    if worker is not None:
        return [_in_worker(oom, int(worker.group(1)))]
    found = blocks(ctx.profile)
    if oom.device_type == "cpu":
        device = "cpu"
    elif oom.device >= 0:
        device = f"cuda:{oom.device}"
    else:  # not said: where most blocks were made
        device = _busiest_device(found)
    # held when it failed: at its [OutOfMemory] event where the trace has one (a run may go on after an error
    # it caught), else at the recording's end (the run stopped there)
    live = (live_at(found, oom.at_ns) if oom.at_ns >= 0 else live_at_end(found)) & found.on(device)
    held = ctx.holders(found, live)
    live_bytes = int(found.nbytes[live].sum())
    asked = f"{size(oom.requested_bytes)} asked for" if oom.requested_bytes >= 0 else "an allocation failed"
    at = f" at {oom.where}" if oom.where else ""
    title = f"Out of memory{at}: {asked}"
    if oom.allocated_bytes >= 0:
        title += f" with {size(oom.allocated_bytes)} already allocated"
    if held:
        title += f"; {held[0].count} block{'s' if held[0].count != 1 else ''} from {held[0].line} hold " + size(
            held[0].total_bytes
        )
    seen = [_first_sentences(oom.message)]
    if held:
        seen.append(
            f"held when it failed, as the timeline's allocator reports replay: {size(live_bytes)} in "
            f"{int(live.sum())} blocks on {device}, by the line that made them:"
        )
        seen.extend(h.describe() for h in held[:HOLDERS_SHOWN])
        if len(held) > HOLDERS_SHOWN:
            rest = held[HOLDERS_SHOWN:]
            seen.append(f"{len(rest)} more lines hold {size(sum(h.total_bytes for h in rest))}")
    elif not len(found):
        seen.append("the timeline recorded no allocator reports (run without --no-memory to see what held the memory)")
    seen.extend(_allocator_lines(oom))
    leak = _leak(held)
    fragmented = _fragmented(oom)
    return [
        Finding(
            id="out-of-memory",
            title=title,
            cost_ns=0,
            seen=seen,
            where=list(dict.fromkeys([*(h.line for h in held[:2]), *([oom.where] if oom.where else [])]))[:3],
            why=(
                "The script stopped: "
                if ctx.profile.meta.run.cut_short
                else "An allocation failed (the script caught the error and went on): "
            )
            + "the allocator could not find the memory the op asked for, neither in its free blocks nor from the "
            "driver.",
            fix=_fix(leak, fragmented, oom),
            numbers={
                "requested_bytes": float(oom.requested_bytes),
                "allocated_bytes": float(oom.allocated_bytes),
                "reserved_bytes": float(oom.reserved_bytes),
                "largest_free_block_bytes": float(oom.largest_free_block_bytes),
                "free_in_reserved_bytes": float(oom.free_in_reserved_bytes),
                "live_bytes_recorded": float(live_bytes),
                "top_holder_bytes": float(held[0].total_bytes) if held else 0.0,
            },
            urgent=True,
        )
    ]


_HOST_MEMORY = ("DefaultCPUAllocator", "CPU memory", "host memory")


def _worker_fix(message: str) -> str:
    """Host memory (the CPU allocator's error) or the GPU's (CUDA in the worker)."""
    if any(word in message for word in _HOST_MEMORY):
        return (
            "The worker ran out of host memory making a sample or a batch: look at what the dataset's "
            "__getitem__ (or the collate function) allocates for it; every worker holds prefetch_factor batches "
            "(2 by default) at once, so fewer workers or a smaller prefetch_factor or batch lower the host's peak."
        )
    return (
        "Make batches on the CPU in the workers and move them to the GPU in the loop (pin_memory=True and "
        ".to('cuda', non_blocking=True)): CUDA in every worker process holds a context and a cache of its own. "
        "Or make smaller batches, or fewer workers."
    )


def _in_worker(oom: OutOfMemory, worker: int) -> Finding:
    """An error a DataLoader worker raised, raised again in the script's process by the DataLoader: the
    memory that ran out is the worker's, which this process's allocator reports do not hold."""
    original = oom.message.strip().splitlines()[-1] if oom.message.strip() else ""
    at = f" (raised again at {oom.where})" if oom.where else ""
    return Finding(
        id="out-of-memory",
        title=f"Out of memory in DataLoader worker process {worker}{at}",
        cost_ns=0,
        seen=[
            f"the DataLoader raised the error of its worker process {worker} again in the script's process: "
            + original[:600],
            "the worker's memory is not in this recording: what this process held is no part of that error",
        ],
        where=[oom.where] if oom.where else [],
        why="The script stopped: a DataLoader worker ran out of memory while it made a batch.",
        fix=_worker_fix(oom.message),
        numbers={"requested_bytes": float(oom.requested_bytes), "worker": float(worker)},
        urgent=True,
    )


def _busiest_device(found: Blocks) -> str:
    """Where no CUDA device is named (a CPU allocator's error): the device most blocks were made on."""
    return found.devices[int(np.bincount(found.device_code).argmax())] if len(found) else ""


def _first_sentences(message: str) -> str:
    """The error's own words up to PyTorch's advice (tenprof gives its own): 'CUDA out of memory. Tried to
    allocate ... of which 3.19 MiB is free. ...'."""
    text = " ".join(message.split())
    cut = text.find(" If reserved but unallocated")
    return "the error: " + (text[:cut] if cut > 0 else text)[:600]


def _allocator_lines(oom: OutOfMemory) -> list[str]:
    lines = []
    if oom.reserved_bytes >= 0 and oom.allocated_bytes >= 0:
        line = (
            f"the caching allocator then: {size(oom.reserved_bytes)} reserved, {size(oom.allocated_bytes)} of it "
            f"allocated; free inside the reserved segments {size(oom.free_in_reserved_bytes)}, the largest free "
            f"block {size(oom.largest_free_block_bytes)}"
        )
        if oom.device_total_bytes > 0:
            line += f"; the card {size(oom.device_free_bytes)} free of {size(oom.device_total_bytes)}"
        lines.append(line)
    if oom.snapshot:
        lines.append(
            f"the allocator's snapshot is kept as timeline/raw/{oom.snapshot}: drop it on https://pytorch.org/memory_viz"
        )
    if oom.allocator_error:
        lines.append(f"the allocator's state could not be read: {oom.allocator_error}")
    return lines


def _leak(held: list[Holder]) -> Holder | None:
    """The largest holder, when it made one block a step over MIN_LEAK_STEPS steps or more."""
    if held and held[0].steps >= MIN_LEAK_STEPS and held[0].count >= held[0].steps:
        return held[0]
    return None


def _fragmented(oom: OutOfMemory) -> bool:
    """The reserved segments' free memory would hold the request, yet no single free block does."""
    return 0 <= oom.largest_free_block_bytes < oom.requested_bytes <= oom.free_in_reserved_bytes


def _fix(leak: Holder | None, fragmented: bool, oom: OutOfMemory) -> str:
    if leak is not None:
        return (
            f"Memory is kept across steps: {leak.line} made a block in each of {leak.steps} steps and none was freed. "
            "Drop the reference you keep (a list, a dict, a running total); keep only what you need of it "
            "(loss.item(), t.detach().cpu()), or clear it each step."
        )
    if fragmented:
        return (
            f"The free memory inside the allocator's segments ({size(oom.free_in_reserved_bytes)}) would hold the "
            f"{size(oom.requested_bytes)} asked for, but in no single block: set "
            "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True so that segments grow instead of splitting, or keep "
            "allocation sizes steady."
        )
    return (
        "The step needs more memory than the card has: lower its peak (a smaller batch, activation checkpointing, "
        "bf16 autocast, gradient accumulation over smaller micro-batches) or spread the model over more GPUs."
    )
