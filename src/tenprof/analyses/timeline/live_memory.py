"""The allocator's blocks: each allocation of the timeline pass's memory table paired with its free, and
what holds memory, summed by the line and op that made it.

The memory table has one row per allocator report (an allocation with positive bytes, a free with
negative bytes, both with the block's address). An address is handed out again only once it is freed,
so on one device the reports of one address alternate: allocation, free, allocation, ... Pairing each
allocation with the next report at its address gives the block's life, [start_ns, end_ns); a block
never freed in the recording has end_ns -1 (live at its end: at a crash, what held the memory). An
allocation followed by another allocation at its address lost its free (a report outside the recorded
window): it is taken as freed when the address was handed out again. A free without its allocation
(made before the recording) is no block, and neither is a report without an address (Kineto's format of
2021 recorded none: with them, nothing pairs).

`live_at(blocks, t)` tells which blocks held memory at time t. `holders(...)` sums a set of blocks by the
line of the user's code and the op that made them: the top-level op around the allocation (`aten::linear`,
a backward node), the one the user's line called, not the `aten::empty` inside it that asked the
allocator; each with its blocks, their bytes and the steps they were made in ("612 blocks of 128 MiB from
train.py:12 (aten::mm), one a step over steps 3-614"). The memory findings and the summary's peak read them.
"""

from __future__ import annotations

import weakref
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from tenprof.core.quantities import size
from tenprof.store.profile import Profile

I64 = npt.NDArray[np.int64]
Mask = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class Blocks:
    """One entry per allocation in the recording, in allocation order."""

    devices: list[str]  # the devices' names ('cuda:0', 'cpu'), indexed by device_code
    device_code: I64
    start_ns: I64
    end_ns: I64  # -1: still allocated when the recording ended
    nbytes: I64
    op_id: I64  # the innermost op that allocated it, -1 when none

    def __len__(self) -> int:
        return len(self.start_ns)

    def on(self, device: str) -> Mask:
        """The blocks of one device."""
        code = self.devices.index(device) if device in self.devices else -1
        return np.asarray(self.device_code == code, dtype=bool)


# a profile's blocks, paired once: the summary's peak and the memory findings of one report all read them
_PAIRED: weakref.WeakKeyDictionary[Profile, Blocks] = weakref.WeakKeyDictionary()


def blocks(profile: Profile) -> Blocks:
    """The blocks of every device the memory table reports on (see the module)."""
    if profile not in _PAIRED:
        _PAIRED[profile] = _pair(profile)
    return _PAIRED[profile]


def _pair(profile: Profile) -> Blocks:
    m = profile.table("memory")
    empty = np.zeros(0, dtype=np.int64)
    if m.num_rows == 0:
        return Blocks([], empty, empty, empty, empty, empty)
    ts = m.column("ts_ns").to_numpy()
    nbytes = m.column("bytes").to_numpy()
    address = m.column("address").to_numpy()
    kinds = profile.strings("memory", "device_type")
    index = m.column("device").to_numpy().astype(np.int64)
    pairs, device_code = np.unique(np.stack([kinds.codes.astype(np.int64), index]), axis=1, return_inverse=True)
    device_code = device_code.reshape(-1).astype(np.int64)
    devices = [device_name(str(kinds.values[k]), int(i)) for k, i in pairs.T.tolist()]
    # the reports of one address on one device, in time order (the table's order breaks ties)
    order = np.lexsort((np.arange(len(ts)), ts, address, device_code))
    same_place = np.zeros(len(order), dtype=bool)
    same_place[:-1] = (device_code[order][1:] == device_code[order][:-1]) & (address[order][1:] == address[order][:-1])
    end = np.full(len(order), -1, dtype=np.int64)
    end[:-1] = np.where(same_place[:-1], ts[order][1:], -1)
    # an event without an address (Kineto's format of 2021 recorded none) pairs with no free: no block
    allocated = (nbytes[order] > 0) & (address[order] != 0)
    rows, ends = order[allocated], end[allocated]
    kept = np.argsort(rows, kind="stable")  # allocation order
    rows, ends = rows[kept], ends[kept]
    return Blocks(devices, device_code[rows], ts[rows], ends, nbytes[rows], m.column("op_id").to_numpy()[rows])


def device_name(kind: str, index: int) -> str:
    """'cuda:0'; the CPU as 'cpu' (Kineto gives it the index -1)."""
    return f"{kind}:{index}" if index >= 0 else kind


def live_at(found: Blocks, t: int) -> Mask:
    """The blocks holding memory at time t (allocated at or before it, not yet freed)."""
    return (found.start_ns <= t) & ((found.end_ns < 0) | (found.end_ns > t))


def live_at_end(found: Blocks) -> Mask:
    """The blocks never freed in the recording."""
    return found.end_ns < 0


@dataclass(frozen=True)
class Holder:
    line: str  # '(...)' where the op has no line of the user's
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


def holders(
    profile: Profile, found: Blocks, chosen: Mask, step_number: I64, line_of_op: Callable[[int], str]
) -> list[Holder]:
    """The chosen blocks summed by (line, top-level op), most bytes first. `step_number`: each block's step
    number, -1 outside every step; `line_of_op`: the user's line of an op."""
    rows = np.flatnonzero(chosen)
    if not len(rows):
        return []
    top = profile.column("ops", "top_op_id")
    names = profile.strings("ops", "name")
    ops = found.op_id[rows]
    groups: dict[tuple[str, str], list[int]] = defaultdict(list)
    for row, op in zip(rows.tolist(), ops.tolist(), strict=True):
        key = (line_of_op(op), names.at(int(top[op]))) if op >= 0 else ("(no op)", "(no op)")
        groups[key].append(row)
    made: list[Holder] = []
    for (line, op), members in groups.items():
        sizes = Counter(found.nbytes[members].tolist())
        numbers = step_number[members]
        steps = np.unique(numbers[numbers >= 0])
        made.append(
            Holder(
                line=line,
                op=op,
                count=len(members),
                total_bytes=int(found.nbytes[members].sum()),
                block_bytes=int(sizes.most_common(1)[0][0]),
                same_size=len(sizes) == 1,
                steps=len(steps),
                in_steps=int((numbers >= 0).sum()),
                first_step=int(steps[0]) if len(steps) else -1,
                last_step=int(steps[-1]) if len(steps) else -1,
            )
        )
    made.sort(key=lambda h: (-h.total_bytes, h.line))
    return made


def step_numbers(found: Blocks, step_start: I64, step_end: I64, step_number: I64) -> I64:
    """Each block's step number (of the given steps), -1 outside every step."""
    if not len(step_start):
        return np.full(len(found), -1, dtype=np.int64)
    order = np.argsort(step_start, kind="stable")
    start, end, number = step_start[order], step_end[order], step_number[order]
    i = np.searchsorted(start, found.start_ns, side="right") - 1
    inside = (i >= 0) & (found.start_ns < end[np.maximum(i, 0)])
    return np.where(inside, number[np.maximum(i, 0)], -1).astype(np.int64)
