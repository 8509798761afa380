"""torch-compile: compiled regions seen in the steps, Dynamo's cache-lookup cost per call, compilation
inside the steady-state steps (recompilations), graph breaks (several compiled frames per call), and
regions whose CPU cost exceeds the GPU work they launch (tiny graphs).

A region's GPU work includes kernels replayed from CUDA graphs it launches (mode="reduce-overhead"):
those kernels belong to no op, so they are joined through their launching cudaGraphLaunch. Steps in
which CUDA graphs were recorded (cudaGraphInstantiate) are left out of the CPU/GPU comparison: recording
is a one-off cost, like compiling."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from tenprof.analyses.findings.context import Context, host_cost, per_step
from tenprof.analyses.findings.model import Finding
from tenprof.analyses.op_kinds import GRAPH_INSTANTIATES, GRAPH_LAUNCHES
from tenprof.analyses.timeline.compilations import frame_compilations
from tenprof.core.quantities import count, duration

_REGION = re.compile(r"^Torch-Compiled Region: (\d+)/(\d+)$")


def check(ctx: Context) -> list[Finding]:
    """torch-compile: compilations inside the steady steps, or compiled regions whose CPU cost exceeds the
    GPU work they launch; at most one finding."""
    ctx = ctx.keeping_compiling()
    ops = ctx.profile.table("ops")
    start = ops.column("start_ns").to_numpy()
    duration_ns = ops.column("duration_ns").to_numpy()
    marked = ctx.profile.strings("ops", "name").where(
        lambda n: bool(_REGION.match(n)) or n in ("TorchDynamo Cache Lookup", "entire_frame_compile")
    )
    calls = _compile_calls(ctx.op_name, ctx.in_steps(start) & marked, duration_ns)
    if not calls.region_ops and not calls.compile_ops:
        return []
    cost = _region_cost(ctx, start, duration_ns, calls.region_ops)
    # Regions that compile or autotune are slow for that reason, not for being small.
    tiny = ctx.profile.has_gpu and len(cost.region_ops) > 0 and cost.cpu_ns > 2 * cost.gpu_ns and not calls.compile_ops
    if not (calls.compile_ns or calls.compile_ops or tiny):
        return []
    return [_finding(ctx, calls, cost, tiny)]


@dataclass(frozen=True)
class _CompileCalls:
    """The torch.compile records that start inside the analysed steps."""

    frames: dict[int, set[int]]  # compiled frame id -> the compile ids its regions ran
    region_ops: list[int]  # `Torch-Compiled Region: F/C` ops
    lookup_us: float  # mean duration of `TorchDynamo Cache Lookup`, 0 when there is none
    compile_ops: list[int]  # `entire_frame_compile` ops: one per compilation of a frame
    compile_ns: int  # their time


def _compile_calls(name_of: Callable[[int], str], inside: np.ndarray, duration_ns: np.ndarray) -> _CompileCalls:
    """Sort the ops that `inside` (bool per op) keeps by what they record; `duration_ns` is per op. Ops
    that are none of the three records may be left out of `inside` beforehand: they are skipped."""
    frames: dict[int, set[int]] = defaultdict(set)
    region_ops: list[int] = []
    lookups: list[int] = []
    compile_ns = 0
    compile_ops: list[int] = []
    for i in np.flatnonzero(inside).tolist():
        name = name_of(i)
        match = _REGION.match(name)
        if match:
            frames[int(match.group(1))].add(int(match.group(2)))
            region_ops.append(i)
        elif name == "TorchDynamo Cache Lookup":
            lookups.append(i)
        elif name == "entire_frame_compile":  # one per compilation of a frame
            compile_ns += int(duration_ns[i])
            compile_ops.append(i)
    lookup_us = float(duration_ns[lookups].mean()) / 1e3 if lookups else 0.0
    return _CompileCalls(frames, region_ops, lookup_us, compile_ops, compile_ns)


@dataclass(frozen=True)
class _RegionCost:
    """The outermost compiled regions of the steps that recorded no CUDA graph: CPU time against GPU work."""

    region_ops: np.ndarray  # int64 op ids of those regions
    recorded_cpu_ns: int  # their CPU time as recorded
    cpu_ns: int  # that time scaled to the un-profiled program
    gpu_ns: int  # the GPU time of the kernels launched inside them
    scale: float  # un-profiled over recorded step time, 1.0 when unknown or not smaller
    kept_steps: int  # the analysed steps less those that recorded CUDA graphs, at least 1
    replays_graphs: bool  # an outermost region (in any step) launches a CUDA graph


def _region_cost(ctx: Context, start: np.ndarray, duration_ns: np.ndarray, region_ops: list[int]) -> _RegionCost:
    """Cost the region ops (`_CompileCalls.region_ops`); `start` and `duration_ns` are per op."""
    api = ctx.profile.table("api_calls")
    api_op = api.column("op_id").to_numpy()
    # Regions nest (a graph break's resume function runs its region inside the caller's): only the
    # outermost count, with the GPU work of everything inside them, so no time is counted twice.
    parent = ctx.profile.column("ops", "parent_op_id")
    is_region = ctx.profile.strings("ops", "name").where(lambda n: bool(_REGION.match(n)))
    root = _outermost_region(is_region, parent)
    region_ops = [i for i in region_ops if root[i] == i]
    k_op = _kernel_ops(ctx, api_op)
    k_root = np.where(k_op >= 0, root[np.clip(k_op, 0, None)], -1)
    k_duration = ctx.profile.table("kernels").column("duration_ns").to_numpy()
    gpu_by_top = np.bincount(k_root[k_root >= 0], weights=k_duration[k_root >= 0], minlength=len(start))
    replays = ctx.profile.strings("api_calls", "name").where(lambda n: n in GRAPH_LAUNCHES)
    graph_launch = np.flatnonzero(replays & (api_op >= 0))
    replays_graphs = any(int(root[api_op[i]]) in set(region_ops) for i in graph_launch.tolist())
    recorded = _graph_recording_steps(ctx)
    if recorded:  # leave out the steps that recorded CUDA graphs
        step_of = ctx.step_index(start)
        region_ops = [i for i in region_ops if int(step_of[i]) not in recorded]
    region_arr = np.asarray(region_ops, dtype=np.int64)
    # A graph break's extra regions (entered from inside another: resume functions) cost their own
    # dispatch, their self time, which is graph-break's finding: the regions are judged small or not on
    # what they would cost without the breaks.
    nested = is_region & np.isin(root, region_arr) & (root != np.arange(len(root)))
    breaks_ns = int(ctx.profile.column("ops", "self_duration_ns")[nested].sum())
    recorded_cpu = max(int(duration_ns[region_arr].sum()) - breaks_ns, 0) if len(region_arr) else 0
    scale = _unprofiled_scale(ctx)
    return _RegionCost(
        region_ops=region_arr,
        recorded_cpu_ns=recorded_cpu,
        cpu_ns=int(recorded_cpu * scale),
        gpu_ns=int(gpu_by_top[region_arr].sum()) if len(region_arr) else 0,
        scale=scale,
        kept_steps=max(ctx.step_count - len(recorded), 1),
        replays_graphs=replays_graphs,
    )


def _kernel_ops(ctx: Context, api_op: np.ndarray) -> np.ndarray:
    """Each kernel's op (-1: none); `api_op` is the `api_calls` table's op_id column."""
    k = ctx.profile.table("kernels")
    k_op: np.ndarray = k.column("op_id").to_numpy()
    k_api = k.column("api_call_id").to_numpy()
    # a kernel replayed from a CUDA graph has no op: take the op around its cudaGraphLaunch
    if len(api_op):
        via_api = np.where((k_op < 0) & (k_api >= 0), api_op[np.clip(k_api, 0, len(api_op) - 1)], -1)
        k_op = np.where(k_op >= 0, k_op, via_api)
    return k_op


def _graph_recording_steps(ctx: Context) -> set[int]:
    """The analysed steps in which a CUDA graph was recorded (a cudaGraphInstantiate call started)."""
    api = ctx.profile.table("api_calls")
    instantiate = ctx.profile.strings("api_calls", "name").where(lambda n: n.startswith(GRAPH_INSTANTIATES))
    recording = api.column("start_ns").to_numpy()[instantiate].astype(float).tolist()
    if not recording:
        return set()
    return {int(x) for x in ctx.step_index(np.asarray(recording, dtype=np.int64)).tolist() if x >= 0}


def _unprofiled_scale(ctx: Context) -> float:
    """The factor from recorded CPU time to the program's un-profiled time, 1.0 when it is not known."""
    # The recorded CPU time is inflated by the capture; judged as the program runs un-profiled, scaled by
    # the un-profiled over the recorded step time (measured in the run, or estimated for imported traces).
    o = ctx.overhead
    if o.unprofiled_step_ns and o.profiled_step_ns and o.profiled_step_ns > o.unprofiled_step_ns:
        return o.unprofiled_step_ns / o.profiled_step_ns
    return 1.0


def _finding(ctx: Context, calls: _CompileCalls, cost: _RegionCost, tiny: bool) -> Finding:
    """The torch-compile finding: about compiling when any compilation ran in the steps, else about tiny
    regions (`tiny`: their CPU cost exceeds twice their GPU work)."""
    compile_ns, recompiles = calls.compile_ns, len(calls.compile_ops)
    compiling = bool(compile_ns or recompiles)
    why, fix = _advice(compiling, cost.replays_graphs)
    return Finding(
        id="torch-compile",
        title=(
            f"torch.compile compiled {recompiles} time(s) inside the steady steps ({duration(compile_ns)})"
            if compiling
            else f"Compiled regions cost {duration(cost.cpu_ns // cost.kept_steps)} CPU per step for "
            f"{duration(cost.gpu_ns // cost.kept_steps)} of GPU work"
        ),
        cost_ns=int(compile_ns + (max(cost.cpu_ns - cost.gpu_ns, 0) if tiny else 0)),
        seen=_seen(ctx, calls, cost),
        where=ctx.where(np.asarray(calls.compile_ops, dtype=np.int64) if calls.compile_ops else cost.region_ops),
        why=why,
        fix=fix,
        numbers={
            "recompiles": float(recompiles),
            "compile_ns": float(compile_ns),
            "lookup_us": calls.lookup_us,
            "region_cpu_ns": float(cost.cpu_ns),
            "recorded_region_cpu_ns": float(cost.recorded_cpu_ns),
            "region_gpu_ns": float(cost.gpu_ns),
            "frames": float(len(calls.frames)),
            "replays_cuda_graphs": float(cost.replays_graphs),
        },
    )


def _seen(ctx: Context, calls: _CompileCalls, cost: _RegionCost) -> list[str]:
    """The finding's `seen` lines: frames and region calls, compilations, region CPU against GPU time."""
    frames_per_step = len(cost.region_ops) / cost.kept_steps
    seen = [
        f"{len(calls.frames)} compiled frame(s), {count(frames_per_step)} compiled-region calls per step; "
        f"Dynamo cache lookup {calls.lookup_us:.1f} us per call",
    ]
    if calls.compile_ns or calls.compile_ops:
        seen.append(
            f"{len(calls.compile_ops)} compilation(s) inside the steady steps, {duration(calls.compile_ns)} in all"
        )
    if len(cost.region_ops):
        seen.append(
            f"compiled regions: {duration(cost.cpu_ns)} on the CPU launching {duration(cost.gpu_ns)} of GPU work"
        )
        if cost.scale < 1.0:
            seen.append(
                f"CPU time scaled to the un-profiled program (x{cost.scale:.2f}, {ctx.overhead.method}): recorded "
                f"{duration(cost.recorded_cpu_ns)}"
            )
    if len(calls.frames) > 1:
        seen.append(f"frames {sorted(calls.frames)} ran: several compiled frames usually mean graph breaks")
    return seen


def _advice(compiling: bool, replays_graphs: bool) -> tuple[str, str]:
    """The finding's why and fix: for compiling in the loop, else for tiny regions (with CUDA graphs or not)."""
    if compiling:
        return (
            "Compiling inside the loop stalls every step it happens in, and a recompilation means a guard failed "
            "(a new shape, dtype or Python value).",
            "Keep shapes and Python values that reach the compiled function stable, mark varying dimensions "
            "dynamic (torch._dynamo.mark_dynamic or dynamic=True), and warm up before the timed loop; "
            "TORCH_LOGS=recompiles names the failing guard.",
        )
    why = (
        "The compiled region costs more CPU time (guards, cache lookup, launch) than the GPU work it runs; "
        "for graphs this small, eager or CUDA graphs are faster."
    )
    if replays_graphs:
        return why, (
            "The regions already replay CUDA graphs: what remains is guards, the wrapper and copies into the "
            "graph's static inputs; compile a larger piece of the model so fewer regions run per step, and "
            "check with TORCH_LOGS=cudagraphs that graphs are not re-recorded."
        )
    return why, (
        "Compile a larger piece of the model, or use mode='reduce-overhead' (CUDA graphs) so the CPU "
        "cost is paid once per step, not per region."
    )


_RESUME = re.compile(r"^torch_dynamo_resume_in_(.+)_at_(\d+)$")


def graph_breaks(ctx: Context) -> list[Finding]:
    """graph-break: Dynamo split a compiled function. The code after the break runs as a resume function
    (named torch_dynamo_resume_in_<function>_at_<line>, which names the break) whose compiled region is
    entered from inside the first one, so each call pays a second region's dispatch. A trace without
    Python stacks (torch.profiler without with_stack) has no resume functions to name: the regions entered
    from inside another still show the break, without its line."""
    ctx = ctx.keeping_compiling()
    ops = ctx.profile.table("ops")
    frames = ctx.profile.table("frames")
    breaks = sorted(
        {
            f"{m.group(1)} at {file}:{m.group(2)}"
            for fn, file in zip(frames.column("function").to_pylist(), frames.column("file").to_pylist(), strict=True)
            if (m := _RESUME.match(fn))
        }
    )
    is_region = ctx.profile.strings("ops", "name").where(lambda n: bool(_REGION.match(n)))
    has_stacks = frames.num_rows > 0
    if (has_stacks and not breaks) or not is_region.any():  # no resume function, or no compiled code
        return []
    inside = ctx.in_steps(ops.column("start_ns").to_numpy())
    parent = ctx.profile.column("ops", "parent_op_id")
    nested = np.flatnonzero(inside & is_region & _has_region_ancestor(is_region, parent))
    if len(nested) == 0:
        return []
    if not breaks:  # no Python stacks: the nested regions' names stand for the breaks
        names = sorted({ctx.op_name(int(i)) for i in nested[:1000]})
        breaks = [f"{n} (entered from inside another region; record Python stacks for the line)" for n in names]
    # What a break costs is the extra region's own dispatch (guards, the wrapper, the Python in between),
    # its self time: the ops inside it would run anyway, in one graph or two. That is host time, scaled to
    # the un-profiled program; it shortens the step as far as the GPU idles (a GPU-bound loop hides it).
    recorded = int(ops.column("self_duration_ns").to_numpy()[nested].sum())
    host = int(recorded * _unprofiled_scale(ctx))
    cost = host_cost(ctx, 0, host)
    return [
        Finding(
            id="graph-break",
            title=f"torch.compile graph break: {count(per_step(len(nested), ctx))} extra compiled region(s) per step",
            cost_ns=cost,
            seen=[f"break in {b}" for b in breaks[:2]]
            + [f"{len(nested)} regions entered from inside another, {duration(host)} of CPU in their own dispatch"]
            + (
                [f"the GPU idles {duration(cost)} of the steps un-profiled: the break costs at most that"]
                if cost < host
                else []
            ),
            where=[b.split(" at ", 1)[1] for b in breaks[:3]] if has_stacks else ctx.where(nested),
            why="Dynamo could not trace through this line, so the function runs as two (or more) graphs with "
            "Python in between: more dispatch per call and no fusion across the break.",
            fix="Make the line traceable (no print, .item(), data-dependent Python control flow or unsupported "
            "calls inside the compiled function), or move it out; TORCH_LOGS=graph_breaks explains each break.",
            numbers={
                "breaks": float(len(breaks)),
                "nested_regions": float(len(nested)),
                "dispatch_ns": float(host),
                "cost_ns": float(cost),
            },
        )
    ]


def _outermost_region(is_region: np.ndarray, parent: np.ndarray) -> np.ndarray:
    """For each op, the outermost compiled region it is in (or is), -1 outside any (parents come first)."""
    out = np.full(len(parent), -1, dtype=np.int64)
    for i in range(len(parent)):
        p = int(parent[i])
        out[i] = out[p] if p >= 0 and out[p] >= 0 else (i if is_region[i] else -1)
    return out


def _has_region_ancestor(is_region: np.ndarray, parent: np.ndarray) -> np.ndarray:
    """For each op, whether one of its ancestors is a compiled region (ops are numbered parents first)."""
    out = np.zeros(len(parent), dtype=bool)
    for i in range(len(parent)):
        p = int(parent[i])
        out[i] = p >= 0 and (bool(is_region[p]) or bool(out[p]))
    return out


def _compile_in_one_pass(ctx: Context, compile_ns: int, compilations: int, ops: np.ndarray) -> list[Finding]:
    """A recording judged as one pass (no steps, no loop) has no steady step to weigh the compilation against:
    there it is a cost of that pass, as its first uses are (cold_start), where the host's compiling (the step
    decomposition's `compile` part) holds `cold_start_min_pass_share` of it; charged from the GPU's idle time
    before idle-gaps (`findings.causes`). A public trace of a convolution's first call through torch.compile on an
    A10G (959 ms compiling, 543 ms of it in the pass) led with idle-gaps once its "iterations" were no longer
    read as a loop."""
    window = int(ctx.step_end[0] - ctx.step_start[0])
    in_pass = ctx.part_ns("compile")
    if window <= 0 or in_pass < ctx.t.cold_start_min_pass_share * window:
        return []
    return [
        Finding(
            id="torch-compile-time",
            title=f"torch.compile compiled for {duration(in_pass)} of the recorded pass "
            f"({100 * in_pass / window:.0f}%)",
            cost_ns=in_pass,
            seen=[
                f"{compilations} compilation(s), {duration(compile_ns)} in all; {duration(in_pass)} of it in the "
                f"{duration(window)} judged as one pass (no steps marked, no loop found), with the GPU idle",
            ],
            where=ctx.where(ops),
            why="Compilation is paid on the first call of each compiled function (and again on each recompile); a "
            "recording of that call measures the compiler, not the compiled code.",
            fix="Record a second, warm call (a torch.profiler schedule with warmup=1, or `tenprof run` with "
            "tenprof.step() per call); if the first call's latency matters, keep Inductor's caches between runs "
            "(TORCHINDUCTOR_CACHE_DIR, torch.compiler.save_cache_artifacts) or compile ahead of time.",
            numbers={"compile_ns": float(compile_ns), "compile_in_pass_ns": float(in_pass), "window_ns": float(window)},
        )
    ]


def compile_time(ctx: Context) -> list[Finding]:
    """torch-compile-time: the time torch.compile spent compiling (`timeline.compilations`, wherever it
    falls) against the steady step it produced: how many steps the compilation is worth. A one-off cost;
    reported when compiling took longer than the steady steps recorded (then the run was mostly compile)."""
    found = frame_compilations(ctx.profile)
    compiles = found.ops[found.ops >= 0]
    if not len(found.start) or not ctx.step_count:
        return []
    compile_ns = int((found.end - found.start).sum())
    if ctx.all_step_numbers[0] < 0:
        return _compile_in_one_pass(ctx, compile_ns, len(found.start), compiles)
    step_ns = float(np.median(ctx.step_end - ctx.step_start))
    steady_ns = int((ctx.step_end - ctx.step_start).sum())
    if step_ns <= 0 or compile_ns <= steady_ns:
        return []
    worth = compile_ns / step_ns
    return [
        Finding(
            id="torch-compile-time",
            title=f"torch.compile spent {duration(compile_ns)} compiling, {worth:.0f} steady steps' worth",
            cost_ns=compile_ns,
            seen=[
                f"{len(found.start)} compilation(s), {duration(compile_ns)} in all",
                f"steady step (median of the {ctx.step_count} analysed): {duration(int(step_ns))}; "
                f"the recorded steady steps took {duration(steady_ns)} in all",
            ],
            where=ctx.where(compiles),
            why="Compilation is paid before the compiled code runs; a run shorter than a few hundred steps spends "
            "most of its time compiling, and a benchmark that includes it measures the compiler.",
            fix="Profile and benchmark after warm-up (`tenprof report --steps 2:`); for short jobs compile less "
            "(a smaller region, mode='default' instead of max-autotune) or keep Inductor's caches between runs "
            "(TORCHINDUCTOR_CACHE_DIR, torch.compiler.save_cache_artifacts).",
            numbers={"compile_ns": float(compile_ns), "steady_step_ns": step_ns, "steps_worth": worth},
            once=True,
        )
    ]
