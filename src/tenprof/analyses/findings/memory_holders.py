"""What holds memory: a set of allocator blocks (analyses.timeline.live_memory) summed by the line of the
user's code and the op that made them, for the memory findings (out-of-memory, memory-growth).

The op named is the top-level op around the allocation (`aten::linear`, a backward node), the one the
user's line called, not the `aten::empty` inside it that asked the allocator. Each holder says how many
blocks it has, their bytes, and the steps they were made in: "612 blocks of 128 MiB from train.py:12
(aten::mm), one a step over steps 3-614".
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from tenprof.analyses.findings.context import Context
from tenprof.analyses.timeline.live_memory import Blocks
from tenprof.core.quantities import size

I64 = npt.NDArray[np.int64]


@dataclass(frozen=True)
class Holder:
    line: str
    op: str
    count: int  # blocks
    total_bytes: int
    block_bytes: int  # the commonest block size among them
    same_size: bool  # every block that size
    steps: int  # distinct steps the blocks were made in (0 when none was made inside a step)
    in_steps: int  # blocks made inside a step
    first_step: int  # step numbers, -1 when none
    last_step: int

    def describe(self) -> str:
        """'612 blocks of 128 MiB (76.5 GiB) from train.py:12 (aten::mm), one a step over steps 3-614'."""
        what = f"{self.count} block{'s' if self.count != 1 else ''}"
        if self.same_size:
            what += f" of {size(self.block_bytes)}" + (f" ({size(self.total_bytes)})" if self.count > 1 else "")
        else:
            what += f", {size(self.total_bytes)} in all,"
        # an imported trace without lines names the op alone
        text = f"{what} from {self.op}" if self.line.startswith("(") else f"{what} from {self.line} ({self.op})"
        if self.steps > 1:
            span = self.last_step - self.first_step + 1
            pace = "one a step" if self.in_steps == self.steps == span else f"made in {self.steps} steps"
            text += f", {pace} over steps {self.first_step}-{self.last_step}"
        elif self.steps == 1:
            text += f", made in step {self.first_step}"
        outside = self.count - self.in_steps
        if outside and self.steps:  # such as the unfinished step an error ended
            text += f", and {outside} outside the complete steps"
        return text


def holders(ctx: Context, found: Blocks, chosen: npt.NDArray[np.bool_], step_number: I64) -> list[Holder]:
    """The chosen blocks summed by (line, op), most bytes first. `step_number`: each block's step number,
    -1 outside every step."""
    rows = np.flatnonzero(chosen)
    if not len(rows):
        return []
    top = ctx.profile.column("ops", "top_op_id")
    ops = found.op_id[rows]
    tops = np.where(ops >= 0, top[np.maximum(ops, 0)], -1)
    groups: dict[tuple[str, str], list[int]] = defaultdict(list)
    for k, op in enumerate(tops.tolist()):
        line = ctx.line_of_op(int(ops[k])) if op >= 0 else "(no op)"
        groups[(line, ctx.op_name(op) if op >= 0 else "(no op)")].append(int(rows[k]))
    made: list[Holder] = []
    for (line, op), members in groups.items():
        sizes = Counter(found.nbytes[members].tolist())
        block, _ = sizes.most_common(1)[0]
        numbers = step_number[members]
        steps = np.unique(numbers[numbers >= 0])
        made.append(
            Holder(
                line=line,
                op=op,
                count=len(members),
                total_bytes=int(found.nbytes[members].sum()),
                block_bytes=int(block),
                same_size=len(sizes) == 1,
                steps=len(steps),
                in_steps=int((numbers >= 0).sum()),
                first_step=int(steps[0]) if len(steps) else -1,
                last_step=int(steps[-1]) if len(steps) else -1,
            )
        )
    made.sort(key=lambda h: (-h.total_bytes, h.line))
    return made


def step_numbers(ctx: Context, found: Blocks) -> I64:
    """Each block's step number (of every complete step, the first too), -1 outside every step."""
    start, end, number = ctx.all_step_start, ctx.all_step_end, ctx.all_step_numbers
    order = np.argsort(start, kind="stable")
    start, end, number = start[order], end[order], number[order]
    i = np.searchsorted(start, found.start_ns, side="right") - 1
    inside = (i >= 0) & (found.start_ns < end[np.maximum(i, 0)])
    return np.where(inside, number[np.maximum(i, 0)], -1).astype(np.int64)
