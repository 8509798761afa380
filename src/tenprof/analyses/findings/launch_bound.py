"""launch-bound: the GPU waits on the CPU because each kernel is shorter than it takes to launch it.

Judged on the step decomposition (analyses.timeline.step_time) too: the host's time while the GPU idles must be
mostly op dispatch (`launch_bound.min_dispatch_share`), and dispatch the largest of its named causes. A
host that spends the GPU's idle time loading data, in the allocator, in synchronizations or compiling
has another finding, and fewer launches would not help it."""

from __future__ import annotations

import numpy as np

from tenprof.analyses.findings.context import Context, per_step
from tenprof.analyses.findings.model import Finding
from tenprof.analyses.kernels.compiled import REGION_MARKS
from tenprof.analyses.op_kinds import GRAPH_LAUNCHES
from tenprof.analyses.timeline.host import host_lines, main_thread, sampled
from tenprof.core.intervals import coverage, uncovered
from tenprof.core.quantities import duration


def check(ctx: Context) -> list[Finding]:
    k = ctx.profile.table("kernels")
    if k.num_rows == 0:
        return []
    inside = ctx.kernels_in_steps
    if not inside.any():
        return []
    dur = k.column("duration_ns").to_numpy()[inside]
    starts, ends = ctx.gpu_intervals
    lo, hi = ctx.gpu_window
    window = hi - lo
    busy = int(coverage(starts, ends, np.array([lo]), np.array([hi]))[0])
    busy_share = busy / window if window else 1.0
    median_us = float(np.median(dur)) / 1e3
    # Judged on the program, not on the profiler: the GPU's busy share un-profiled where it was measured
    # (or estimated), and the idle time it would have, not the idle the profiler's CPU cost added.
    o = ctx.overhead
    judged = o.unprofiled_gpu_busy_share if o.unprofiled_gpu_busy_share is not None else busy_share
    if judged >= ctx.t.launch_bound_max_gpu_busy or median_us >= ctx.t.launch_bound_max_median_kernel_us:
        return []
    if per_step(len(dur), ctx) < ctx.t.launch_bound_min_kernels_per_step or not _dispatch_leads(ctx):
        return []
    api = ctx.profile.table("api_calls")
    launches = ctx.profile.strings("api_calls", "name").where(lambda n: "Launch" in n)
    launches &= ctx.in_steps(api.column("start_ns").to_numpy())
    launch_cpu_us = float(api.column("duration_ns").to_numpy()[launches].mean()) / 1e3 if launches.any() else 0.0
    ops = ctx.profile.table("ops")
    op_in = ctx.in_steps(ops.column("start_ns").to_numpy())
    cpu_in_ops = int(ops.column("self_duration_ns").to_numpy()[op_in].sum())
    kernels_per_step = per_step(len(dur), ctx)
    idle = window - busy
    k_ops = k.column("op_id").to_numpy()[inside]
    idle_per_step = o.unprofiled_idle_per_step_ns
    if idle_per_step is not None and o.unprofiled_step_ns is not None:
        cost = int(idle_per_step * ctx.step_count)
        basis = (
            f"un-profiled ({o.method}) a step takes {duration(int(o.unprofiled_step_ns))} and the GPU is busy "
            f"{100 * judged:.0f}% of it; as recorded {100 * busy_share:.0f}% of {duration(window)} over "
            f"{ctx.step_count} step(s), the difference being the profiler's own CPU time"
        )
    else:
        cost = int(idle)
        basis = (
            f"GPU busy {duration(busy)} of the {duration(window)} from the first to the last kernel of "
            f"{ctx.step_count} step(s), as recorded; the profiler's overhead is unknown ({o.note}), so "
            "un-profiled the GPU is busier than this"
        )
    outside = _python_outside_ops(ctx, per_step(cpu_in_ops, ctx))
    return [
        Finding(
            id="launch-bound",
            title=f"Launch-bound: the GPU is busy {100 * judged:.0f}% of each step; "
            f"{kernels_per_step:.0f} kernels per step, median {median_us:.1f} us",
            cost_ns=cost,
            seen=[
                basis,
                f"{kernels_per_step:.0f} kernels per step; median {median_us:.1f} us, "
                f"{100 * float((dur < 10_000).mean()):.0f}% under 10 us",
                f"a kernel launch costs {launch_cpu_us:.1f} us of CPU; CPU time in aten ops "
                f"{duration(per_step(cpu_in_ops, ctx))} per step vs GPU {duration(per_step(int(dur.sum()), ctx))}",
                *outside[:1],
            ],
            where=list(dict.fromkeys([*outside[1:], *ctx.where(k_ops)]))[:3],
            why="Each tiny kernel finishes before the CPU has launched the next one, so the GPU idles between "
            "them; a faster GPU would not make this step faster.",
            fix=advice(ctx),
            numbers={
                "gpu_busy_share": judged,
                "recorded_gpu_busy_share": busy_share,
                "kernels_per_step": kernels_per_step,
                "median_kernel_us": median_us,
                "launch_cpu_us": launch_cpu_us,
                "idle_ns": float(cost),
            },
        )
    ]


_OTHER_HOST_CAUSES = ("queued", "sync", "allocator", "cuda_api", "data_loading", "compile")


def _dispatch_leads(ctx: Context) -> bool:
    """Whether the GPU's idle time is mostly the host dispatching ops: dispatch is at least the threshold's
    share of the idle time and more than any other named cause of it."""
    dispatch = ctx.part_ns("dispatch")
    idle = dispatch + ctx.part_ns("python") + sum(ctx.part_ns(p) for p in _OTHER_HOST_CAUSES)
    if not idle:
        return False
    return dispatch >= ctx.t.launch_bound_min_dispatch_share * idle and all(
        dispatch >= ctx.part_ns(p) for p in _OTHER_HOST_CAUSES
    )


def _python_outside_ops(ctx: Context, cpu_in_ops_per_step: float) -> list[str]:
    """From the host sampler: the main thread's time per step in Python outside torch ops, when it is at
    least a tenth of the host's time in ops (then part of what keeps the GPU waiting is the script's own
    Python, not launching), as an evidence line and its top lines; [] otherwise or without samples."""
    if not sampled(ctx.profile):
        return []
    # outside the top-level ops, as the step decomposition's dispatch part has them: a compiled region's
    # generated code launches its kernels in no aten op, yet inside the region's own op
    lo, hi = uncovered((ctx.step_start, ctx.step_end), ctx.host_causes["dispatch"])
    found = [
        h
        for h in host_lines(ctx.profile, lo, hi, main_thread(ctx.profile))
        if not h.in_torch_op and h.line != "(no line of yours)"
    ]
    outside = per_step(sum(h.ns for h in found), ctx)
    if not found or outside < 0.1 * cpu_in_ops_per_step:
        return []
    tops = ", ".join(f"{h.function}() at {h.line} {duration(per_step(h.ns, ctx))}" for h in found[:3])
    return [
        f"the host also spends {duration(outside)} per step in Python outside torch ops (sampled): {tops}",
        *(h.line for h in found[:2]),
    ]


# a recording whose steps capture CUDA graphs: the launches captured run only when a graph is replayed
CAPTURING = (
    "The steps capture CUDA graphs: captured launches run only when the graphs are replayed, so the GPU idles "
    "while they are captured, once. Record the steps that replay them (after the capture, e.g. the server's "
    "requests) to judge the steady state; what is launched one kernel at a time there is what is left to capture."
)


def advice(ctx: Context) -> str:
    """The advice; a run that already replays CUDA graphs in its steps is not told to use them, nor one that
    captures them (`CAPTURING`), nor one that runs compiled regions to compile."""
    if ctx.graph_captures:
        return CAPTURING
    api = ctx.profile.table("api_calls")
    replays = ctx.profile.strings("api_calls", "name").where(lambda n: n in GRAPH_LAUNCHES) & ctx.in_steps(
        api.column("start_ns").to_numpy()
    )
    if replays.any():
        return (
            "The steps already replay CUDA graphs: what is still launched one kernel at a time is outside them. "
            "Capture more of the step into the graphs (compile a larger piece of the model, remove graph breaks), "
            "and give each kernel more work (a larger batch)."
        )
    ops = ctx.profile.table("ops")
    compiled = ctx.profile.strings("ops", "name").where(lambda n: n.startswith(REGION_MARKS)) & ctx.in_steps(
        ops.column("start_ns").to_numpy()
    )
    if compiled.any():  # torch.compile already fuses: what is left is launching the fused kernels
        return (
            "The steps already run torch.compile's code: replay it as CUDA graphs (mode='reduce-overhead') so its "
            "launches stop costing CPU time, compile what still runs eagerly, and give each kernel more work "
            "(a larger batch)."
        )
    return (
        "Give each kernel more work (a larger batch), fuse the small ops (torch.compile), or replay the step as "
        "a CUDA graph (torch.compile(mode='reduce-overhead') or torch.cuda.graphs) so launches stop costing CPU "
        "time."
    )
