"""What the profiler cost the program, and what the program does un-profiled (pure; no I/O).

A run of `tenprof run` with steps times a few of them with the capture off (`capture_on` false in the
steps table; see `tenprof.capture.overhead_plan`), so each profile says, measured:
- the un-profiled step time U (median of the steps run with the capture off) and the profiled one P
  (median of the recorded steady steps), both between tenprof's own clock reads at the boundaries, except
  that a timed step on the GPU is timed between the CUDA events tenprof recorded at its boundaries, as the
  GPU reached them (`gpu_period_ns`: the host's clock reads how fast the step queued its work);
  means instead where the recorded steps' mean and median differ by a quarter (steps of two kinds); U as
  timed is kept, and capped at P for the findings judged on it (off steps that took longer met the
  program's own variation, not a profiler that sped it up);
- whether the off steps were faster than the recorded ones beyond the steps' own variation, by the one
  rule of `analyses.compare.significance` (one-sided rank-sum test, p < 0.05): "overhead", "within noise", or
  "too few steps" where no outcome could be significant, or where every recorded step is a cold one;
- the profiler's share of each recorded step, (P - U) / P: CPU time that would not be there un-profiled;
- the GPU work per step B (kernels and copies, overlaps counted once; GPU time is not slowed by the
  profiler), and the GPU's busy share un-profiled: B / U where the capture's GPU activity went off with
  the rest in those steps (`meta.timeline.timed_steps_gpu` False, tenprof's runs now), else their own
  recorded kernels' busy time over U (older runs, which kept it on).
Where no step ran with the capture off (no steps, too few, `--overhead-steps 0`, or an imported trace),
the overhead is estimated and labelled so: for a trace torch.profiler recorded with ops alone, from its
ops and launches at the host's pace the trace itself shows (`profiler_cost`: an estimate that errs either
way); else (shapes or Python stacks recorded, tenprof's captures with Python lines, traces with too few
ops called from C++) from a fixed per-op cost model of the capture that recorded it (what it recorded is
visible in it: shapes, memory, Python stacks, tenprof's lines), a lower bound of the profiler's cost.
Without steps it is not measured, and the report says how to get it. A number not measured is None, never
0.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from tenprof.analyses.compare.significance import can_tell, rank_sum_test
from tenprof.analyses.timeline import profiler_cost
from tenprof.core.intervals import merged, take
from tenprof.store.profile import Profile

COLD_STEPS = 3  # steps 0-2 are compared with nothing: building, compiling, tuning

# Capture cost per recorded op, in ns, by what the capture recorded (kernel launches folded into it): the
# host time the capture adds to each op, which U = P - ops x cost takes back out of a host-bound step (a
# GPU-bound step is held at its GPU time, below). Measured where the host bounds the step, so that the
# step shows it: on an H100 (torch 2.11), the 16-layer MLP 3.5 to 5.2 us per op as (recorded step - step
# with collection off) / ops (benchmarks/toggle_probe.py, benchmarks/results/2026-11-26-h100-calibrate.txt;
# record=stack 3.5, all 5.0, ops 5.2), and torch.profiler traces of the host-bound corpus pairs against
# their un-profiled steps 4.4 to 9.5 us per op (docs/FINDINGS.md, 2026-11-28); tenprof's Python lines
# another 2.4 (MLP) to 10.5 us (GPT-2). GPT-2's 1.4 us per op, used here before 2026-11-28, was a GPU-bound
# loop's step growth, which hides the host's cost. The smallest host-bound costs are used: the estimate is a
# lower bound of the profiler's cost, and an upper bound of the un-profiled step time (a finding judged on
# it errs as the recorded timeline does, never the other way).
COST_PER_OP_NS = {"base": 3_500.0, "shapes": 25.0, "memory": 25.0, "stack": 0.0, "lines": 2_400.0}


@dataclass(frozen=True)
class Overhead:
    method: str  # measured | estimated | not measured
    note: str  # how it was measured or estimated, or why it was not and how to get it
    profiled_step_ns: float | None
    unprofiled_step_ns: float | None
    measured_steps: int  # steps run with the capture off (measured), 0 otherwise
    recorded_steps: int  # recorded steady steps the profiled time is the median of
    gpu_busy_per_step_ns: float | None  # GPU work per recorded step: not slowed by profiling
    unprofiled_gpu_busy_share: float | None
    # measured only: the un-profiled step as timed (unprofiled_step_ns is capped at the recorded step, for
    # the findings judged on it), and whether it tells the profiler's cost from the steps' own variation
    timed_unprofiled_step_ns: float | None = None
    verdict: str = ""  # overhead | within noise | too few steps ('' when estimated or not measured)
    verdict_note: str = ""  # the test behind the verdict, or why there are too few steps
    p_value: float | None = None  # of the rank-sum test (analyses.compare.significance), where there was one

    @property
    def ratio(self) -> float | None:
        if self.profiled_step_ns is None or not self.unprofiled_step_ns:
            return None
        return self.profiled_step_ns / self.unprofiled_step_ns

    @property
    def profiler_share(self) -> float | None:
        """The share of each recorded step's time that is the profiler's own (CPU) work."""
        if self.profiled_step_ns is None or self.unprofiled_step_ns is None or not self.profiled_step_ns:
            return None
        return max(0.0, 1.0 - self.unprofiled_step_ns / self.profiled_step_ns)

    @property
    def known(self) -> bool:
        return self.unprofiled_step_ns is not None

    @property
    def unprofiled_idle_per_step_ns(self) -> float | None:
        """The time a step leaves the GPU idle un-profiled: (1 - busy share) x the un-profiled step."""
        if self.unprofiled_gpu_busy_share is None or self.unprofiled_step_ns is None:
            return None
        return (1.0 - self.unprofiled_gpu_busy_share) * self.unprofiled_step_ns


def capture_on(profile: Profile) -> npt.NDArray[np.bool_]:
    """Per row of the steps table: whether ops and lines were recorded (profiles from before the column
    read null there: on)."""
    column = profile.table("steps").column("capture_on")
    return np.asarray(column.fill_null(True).to_numpy(zero_copy_only=False), dtype=bool)


def resumed_steps(profile: Profile, rows: npt.NDArray[np.bool_]) -> npt.NDArray[np.bool_]:
    """Per step of the rows `rows` keeps: whether the step before it ran with the capture off (so this one
    paid the capture's restart)."""
    on = capture_on(profile)
    before_off = np.zeros(len(on), dtype=bool)
    before_off[1:] = ~on[:-1]
    return before_off[rows]


def recorded_steps(profile: Profile) -> npt.NDArray[np.bool_]:
    """Per row of the steps table: complete and recorded (the steps every other analysis looks at)."""
    complete = profile.table("steps").column("complete").to_numpy(zero_copy_only=False)
    return np.asarray(complete, dtype=bool) & capture_on(profile)


def steps_marked(profile: Profile) -> bool:
    """Whether the script marked steps (tenprof.step(), a torch.profiler schedule). `tenprof run` of a
    script that never calls tenprof.step() records one incomplete step 0, the whole run: none marked."""
    steps = profile.table("steps")
    if steps.num_rows == 0:
        return False
    return not (steps.num_rows == 1 and not steps.column("complete").to_numpy(zero_copy_only=False)[0])


def kernel_launch_ns(profile: Profile) -> npt.NDArray[np.int64]:
    """When each kernel was launched (its API call's start), else its own start."""
    k = profile.table("kernels")
    launched = take(profile.column("api_calls", "start_ns"), k.column("api_call_id").to_numpy(), -1)
    return np.where(launched >= 0, launched, k.column("start_ns").to_numpy())


def in_unrecorded_steps(profile: Profile, times: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
    """Whether each CPU-side time falls in a step run with the capture off (its work has no op)."""
    return _in_chosen_steps(profile, ~capture_on(profile), times)


def _in_chosen_steps(
    profile: Profile, chosen: npt.NDArray[np.bool_], times: npt.NDArray[np.int64]
) -> npt.NDArray[np.bool_]:
    """Whether each time falls in one of the steps `chosen` (per row of the steps table)."""
    if not chosen.any() or len(times) == 0:
        return np.zeros(len(times), dtype=bool)
    steps = profile.table("steps")
    return inside(steps.column("start_ns").to_numpy()[chosen], steps.column("end_ns").to_numpy()[chosen], times)


def in_uncopied_steps(profile: Profile, times: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
    """Whether each CPU-side time falls in a step run without op records whose ops no recorded step could
    give (TENPROF_OPS=sampled, meta op_copy's `unmatched`: mostly the stretch after the last step mark)."""
    unmatched = (profile.meta.timeline.op_copy or {}).get("unmatched") or []
    if not unmatched or len(times) == 0:  # (the steps table not read)
        return np.zeros(len(times), dtype=bool)
    numbers = profile.table("steps").column("step").to_numpy()
    return _in_chosen_steps(profile, np.isin(numbers, np.asarray(unmatched, dtype=np.int64)), times)


I64 = npt.NDArray[np.int64]


def inside(lo: I64, hi: I64, times: I64) -> npt.NDArray[np.bool_]:
    """Whether each time falls in one of the windows [lo, hi) (steps: they do not overlap)."""
    order = np.argsort(lo, kind="stable")
    lo, hi = lo[order], hi[order]
    pos = np.searchsorted(lo, times, side="right") - 1
    return (pos >= 0) & (times < take(hi, pos, 0))


def steady_windows(profile: Profile) -> tuple[I64, I64]:
    """The recorded complete steps past the cold ones, as [start, end) windows (none where no step was
    marked or none is past them)."""
    steps = profile.table("steps")
    chosen = recorded_steps(profile) & (steps.column("step").to_numpy() >= COLD_STEPS)
    return steps.column("start_ns").to_numpy()[chosen], steps.column("end_ns").to_numpy()[chosen]


def _own_durations(profile: Profile, rows: npt.NDArray[np.bool_]) -> npt.NDArray[np.int64]:
    own = np.asarray(profile.table("steps").column("own_duration_ns").fill_null(-1).to_numpy(), dtype=np.int64)
    return own[rows & (own > 0)]


def _timed_durations(profile: Profile, rows: npt.NDArray[np.bool_]) -> tuple[npt.NDArray[np.int64], bool]:
    """The timed steps' times: each one's period between tenprof's CUDA events at its boundaries where it has
    one (the host's clock reads how fast a step queued its work: after the capture's stop drains the GPU, a
    loop the GPU bounds runs its host ahead; capture/timed_gpu_periods.py), else its own time on the host;
    and whether any was a GPU period."""
    steps = profile.table("steps")
    own = np.asarray(steps.column("own_duration_ns").fill_null(-1).to_numpy(), dtype=np.int64)
    gpu = np.asarray(steps.column("gpu_period_ns").fill_null(-1).to_numpy(), dtype=np.int64)
    took = np.where(gpu > 0, gpu, own)
    return took[rows & (took > 0)], bool((gpu[rows] > 0).any())


def _gpu_busy_per_step(profile: Profile, rows: npt.NDArray[np.bool_]) -> float | None:
    """GPU busy time (kernels, all streams, overlaps once) of the kernels launched in these steps, per step."""
    if not rows.any():
        return None
    steps = profile.table("steps")
    k = profile.table("kernels")
    lo, hi = steps.column("start_ns").to_numpy()[rows], steps.column("end_ns").to_numpy()[rows]
    launched = inside(lo, hi, kernel_launch_ns(profile))
    if not launched.any():
        return 0.0
    starts, ends = merged(k.column("start_ns").to_numpy()[launched], k.column("end_ns").to_numpy()[launched])
    return int((ends - starts).sum()) / int(rows.sum())


def _steady(profile: Profile, rows: npt.NDArray[np.bool_]) -> npt.NDArray[np.bool_]:
    """Rows past the cold steps, or all rows where that would leave none."""
    numbers = profile.table("steps").column("step").to_numpy()
    warm = rows & (numbers >= COLD_STEPS)
    return warm if warm.any() else rows


# the steps a run needs before tenprof run's default plan times one with the capture off (capture.overhead_plan,
# OverheadPlan().steps_to_time_one; this layer does not import the capture's, a test holds the two equal)
STEPS_TO_TIME_ONE = 10


def measure(profile: Profile) -> Overhead:
    steps = profile.table("steps")
    if steps.num_rows == 0:
        imported = profile.meta.source == "import"
        return Overhead(
            "not measured",
            "the trace has no steps: record it with a torch.profiler schedule and prof.step() per iteration for "
            "an estimate, or with tenprof run and tenprof.step() to measure it"
            if imported
            else "the run has no steps: mark each iteration with tenprof.step() and tenprof times a few with the "
            "capture off",
            None,
            None,
            0,
            0,
            None,
            None,
        )
    complete = np.asarray(steps.column("complete").to_numpy(zero_copy_only=False), dtype=bool)
    recorded = complete & capture_on(profile)
    on_rows = _steady(profile, recorded)
    off_rows = complete & ~capture_on(profile)
    profiled = _own_durations(profile, on_rows)
    unprofiled, on_gpu_clock = _timed_durations(profile, off_rows)
    busy = _gpu_busy_per_step(profile, on_rows)
    if len(unprofiled) and len(profiled):
        busy_off = _gpu_busy_per_step(profile, off_rows) if profile.meta.timeline.timed_steps_gpu is not False else None
        gpu_off = busy_off if busy_off is not None else busy or 0.0
        # A step cannot be shorter than its GPU work: where the host runs ahead of a busy queue, the GPU's
        # time is the step's.
        p = max(_typical(profiled, profiled), busy or 0.0)
        # Un-profiled no slower than recorded: off steps that took longer met the program's own variation
        # (or a slower kind of step), not a profiler that sped it up.
        timed = max(_typical(unprofiled, profiled), gpu_off)
        u = min(timed, p)
        share = gpu_off / u if profile.has_gpu and u else None
        spread = f"{_ms(unprofiled.min())} to {_ms(unprofiled.max())}"
        cold_only = not (on_rows & ~_cold(profile)).any()
        verdict, why, p_value = _verdict(unprofiled, profiled, cold_only)
        return Overhead(
            "measured",
            f"{len(unprofiled)} step(s) run with the capture off ({spread}"
            f"{', timed on the GPU between events at their boundaries' if on_gpu_clock else ''}) against "
            f"{len(profiled)} recorded",
            p,
            u,
            len(unprofiled),
            len(profiled),
            busy,
            min(share, 1.0) if share is not None else None,
            timed,
            verdict,
            why,
            p_value,
        )
    return _estimate(profile, on_rows, busy)


def _cold(profile: Profile) -> npt.NDArray[np.bool_]:
    return np.asarray(profile.table("steps").column("step").to_numpy() < COLD_STEPS, dtype=bool)


def _verdict(
    unprofiled: npt.NDArray[np.int64], profiled: npt.NDArray[np.int64], cold_only: bool
) -> tuple[str, str, float | None]:
    """Whether the steps run with the capture off were faster than the recorded ones beyond the steps' own
    variation (the one rule of analyses.compare.significance, one-sided: profiling only adds time)."""
    if cold_only:
        return (
            "too few steps",
            f"every recorded step is one of the first {COLD_STEPS} (start-up, compilation, tuning), which no step "
            "run with the capture off can be compared with; run more steps",
            None,
        )
    if not can_tell(len(unprofiled), len(profiled), "less"):
        return (
            "too few steps",
            f"{_steps(len(unprofiled))} run with the capture off against {_steps(len(profiled))} recorded (past the "
            f"first {COLD_STEPS}) cannot be told from the steps' own variation; run more steps",
            None,
        )
    test = rank_sum_test(unprofiled, profiled, "less")
    how = test.describe((len(unprofiled), len(profiled)))
    return ("overhead" if test.beyond_noise else "within noise"), how, test.p_value


def _steps(count: int) -> str:
    return f"{count} step{'s' if count != 1 else ''}"


def _typical(durations: npt.NDArray[np.int64], recorded: npt.NDArray[np.int64]) -> float:
    """A typical step of `durations`: the median, robust to an odd slow step; but where the recorded steps'
    mean is a quarter away from their median, the steps are of two kinds (every other one waits for its
    data, say) and no middle step stands for them: then the mean, for both sides alike."""
    mean, median = float(np.mean(recorded)), float(np.median(recorded))
    return float(np.mean(durations)) if abs(mean - median) > 0.25 * median else float(np.median(durations))


def _estimate(profile: Profile, rows: npt.NDArray[np.bool_], busy: float | None) -> Overhead:
    """U from P less the cost model's charge for the ops of a recorded step."""
    steps = profile.table("steps")
    durations = steps.column("duration_ns").to_numpy()[rows]
    why = (
        f"no step ran with the capture off (run with tenprof run and at least {STEPS_TO_TIME_ONE} steps to measure it)"
        if profile.meta.source != "import"
        else "an imported trace has no un-profiled steps"
    )
    if len(durations) == 0:
        return Overhead("not measured", why, None, None, 0, 0, busy, None)
    p = float(np.median(durations))
    ops = profile.table("ops")
    op_steps = ops.column("step").to_numpy()
    numbers = steps.column("step").to_numpy()[rows]
    ops_per_step = float(np.isin(op_steps, numbers).sum()) / len(numbers)
    recorded = _what_was_recorded(profile)
    what = ", ".join(["ops", *recorded])
    # The trace's own reading holds where the profiler recorded ops (and memory, which costs per allocation,
    # not per op), and, read with a share of the gap as the shape recording, input shapes and Python stacks
    # (profiler_cost). tenprof's own Python lines cost per op in its recorder, which no gap shows: a run with
    # them keeps the fixed model, as does a trace whose reading would charge the whole step.
    with_shapes = bool({"shapes", "stack"} & set(recorded))
    gap = profiler_cost.back_to_back_gap_ns(profile, numbers) if "lines" not in recorded else None
    cost, bound, how = 0.0, "", ""
    if gap is not None:
        in_steps = _in_chosen_steps(profile, rows, profile.column("api_calls", "start_ns"))
        launches = float((profiler_cost.launches(profile) & in_steps).sum()) / len(numbers)
        shapes_share = profiler_cost.SHAPES_SHARE if with_shapes else 0.0
        cost = profiler_cost.host_cost_ns(gap, ops_per_step, launches, shapes_share)
        how = (
            f"{ops_per_step:.0f} ops and {launches:.0f} launches per step recorded by this capture ({what}), each at "
            f"this host's pace at the profiler's callbacks (two ops called back to back from C++ {gap / 1e3:.2f} us "
            "apart, median"
            + (f"; {profiler_cost.SHAPES_SHARE:.0%} of it read as an op's shape recording)" if with_shapes else ")")
        )  # an estimate, not a bound (profiler_cost)
    if gap is None or cost >= p:
        unfit = (
            f" (the trace's own reading, two ops called back to back from C++ {gap / 1e3:.2f} us apart, charges "
            f"{_ms(cost)}, more than the step)"
            if gap is not None
            else ""
        )
        cost = ops_per_step * (COST_PER_OP_NS["base"] + sum(COST_PER_OP_NS[k] for k in recorded))
        how = (
            f"{ops_per_step:.0f} ops per step at the smallest cost per op measured for this capture ({what}) on an "
            f"H100{unfit}"
        )
        bound = ": at least this much of each step is the profiler's"
    if cost >= p:
        # A profiler's cost as large as the whole step contradicts itself: the ops also work. The fixed model's
        # costs per op are an H100 host's; another host, or ops cheaper to record, pays less (a CPU-only loop
        # of 120 small ops a step on the 2-core development machine, 2026-12-01: 326 us a step recorded
        # against 211 us un-profiled, 1.0 us an op where the model charges 5.9), so here it does not fit.
        return Overhead(
            "not measured",
            f"{why}; not estimated: {how} charges {_ms(cost)} a step, the whole {_ms(p)} step, so it does not fit "
            "this run",
            p,
            None,
            0,
            len(durations),
            busy,
            None,
        )
    u = max(p - cost, busy or 0.0, 0.0)
    p = max(p, busy or 0.0)
    share = (busy or 0.0) / u if profile.has_gpu and u else None
    return Overhead(
        "estimated",
        f"{why}; estimated from {how}{bound}",
        p,
        u,
        0,
        len(durations),
        busy,
        min(share, 1.0) if share is not None else None,
    )


def _ms(ns: float) -> str:
    return f"{ns / 1e6:.3g} ms"


def _what_was_recorded(profile: Profile) -> list[str]:
    """What the capture recorded besides ops: input shapes, memory, Python stacks (an imported trace says
    so in its top-level keys, kept at import), tenprof's Python lines."""
    keys = profile.meta.timeline.trace_recorded
    if keys is not None:
        named = {"record_shapes": "shapes", "profile_memory": "memory", "with_stack": "stack"}
        return [named[k] for k in keys if k in named]
    found = []
    shapes = profile.table("ops").column("input_shapes")
    if shapes.null_count < len(shapes) and any(s not in ("", "[]") for s in shapes.to_pylist()[:2000] if s):
        found.append("shapes")
    if profile.table("memory").num_rows:
        found.append("memory")
    if profile.meta.source == "import" and profile.table("frames").num_rows:
        found.append("stack")
    if profile.meta.timeline.lines:
        found.append("lines")
    return found
