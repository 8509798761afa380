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


def kernel_keys(profile: Profile) -> list[tuple[str | None, Line, int | None, int]]:
    ops = profile.table("ops").to_pydict()
    line = _lines(profile)
    kernels = profile.table("kernels")
    keys: list[tuple[str | None, Line, int | None, int]] = []
    for op, ns in zip(kernels.column("op_id").to_pylist(), kernels.column("duration_ns").to_pylist(), strict=True):
        keys.append((ops["name"][op], line[op], ops["step"][op], ns) if op >= 0 else (None, None, None, ns))
    return keys


def op_keys(profile: Profile) -> Counter[tuple[Any, ...]]:
    ops = profile.table("ops").to_pydict()
    line = _lines(profile)
    keys: Counter[tuple[Any, ...]] = Counter()
    for i, name in enumerate(ops["name"]):
        parent = ops["parent_op_id"][i]
        keys[(ops["step"][i], name, ops["input_shapes"][i], line[i], ops["name"][parent] if parent >= 0 else None)] += 1
    return keys


def memory_keys(profile: Profile) -> list[tuple[str | None, Line, int | None, int]]:
    ops = profile.table("ops").to_pydict()
    line = _lines(profile)
    memory = profile.table("memory")
    keys: list[tuple[str | None, Line, int | None, int]] = []
    for op, size in zip(memory.column("op_id").to_pylist(), memory.column("bytes").to_pylist(), strict=True):
        keys.append((ops["name"][op], line[op], ops["step"][op], size) if op >= 0 else (None, None, None, size))
    return keys
