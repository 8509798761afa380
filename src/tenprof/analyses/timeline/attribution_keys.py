"""What each kernel and op of a profile is attributed to, as plain keys: for setting two recordings of the
same run side by side (a capture against another, ops copied against ops recorded).

- `kernel_keys(profile)`: per kernel, in the kernels table's order, (op name, the op's line in the user's
  code as (file, line), the op's step, the kernel's duration in ns); None for what a kernel without an op
  lacks.
- `op_keys(profile)`: the ops counted by (step, name, input shapes, user line, parent op's name).
- `memory_keys(profile)`: per allocator sample, in the memory table's order, (op name, the op's line, the op's
  step, bytes); None for what a sample outside every op lacks.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from tenprof.analyses.timeline.summary import user_frame_of
from tenprof.store.profile import Profile

Line = tuple[str, int] | None


def _lines(profile: Profile) -> list[Line]:
    """Each op's line in the user's code, None where it has none."""
    frames = profile.table("frames")
    files, lines = frames.column("file").to_pylist(), frames.column("line").to_pylist()
    user = user_frame_of(profile)
    out: list[Line] = []
    for frame in profile.table("ops").column("frame_id").to_pylist():
        f = int(user[frame]) if frame >= 0 else -1
        out.append((files[f], lines[f]) if f >= 0 else None)
    return out


Keyed = list[tuple[str | None, Line, int | None, int]]


def _by_op(profile: Profile, table: str, value: str) -> Keyed:
    """Per row of `table`: (its op's name, line, step, the row's `value`), Nones where it has no op."""
    ops = profile.table("ops")
    names, steps, line = ops.column("name").to_pylist(), ops.column("step").to_pylist(), _lines(profile)
    rows = profile.table(table)
    return [
        (names[op], line[op], steps[op], v) if op >= 0 else (None, None, None, v)
        for op, v in zip(rows.column("op_id").to_pylist(), rows.column(value).to_pylist(), strict=True)
    ]


def kernel_keys(profile: Profile) -> Keyed:
    return _by_op(profile, "kernels", "duration_ns")


def op_keys(profile: Profile) -> Counter[tuple[Any, ...]]:
    ops = profile.table("ops").to_pydict()
    line = _lines(profile)
    keys: Counter[tuple[Any, ...]] = Counter()
    for i, name in enumerate(ops["name"]):
        parent = ops["parent_op_id"][i]
        keys[(ops["step"][i], name, ops["input_shapes"][i], line[i], ops["name"][parent] if parent >= 0 else None)] += 1
    return keys


def memory_keys(profile: Profile) -> Keyed:
    return _by_op(profile, "memory", "bytes")
