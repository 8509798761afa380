"""Kernels of torch.compile'd code attributed to the aten ops they fuse and the lines of those ops.

A kernel counts as compiled when the generated code describes it (`compiled_kernels`) or when it ran
inside a compiled region (an enclosing record named `Torch-Compiled Region...` or `...CompiledFxGraph...`,
e.g. cuBLAS GEMMs the generated wrapper calls through aten). It is attributed to aten ops when the
generated code lists them, when an enclosing op is an aten op, or (kernels replayed from a CUDA graph,
which run under no op) when the same kernel ran under an aten op elsewhere in the profile, typically
while the graph was captured (`source = capture`, confidence medium); to a source line when the generated
code lists the original lines, or when its op has a line of the user's code (the line that called the
compiled function, at least).

Only steady-state steps count when the profile has two or more complete steps: the first step holds the
compilation, whose autotuning launches thousands of benchmark kernels.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tenprof.analyses.summary import user_frame_of
from tenprof.importers.compiled_import import from_kernel_name
from tenprof.store.profile import Profile

REGION_MARKS = ("Torch-Compiled Region", "CompiledFxGraph", "CompiledFunction")


@dataclass(frozen=True)
class CompiledKernelRow:
    kernel: str
    calls: int
    time_ns: int
    aten_ops: str
    lines: str
    source: str
    confidence: str
    generated_file: str
    kind: str = ""  # pointwise, reduction, ... (Triton kernels)
    memory_ops: str = ""  # "2 loads, 1 store" as Inductor counted them
    launch: str = ""  # "grid 512, 4 warps, 0 B shared" (median launch)


@dataclass(frozen=True)
class CompiledReport:
    kernel_ns: int  # all kernel time
    compiled_ns: int  # kernel time in compiled code
    with_ops_ns: int  # of that, attributed to aten ops
    with_lines_ns: int  # of that, attributed to a source line
    rows: list[CompiledKernelRow]
    all_with_ops_ns: int = 0  # all kernels (compiled or eager) attributed to aten ops
    all_with_lines_ns: int = 0  # all kernels attributed to a source line

    @property
    def ops_share(self) -> float:
        return self.with_ops_ns / self.compiled_ns if self.compiled_ns else 0.0

    @property
    def lines_share(self) -> float:
        return self.with_lines_ns / self.compiled_ns if self.compiled_ns else 0.0


def compiled_report(profile: Profile) -> CompiledReport | None:
    described = {r["kernel"]: r for r in profile.table("compiled_kernels").to_pylist()}
    ops = profile.table("ops")
    names = ops.column("name").to_pylist()
    parent = ops.column("parent_op_id").to_numpy()
    frame = ops.column("frame_id").to_numpy()
    user = user_frame_of(profile)
    n = len(names)
    in_region = np.zeros(n, dtype=bool)
    under_aten = np.zeros(n, dtype=bool)
    aten_name = [""] * n  # the innermost aten op enclosing (or being) each op
    has_line = np.zeros(n, dtype=bool)
    for i in range(n):  # ops are numbered by start time: a parent comes before its children
        p = int(parent[i])
        own = str(names[i])
        in_region[i] = any(m in own for m in REGION_MARKS) or (p >= 0 and in_region[p])
        under_aten[i] = own.startswith("aten::") or (p >= 0 and under_aten[p])
        aten_name[i] = own if own.startswith("aten::") else (aten_name[p] if p >= 0 else "")
        f = int(frame[i])
        has_line[i] = (f >= 0 and user[f] >= 0) or (p >= 0 and has_line[p])
    k = profile.table("kernels")
    kernel_names = k.column("name").to_pylist()
    op_of = k.column("op_id").to_numpy()
    duration = k.column("duration_ns").to_numpy()
    captured: dict[str, str] = {}  # kernel name -> the aten op it ran under anywhere in the profile
    for name, op in zip(kernel_names, op_of.tolist(), strict=True):
        if op is not None and op >= 0 and aten_name[op]:
            captured.setdefault(name, aten_name[op])
    steady = _steady(profile, k.column("start_ns").to_numpy())
    compiled_ns = with_ops = with_lines = 0
    per_kernel: dict[str, list[int]] = {}
    timeline_op: dict[str, str] = {}
    replayed: set[str] = set()
    for name in set(kernel_names) - described.keys():  # profiles recorded without the generated code
        guess = from_kernel_name(name)
        if guess is not None:
            described[name] = {
                "aten_ops": ",".join(guess.aten_ops),
                "lines": "",
                "source": guess.source,
                "confidence": guess.confidence,
                "generated_file": "",
            }
    all_ops = all_lines = 0
    for name, op, d, keep in zip(kernel_names, op_of.tolist(), duration.tolist(), steady.tolist(), strict=True):
        if not keep:
            continue
        info = described.get(name)
        inside = op is not None and op >= 0 and bool(in_region[op])
        under = op is not None and op >= 0 and under_aten[op]
        known_ops = (info is not None and bool(info["aten_ops"])) or under or name in captured
        known_line = (info is not None and bool(info["lines"])) or (op is not None and op >= 0 and has_line[op])
        all_ops += d if known_ops else 0
        all_lines += d if known_line else 0
        if info is None and not inside:
            continue
        compiled_ns += d
        if known_ops:
            with_ops += d
        if info is None and not under and name in captured:
            replayed.add(name)
        if known_line:
            with_lines += d
        entry = per_kernel.setdefault(name, [0, 0])
        entry[0] += 1
        entry[1] += d
        if info is None and op is not None and op >= 0 and aten_name[op]:
            timeline_op.setdefault(name, aten_name[op])
    if not compiled_ns:
        return None
    rows = []
    launches = _launch_shapes(profile)
    for name, (calls, total) in sorted(per_kernel.items(), key=lambda kv: -kv[1][1]):
        info = described.get(name, {})
        if name in replayed:
            info = {"aten_ops": captured[name], "source": "capture", "confidence": "medium"}
        rows.append(
            CompiledKernelRow(
                kernel=name,
                calls=calls,
                time_ns=total,
                aten_ops=str(info.get("aten_ops", timeline_op.get(name, ""))),
                lines=str(info.get("lines", "")),
                source=str(info.get("source", "timeline (aten op)")),
                confidence=str(info.get("confidence", "high")),
                generated_file=str(info.get("generated_file", "")),
                kind=str(info.get("kind", "") or ""),
                memory_ops=_memory_ops(info),
                launch=launches.get(name, ""),
            )
        )
    kernel_ns = int(duration[steady].sum())
    return CompiledReport(
        kernel_ns, int(compiled_ns), int(with_ops), int(with_lines), rows, int(all_ops), int(all_lines)
    )


def _memory_ops(info: dict[str, object]) -> str:
    raw_loads, raw_stores = info.get("num_load"), info.get("num_store")
    loads = -1 if raw_loads is None else int(raw_loads)  # type: ignore[call-overload]
    stores = -1 if raw_stores is None else int(raw_stores)  # type: ignore[call-overload]
    if loads < 0 and stores < 0:
        return ""
    return f"{max(loads, 0)} load(s), {max(stores, 0)} store(s)"


def _launch_shapes(profile: Profile) -> dict[str, str]:
    """Kernel name -> its median launch: grid blocks, warps per block, shared memory."""
    k = profile.table("kernels")
    if k.num_rows == 0:
        return {}
    grid = (k.column("grid_x").to_numpy() * k.column("grid_y").to_numpy() * k.column("grid_z").to_numpy()).astype(float)
    threads = (k.column("block_x").to_numpy() * k.column("block_y").to_numpy() * k.column("block_z").to_numpy()).astype(
        float
    )
    shared = k.column("shared_memory_bytes").to_numpy().astype(float)
    unique, group = np.unique(np.asarray(k.column("name").to_pylist(), dtype=object), return_inverse=True)
    order = np.argsort(group, kind="stable")
    bounds = np.searchsorted(group[order], np.arange(len(unique) + 1))
    out: dict[str, str] = {}
    for g, name in enumerate(unique.tolist()):
        mask = order[bounds[g] : bounds[g + 1]]
        warps = float(np.median(threads[mask])) / 32
        smem = float(np.median(shared[mask]))
        out[name] = f"grid {np.median(grid[mask]):.0f}, {warps:g} warps" + (
            f", {smem:.0f} B shared" if smem >= 0 else ""
        )
    return out


def _steady(profile: Profile, starts: np.ndarray) -> np.ndarray:
    """Kernels inside complete steps after the first, when there are at least two; else all of them."""
    steps = profile.table("steps")
    if steps.num_rows == 0:
        return np.ones(len(starts), dtype=bool)
    complete = steps.column("complete").to_numpy(zero_copy_only=False)
    lo = steps.column("start_ns").to_numpy()[complete]
    hi = steps.column("end_ns").to_numpy()[complete]
    if len(lo) < 2:
        return np.ones(len(starts), dtype=bool)
    order = np.argsort(lo)
    lo, hi = lo[order][1:], hi[order][1:]
    slot = np.searchsorted(lo, starts, side="right") - 1
    inside: np.ndarray = (slot >= 0) & (starts < hi[np.maximum(slot, 0)])
    return inside
