"""Findings: the trace-reading expertise, as pure checks over a profile, ranked by the time they cost.

Each check lives in its own module and has the signature `check(ctx: Context) -> list[Finding]`.
Thresholds are named (`<check>.<name>`), documented in `thresholds.py`, and overridable from the
command line (`tenprof report --threshold sync.min_per_step=2`).
"""

from __future__ import annotations

from tenprof.analyses.findings.causes import one_cause_one_finding
from tenprof.analyses.findings.context import Context
from tenprof.analyses.findings.memory_growth import iterations_run_backward
from tenprof.analyses.findings.model import Finding
from tenprof.analyses.findings.thresholds import Thresholds
from tenprof.analyses.timeline.op_threads import host_ops_recorded
from tenprof.store.profile import Profile


def find_all(profile: Profile, thresholds: Thresholds | None = None, ctx: Context | None = None) -> list[Finding]:
    """Every finding the profile supports, most costly first (judged in `ctx` when given: see `judging`)."""
    from tenprof.analyses.findings import (
        allocator,
        clocks,
        cold_start,
        compiled,
        copies,
        data_loading,
        exposed_communication,
        fragmentation,
        grad_sync,
        hardware,
        idle,
        kernel_names,
        launch_bound,
        memory_growth,
        out_of_memory,
        slow_steps,
        speed_of_light,
        strided_reads,
        syncs,
        transfers,
        variance,
    )

    ctx = ctx or judging(profile, thresholds)
    found: list[Finding] = []
    for module in (
        out_of_memory,
        memory_growth,
        fragmentation,
        data_loading,
        allocator,
        launch_bound,
        idle,
        syncs,
        grad_sync,
        exposed_communication,
        transfers,
        copies,
        cold_start,
        slow_steps,
        variance,
        compiled,
        hardware,
        speed_of_light,
        clocks,
        kernel_names,
        strided_reads,
    ):
        found.extend(module.check(ctx))
    found.extend(compiled.graph_breaks(ctx))
    found.extend(compiled.compile_time(ctx))
    found = one_cause_one_finding(found, ctx)
    lead = leading_one_offs(found, ctx)
    found.sort(key=lambda f: (not f.urgent, f.once and f.id not in lead, -f.cost_ns, f.id))
    return found


# Where no steps were marked and a one-off inside the recording costs this many times the inferred iterations'
# own time, it ranks by its cost with the costs paid every step. A stall (slow-step): one particle-transformer
# forward pass on an A100 (a public trace, no steps, no stacks), its layers read as six iterations, spent 626 ms
# in the first convolution's launch, a stall of its second "iteration", and led with a kernel's 7.2 ms below its
# speed of light. Compilation (torch-compile-time): a public trace of a compiled ResNet-18's first call on an
# RTX 4090 D (1.42 s compiling, three "iterations" of 64 us judged) led with its compiled regions' CPU cost
# charged 62 us. The first step's cold start stays after them: a loop's start-up is paid once however long
# it runs (five public traces of loops would have led with a 1.2-15.6 s start-up).
STALL_LEADS = 10.0
DWARFING_ONE_OFFS = ("slow-step", "torch-compile-time")


def leading_one_offs(found: list[Finding], ctx: Context) -> frozenset[str]:
    """The one-offs (DWARFING_ONE_OFFS) that rank with the costs paid every step: none where steps were marked
    (the user chose a steady loop to record), else each that dwarfs the steps judged."""
    if ctx.inferred is None:
        return frozenset()
    return frozenset(
        kind
        for kind in DWARFING_ONE_OFFS
        if sum(f.cost_ns for f in found if f.once and f.id == kind) >= STALL_LEADS * ctx.analysed_ns
    )


def judging(profile: Profile, thresholds: Thresholds | None = None) -> Context:
    """The window the findings judge (the steady steps) and what every check shares: made once per report
    and handed to `find_all` and `not_judged`, as building it reads and scans the largest tables."""
    return Context(profile, thresholds or Thresholds())


def not_judged(profile: Profile, ctx: Context | None = None) -> list[str]:
    """What the findings could not judge with this profile, and why (an imported trace may lack a lot)."""
    ctx = ctx or judging(profile)
    notes = []
    if not profile.has_gpu:
        notes.append("no GPU activity was recorded, so none of the GPU findings could be judged")
    if ctx.compiling_steps:
        notes.append(
            f"{ctx.compiling_steps} step(s) in which torch.compile compiled or CUDA graphs were recorded were left "
            "to the torch-compile check and kept out of the others: one-offs, not the steady state"
        )
    complete = int(profile.table("steps").column("complete").to_numpy(zero_copy_only=False).sum())
    if 0 < complete < 2:
        notes.append(
            "only one complete step: start-up (building the model, first launches) is judged as if it "
            "were steady state; mark steps with tenprof.step()"
        )
    if ctx.slow.any():
        notes.append(
            f"{int(ctx.slow.sum())} step(s) far slower than the others were left to the slow-step check and kept "
            "out of the others"
        )
    if ctx.inferred is not None:
        notes.append(
            f"no steps were marked: {len(ctx.inferred.starts)} iterations of the loop were inferred from its "
            f"repeated calls (each starting at {ctx.inferred.marker}; {ctx.inferred.keys} call(s) once per "
            "iteration); mark steps with tenprof.step() or a torch.profiler schedule to be sure"
        )
    if ctx.inferred is not None and profile.table("memory").num_rows and not iterations_run_backward(ctx):
        notes.append(
            "memory growth: the inferred iterations do not each run a backward pass and may be the layers of "
            "one pass, whose kept activations are no leak; mark steps to have it judged"
        )
    if ctx.step_numbers[0] < 0:
        notes.append(
            "no steps were marked (tenprof.step() or a torch.profiler schedule): everything was judged "
            "as one step, and cold start only by its first uses (slow first calls, module loads)"
        )
    if ctx.graph_captures:
        notes.append(
            f"the analysed steps capture CUDA graphs ({ctx.graph_captures} captures): the GPU idles while launches "
            "are captured, a one-off the findings judge with the rest; record the steps that replay the graphs "
            "apart to judge the steady state"
        )
    ops = profile.table("ops")
    if profile.table("kernels").num_rows and not host_ops_recorded(profile):
        notes.append(
            "the trace holds no CPU ops (recorded without ProfilerActivity.CPU): what the host did between its CUDA "
            "calls is unknown, so data loading, launch-bound and the host's Python could not be told apart"
        )
    if ops.num_rows and (profile.column("ops", "frame_id") < 0).all():
        notes.append(
            "the profile has no Python call paths (a trace recorded without tenprof and without "
            "with_stack), so findings cannot name your lines"
        )
    if ops.num_rows and profile.strings("ops", "input_shapes").values in ([], [""]):
        notes.append(
            "no input shapes were recorded (record_shapes off), so copy sizes could not be estimated, nor whether "
            "one kernel's launches within a step are the same work (variance is judged from step to step only)"
        )
    return notes


__all__ = ["Finding", "Thresholds", "find_all", "not_judged"]
