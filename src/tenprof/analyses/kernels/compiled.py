"""Kernels of torch.compile'd code attributed to the aten ops they fuse and the lines of those ops.

A kernel counts as compiled when the generated code describes it (`compiled_kernels`) or when it ran
inside a compiled region (an enclosing record named `Torch-Compiled Region...` or `...CompiledFxGraph...`,
e.g. cuBLAS GEMMs the generated wrapper calls through aten). It is attributed to aten ops when the
generated code lists them, when an enclosing op is an aten op, or (kernels replayed from a CUDA graph,
which run under no op) when the same kernel ran under an aten op elsewhere in the profile, typically
while the graph was captured (`source = capture`, confidence medium); to a source line when the generated
code lists the original lines, or when its op has a line of the user's code (the line that called the
compiled function, at least). A library GEMM replayed from a CUDA graph whose capture the profile does
not hold (a `--schedule` that skipped it) gets the GEMM ops the generated wrappers call through
`extern_kernels` (`source = wrapper GEMM calls`, confidence low).

Only steady-state steps count when the profile has two or more complete steps: the first step holds the
compilation, whose autotuning launches thousands of benchmark kernels.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from tenprof.analyses.op_kinds import GEMM_KERNEL_WORDS
from tenprof.analyses.timeline.summary import OpLines, user_frame_of
from tenprof.core.inductor import from_kernel_name
from tenprof.core.units import si
from tenprof.store.profile import Profile
from tenprof.store.schema import Pass

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
    config: str = ""  # the Triton config autotuning chose: "4 warps, 1 stage, XBLOCK=1024"
    declared: str = ""  # what the kernel declares per launch and the rate its mean launch reached
    region: str = ""  # the compiled region it ran in: "frame 0/0, forward" or "backward"
    called_from: str = ""  # the user's line that called the compiled function (for backward: its forward's)


@dataclass(frozen=True)
class CompiledReport:
    kernel_ns: int  # all kernel time
    compiled_ns: int  # kernel time in compiled code
    with_ops_ns: int  # of that, attributed to aten ops
    with_lines_ns: int  # of that, attributed to a source line
    rows: list[CompiledKernelRow]
    all_with_ops_ns: int = 0  # all kernels (compiled or eager) attributed to aten ops
    all_with_lines_ns: int = 0  # all kernels attributed to a source line
    low_confidence_ns: int = 0  # compiled kernel time whose ops come from kernel names or the wrapper's GEMM calls
    has_generated_code: bool = False  # the profile keeps Inductor's generated code (tenprof run)
    generated_ns: int = 0  # of compiled_ns, the kernels Inductor generated (Triton); the rest are library
    # kernels (cuBLAS GEMMs, cuDNN, aten's own) that the compiled code calls
    # whether the run had Inductor write each kernel's source lines (`tenprof run --compiled-lines`; runs
    # before the option always did)
    origin_comments: bool = True

    @property
    def ops_share(self) -> float:
        return self.with_ops_ns / self.compiled_ns if self.compiled_ns else 0.0

    @property
    def lines_share(self) -> float:
        return self.with_lines_ns / self.compiled_ns if self.compiled_ns else 0.0


def compiled_report(profile: Profile) -> CompiledReport | None:
    """The compiled kernels of the profile's steady steps with what they are attributed to; None when no
    kernel time is in compiled code."""
    if not _may_hold_compiled_code(profile):  # an eager run: spares the walk over every op
        return None
    tree = _op_tree(profile)
    kernels = _kernels(profile)
    sources = _sources(profile, kernels, tree)
    tally = _tally(kernels, tree, sources)
    if not tally.compiled_ns:
        return None
    rows, low_confidence = _rows(profile, kernels, tree, sources, tally)
    return CompiledReport(
        kernel_ns=int(kernels.duration_ns[kernels.steady].sum()),
        compiled_ns=tally.compiled_ns,
        with_ops_ns=tally.with_ops_ns,
        with_lines_ns=tally.with_lines_ns,
        rows=rows,
        all_with_ops_ns=tally.all_ops_ns,
        all_with_lines_ns=tally.all_lines_ns,
        low_confidence_ns=low_confidence,
        has_generated_code=any(r.get("wrapper_file") for r in sources.described.values()),
        generated_ns=tally.generated_ns,
        origin_comments=profile.meta.options.get("compiled_lines", "true") == "true",
    )


@dataclass(frozen=True)
class _OpTree:
    """Per op (indexed by op_id), what it and the records enclosing it say."""

    in_region: np.ndarray  # bool: inside (or being) a compiled-region record
    under_aten: np.ndarray  # bool: inside (or being) an aten op
    aten_name: list[str]  # the innermost aten op enclosing (or being) each op
    has_line: np.ndarray  # bool: the op or one enclosing it has a line of the user's code
    frame_region: list[str]  # the enclosing `Torch-Compiled Region: F/C`'s "F/C"
    backward: np.ndarray  # bool: inside a compiled backward
    region_op: np.ndarray  # the outermost compiled-region record enclosing the op, -1 outside any


def in_compiled_region(profile: Profile) -> np.ndarray:
    """Per op: whether it runs inside a torch.compile'd region (an enclosing record says so)."""
    if not _has_region_records(profile):
        return np.zeros(profile.table("ops").num_rows, dtype=bool)
    return _op_tree(profile).in_region


def _has_region_records(profile: Profile) -> bool:
    """Whether any op record marks a compiled region (no op can be inside one otherwise)."""
    return any(mark in name for name in profile.strings("ops", "name").values for mark in REGION_MARKS)


def _may_hold_compiled_code(profile: Profile) -> bool:
    """False only where no kernel can count as compiled: no region records, no generated-kernel rows,
    and no kernel name that reads as generated (`_tally`'s two tests, checked without the op walk)."""
    if _has_region_records(profile) or profile.table("compiled_kernels").num_rows:
        return True
    return any(from_kernel_name(name) is not None for name in profile.strings("kernels", "name").values)


def _op_tree(profile: Profile) -> _OpTree:
    """Walk the `ops` table once, parents before children, inheriting each `_OpTree` field."""
    ops = profile.table("ops")
    names = [str(name) for name in ops.column("name").to_pylist()]
    parent = ops.column("parent_op_id").to_pylist()
    frame = ops.column("frame_id").to_pylist()
    user = user_frame_of(profile).tolist()
    n = len(names)
    # plain lists while walking (a numpy element read or write costs several times a list's), arrays at the
    # end; one slot more, the last, holds what an op without a parent inherits, so that index -1 reads it
    in_region = [False] * (n + 1)
    under_aten = [False] * (n + 1)
    aten_name = [""] * (n + 1)
    has_line = [False] * (n + 1)
    frame_region = [""] * (n + 1)
    backward = [False] * (n + 1)
    region_op = [-1] * (n + 1)
    # what an op's own name says, read once per distinct name (a profile repeats a few hundred names)
    said: dict[str, tuple[str | None, bool, bool, bool]] = {}
    for own in set(names):
        match = _REGION_ID.match(own)
        said[own] = (
            match.group(1) if match else None,  # the compiled region it names
            "CompiledFunctionBackward" in own,
            any(m in own for m in REGION_MARKS),
            own.startswith("aten::"),
        )
    for i in range(n):  # ops are numbered by start time: a parent comes before its children
        p = parent[i]  # -1 (no parent): the last slot
        own = names[i]
        region, is_backward, marked, is_aten = said[own]
        f = frame[i]
        frame_region[i] = region if region is not None else frame_region[p]
        backward[i] = is_backward or backward[p]
        region_op[i] = region_op[p] if region_op[p] >= 0 else (i if marked else -1)
        in_region[i] = marked or in_region[p]
        under_aten[i] = is_aten or under_aten[p]
        aten_name[i] = own if is_aten else aten_name[p]
        has_line[i] = (f >= 0 and user[f] >= 0) or has_line[p]
    return _OpTree(
        np.array(in_region[:n], dtype=bool),
        np.array(under_aten[:n], dtype=bool),
        aten_name[:n],
        np.array(has_line[:n], dtype=bool),
        frame_region[:n],
        np.array(backward[:n], dtype=bool),
        np.array(region_op[:n], dtype=np.int64),
    )


@dataclass(frozen=True)
class _Kernels:
    """The `kernels` table's columns the report reads, one entry per kernel launch."""

    names: list[str]
    op_id: np.ndarray
    duration_ns: np.ndarray
    steady: np.ndarray  # bool: launched in a steady-state step (`_steady`)


def _kernels(profile: Profile) -> _Kernels:
    """The profile's kernel launches, each marked steady or not."""
    k = profile.table("kernels")
    steady = _steady(profile, k.column("start_ns").to_numpy())
    return _Kernels(
        k.column("name").to_pylist(), k.column("op_id").to_numpy(), k.column("duration_ns").to_numpy(), steady
    )


@dataclass(frozen=True)
class _Sources:
    """What attributes a kernel besides its own op."""

    described: dict[str, dict[str, Any]]  # kernel name -> its `compiled_kernels` row, or a guess from its name
    captured: dict[str, str]  # kernel name -> the aten op it ran under anywhere in the profile
    extern: str  # the GEMM ops the generated wrappers call (`extern_gemm_ops`)


def _sources(profile: Profile, kernels: _Kernels, tree: _OpTree) -> _Sources:
    """The generated code's description of each kernel (for profiles recorded without it, what the kernel's
    name tells), the aten op each kernel name ran under (all launches, steady or not), and the wrappers'
    GEMM calls."""
    described: dict[str, dict[str, Any]] = {r["kernel"]: r for r in profile.table("compiled_kernels").to_pylist()}
    captured: dict[str, str] = {}
    for name, op in zip(kernels.names, kernels.op_id.tolist(), strict=True):
        if op is not None and op >= 0 and tree.aten_name[op]:
            captured.setdefault(name, tree.aten_name[op])
    for name in set(kernels.names) - described.keys():  # profiles recorded without the generated code
        guess = from_kernel_name(name)
        if guess is not None:
            described[name] = {
                "aten_ops": ",".join(guess.aten_ops),
                "lines": "",
                "source": guess.source,
                "confidence": guess.confidence,
                "generated_file": "",
            }
    return _Sources(described, captured, extern_gemm_ops(profile))


@dataclass(frozen=True)
class _Tally:
    """Steady kernel time, all of it and compiled, by what it is attributed to, and per compiled kernel."""

    compiled_ns: int  # kernel time in compiled code
    generated_ns: int  # of that, in kernels `_Sources.described` covers
    with_ops_ns: int  # of compiled_ns, attributed to aten ops
    with_lines_ns: int  # of compiled_ns, attributed to a source line
    all_ops_ns: int  # all kernels (compiled or eager) attributed to aten ops
    all_lines_ns: int  # all kernels attributed to a source line
    per_kernel: dict[str, list[int]]  # compiled kernel name -> [calls, time_ns]
    timeline_op: dict[str, str]  # undescribed compiled kernel -> the aten op enclosing its first launch
    replayed: set[str]  # undescribed kernels under no aten op, attributed to the op they ran under elsewhere
    by_wrapper: set[str]  # library GEMMs attributed to the wrappers' GEMM calls


def _tally(kernels: _Kernels, tree: _OpTree, sources: _Sources) -> _Tally:
    """Add up the steady kernel launches: a kernel is compiled when described or inside a compiled region."""
    described, captured, extern = sources.described, sources.captured, sources.extern
    compiled_ns = with_ops = with_lines = generated_ns = all_ops = all_lines = 0
    per_kernel: dict[str, list[int]] = {}
    timeline_op: dict[str, str] = {}
    replayed: set[str] = set()
    by_wrapper: set[str] = set()
    launches = zip(
        kernels.names, kernels.op_id.tolist(), kernels.duration_ns.tolist(), kernels.steady.tolist(), strict=True
    )
    for name, op, d, keep in launches:
        if not keep:
            continue
        info = described.get(name)
        inside = op is not None and op >= 0 and bool(tree.in_region[op])
        under = op is not None and op >= 0 and tree.under_aten[op]
        known_ops = (info is not None and bool(info["aten_ops"])) or under or name in captured
        if not known_ops and inside and extern and GEMM_KERNEL.search(name):
            # a library GEMM replayed from a CUDA graph whose capture was not recorded: the wrapper's
            # extern GEMM calls are the only GEMMs the compiled code makes
            known_ops = True
            by_wrapper.add(name)
        known_line = (info is not None and bool(info["lines"])) or (op is not None and op >= 0 and tree.has_line[op])
        all_ops += d if known_ops else 0
        all_lines += d if known_line else 0
        if info is None and not inside:
            continue
        compiled_ns += d
        if info is not None:
            generated_ns += d
        if known_ops:
            with_ops += d
        if info is None and not under and name in captured:
            replayed.add(name)
        if known_line:
            with_lines += d
        entry = per_kernel.setdefault(name, [0, 0])
        entry[0] += 1
        entry[1] += d
        if info is None and op is not None and op >= 0 and tree.aten_name[op]:
            timeline_op.setdefault(name, tree.aten_name[op])
    return _Tally(
        int(compiled_ns),
        int(generated_ns),
        int(with_ops),
        int(with_lines),
        int(all_ops),
        int(all_lines),
        per_kernel,
        timeline_op,
        replayed,
        by_wrapper,
    )


def _rows(
    profile: Profile, kernels: _Kernels, tree: _OpTree, sources: _Sources, tally: _Tally
) -> tuple[list[CompiledKernelRow], int]:
    """One row per compiled kernel, most time first, and the time of those attributed with low confidence."""
    launches = _launch_shapes(profile)
    where = _regions(profile, kernels, tree)
    rows = []
    low_confidence = 0
    for name, (calls, total) in sorted(tally.per_kernel.items(), key=lambda kv: -kv[1][1]):
        info = _attribution(name, sources, tally)
        if info.get("confidence") == "low":
            low_confidence += total
        rows.append(
            CompiledKernelRow(
                kernel=name,
                calls=calls,
                time_ns=total,
                aten_ops=str(info.get("aten_ops", tally.timeline_op.get(name, ""))),
                lines=str(info.get("lines", "")),
                source=str(info.get("source", "timeline (aten op)")),
                confidence=str(info.get("confidence", "high")),
                generated_file=str(info.get("generated_file", "")),
                kind=str(info.get("kind", "") or ""),
                memory_ops=_memory_ops(info),
                launch=launches.get(name, ""),
                config=_config(info),
                declared=_declared(info, total / max(calls, 1)),
                region=where.get(name, ("", ""))[0],
                called_from=where.get(name, ("", ""))[1],
            )
        )
    return rows, int(low_confidence)


def _attribution(name: str, sources: _Sources, tally: _Tally) -> dict[str, Any]:
    """What a compiled kernel's row says besides its times: its description, or where its ops came from
    when the generated code does not describe it (no key: the timeline's aten op, confidence high)."""
    if name in tally.replayed:
        return {"aten_ops": sources.captured[name], "source": "capture", "confidence": "medium"}
    if name in tally.by_wrapper:
        return {"aten_ops": sources.extern, "source": "wrapper GEMM calls", "confidence": "low"}
    if name not in sources.described and not tally.timeline_op.get(name):
        return {"source": "nothing known", "confidence": "none"}
    return sources.described.get(name, {})


_REGION_ID = re.compile(r"^Torch-Compiled Region: (\d+/\d+)")


def _regions(profile: Profile, kernels: _Kernels, tree: _OpTree) -> dict[str, tuple[str, str]]:
    """Kernel name -> (its compiled region, the user line that entered it), from its first steady launch
    inside one; a kernel replayed from a CUDA graph goes by the op around its cudaGraphLaunch."""
    api_op = profile.table("api_calls").column("op_id").to_numpy()
    k_api = profile.table("kernels").column("api_call_id").to_numpy()
    line_of = OpLines(profile)
    out: dict[str, tuple[str, str]] = {}
    for j, name in enumerate(kernels.names):
        if name in out or not kernels.steady[j]:
            continue
        op = int(kernels.op_id[j])
        if op < 0 and 0 <= k_api[j] < len(api_op):
            op = int(api_op[k_api[j]])
        if op < 0 or tree.region_op[op] < 0:
            continue
        label = "backward" if tree.backward[op] else "forward"
        if tree.frame_region[op]:
            label = f"frame {tree.frame_region[op]}, {label}"
        out[name] = (label, line_of(int(tree.region_op[op])))
    return out


GEMM_KERNEL = re.compile("|".join((*GEMM_KERNEL_WORDS, "splitKreduce")), re.IGNORECASE)


def extern_gemm_ops(profile: Profile) -> str:
    """The aten GEMM ops the kept generated wrappers call through `extern_kernels` (comma-separated), from
    `compiled_extern_calls`; profiles recorded before that table existed parse the timeline's kept wrappers."""
    if not profile.has_pass(Pass.TIMELINE):
        return ""
    if profile.table_path("compiled_extern_calls") is not None:
        calls = profile.table("compiled_extern_calls").column("aten_op").to_pylist()
    else:
        from tenprof.core.generated_code import extern_calls
        from tenprof.core.rawfiles import COMPILED_CODE_FILE
        from tenprof.store.compiled_code import read_compiled_code

        kept = read_compiled_code(profile.directory / Pass.TIMELINE / "raw" / COMPILED_CODE_FILE)
        calls = [op for row in kept for op in extern_calls(str(row.get("source", "")))]
    return ",".join(dict.fromkeys(op for op in calls if "mm" in op))


def _config(info: dict[str, object]) -> str:
    warps, stages, blocks = info.get("num_warps"), info.get("num_stages"), info.get("block_sizes")
    parts = [f"{warps} warps" if warps is not None else "", f"{stages} stage(s)" if stages is not None else ""]
    return ", ".join(p for p in [*parts, str(blocks or "")] if p)


def _declared(info: dict[str, object], mean_ns: float) -> str:
    """`declares 8.4 MB, 2.1 GFLOP per launch: 2.9 TB/s, 740 TFLOP/s at its mean duration`."""
    amounts, rates = [], []
    for key, unit, rate_unit in (("bytes", "B", "B/s"), ("flops", "FLOP", "FLOP/s")):
        value = info.get(key)
        if isinstance(value, (int, float)) and value == value and value > 0:
            amounts.append(si(float(value), unit))
            if mean_ns > 0:
                rates.append(si(float(value) / (mean_ns * 1e-9), rate_unit))
    if not amounts:
        return ""
    return f"declares {', '.join(amounts)} per launch" + (f": {', '.join(rates)} at its mean duration" if rates else "")


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
