"""The allocator's blocks: each allocation of the timeline pass's memory table paired with its free.

The memory table has one row per allocator report (an allocation with positive bytes, a free with
negative bytes, both with the block's address). An address is handed out again only once it is freed,
so on one device the reports of one address alternate: allocation, free, allocation, ... Pairing each
allocation with the next report at its address gives the block's life, [start_ns, end_ns); a block
never freed in the recording has end_ns -1 (live at its end: at a crash, what held the memory). An
allocation followed by another allocation at its address lost its free (a report outside the recorded
window): it is taken as freed when the address was handed out again. A free without its allocation
(made before the recording) is no block.

`live_at(blocks, t)` tells which blocks held memory at time t (analyses.findings.memory_holders sums
them by the line and op that made them).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from tenprof.store.profile import Profile

I64 = npt.NDArray[np.int64]
Mask = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class Blocks:
    """One entry per allocation in the recording, in allocation order."""

    device: list[str]  # 'cuda:0', 'cpu'
    start_ns: I64
    end_ns: I64  # -1: still allocated when the recording ended
    nbytes: I64
    op_id: I64  # the innermost op that allocated it, -1 when none

    def __len__(self) -> int:
        return len(self.start_ns)


def blocks(profile: Profile) -> Blocks:
    """The blocks of every device the memory table reports on (see the module)."""
    m = profile.table("memory")
    if m.num_rows == 0:
        empty = np.zeros(0, dtype=np.int64)
        return Blocks([], empty, empty, empty, empty)
    ts = m.column("ts_ns").to_numpy()
    nbytes = m.column("bytes").to_numpy()
    address = m.column("address").to_numpy()
    kinds = profile.strings("memory", "device_type")
    index = m.column("device").to_numpy().astype(np.int64)
    names = [
        f"{kinds.values[c]}:{i}" if i >= 0 else str(kinds.values[c]) for c, i in zip(kinds.codes, index, strict=True)
    ]
    device_code = np.unique(np.array(names, dtype=object), return_inverse=True)[1].reshape(-1)
    # the reports of one address on one device, in time order (the table's order breaks ties)
    order = np.lexsort((np.arange(len(ts)), ts, address, device_code))
    same_place = np.zeros(len(order), dtype=bool)
    same_place[:-1] = (device_code[order][1:] == device_code[order][:-1]) & (address[order][1:] == address[order][:-1])
    allocated = nbytes[order] > 0
    end = np.full(len(order), -1, dtype=np.int64)
    end[:-1] = np.where(same_place[:-1], ts[order][1:], -1)
    rows = order[allocated]
    ends = end[allocated]
    kept = np.argsort(rows, kind="stable")  # allocation order
    rows, ends = rows[kept], ends[kept]
    return Blocks(
        device=[names[r] for r in rows.tolist()],
        start_ns=ts[rows],
        end_ns=ends,
        nbytes=nbytes[rows],
        op_id=m.column("op_id").to_numpy()[rows],
    )


def live_at(found: Blocks, t: int) -> Mask:
    """The blocks holding memory at time t (allocated at or before it, not yet freed)."""
    return (found.start_ns <= t) & ((found.end_ns < 0) | (found.end_ns > t))


def live_at_end(found: Blocks) -> Mask:
    """The blocks never freed in the recording."""
    return found.end_ns < 0
