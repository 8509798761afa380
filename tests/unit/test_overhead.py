"""tenprof measures its own overhead: steps run with the capture off, and what the findings make of it."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from tenprof.analyses.timeline.overhead import STEPS_TO_TIME_ONE, measure
from tenprof.capture.overhead_plan import (
    RECORDED,
    SETTLING_STEP,
    SETTLING_VAR,
    TIMED,
    TIMED_RUN_VAR,
    OverheadPlan,
    settling_steps,
)
from tenprof.capture.schedule import Schedule
from tenprof.store.profile import load_profile
from tests.conftest import DATA
from tests.helpers import findings_of, recording


def test_plan_records_six_steps_then_settles_three_and_times_three_in_a_row(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(SETTLING_VAR, raising=False)
    monkeypatch.delenv(TIMED_RUN_VAR, raising=False)
    plan = OverheadPlan.for_run(3, None)
    assert plan == OverheadPlan(count=3)
    # three cold steps and three steady ones recorded, then one stretch: odd and even steps timed alike
    assert [s for s in range(20) if plan.is_off(s)] == [6, 7, 8, 9, 10, 11]
    assert [s for s in range(20) if plan.is_off(s) and not plan.is_settling(s)] == [9, 10, 11]
    assert [plan.state(s) for s in (5, 6, 9, 12)] == [RECORDED, SETTLING_STEP, TIMED, RECORDED]
    assert not any(OverheadPlan(count=0).is_off(s) for s in range(20))
    assert plan.steps_to_time_one == STEPS_TO_TIME_ONE == 10  # what the report tells a shorter run to run
    after_window = OverheadPlan.for_run(2, Schedule(wait=1, warmup=1, active=2))
    assert [s for s in range(12) if after_window.is_off(s)] == [5, 6]


def test_more_stretches_keep_three_recorded_steps_between_and_the_last_times_what_is_left() -> None:
    plan = OverheadPlan.for_run(7, None, settling=3, timed_run=3)
    off = [s for s in range(40) if plan.is_off(s)]
    timed = [s for s in off if not plan.is_settling(s)]
    assert timed == [9, 10, 11, 18, 19, 20, 27]  # 7 in all: three, three, then one
    assert off == [*range(6, 12), *range(15, 21), 24, 25, 26, 27]


def test_the_environment_sets_the_settling_and_timed_steps_of_each_stretch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SETTLING_VAR, "1")
    monkeypatch.setenv(TIMED_RUN_VAR, "1")
    plan = OverheadPlan.for_run(3, None)  # one settling step and one timed: the plan until 2026-12-01
    assert [s for s in range(22) if plan.is_off(s)] == [6, 7, 11, 12, 16, 17]
    assert [s for s in range(22) if plan.is_off(s) and not plan.is_settling(s)] == [7, 12, 17]
    monkeypatch.setenv(SETTLING_VAR, "2")
    assert [s for s in range(22) if OverheadPlan.for_run(2, None).is_off(s)] == [6, 7, 8, 12, 13, 14]
    for junk in ("0", "two", "-1", "1.5"):  # not a whole number of steps: the default
        monkeypatch.setenv(SETTLING_VAR, junk)
        assert settling_steps() == 3
    monkeypatch.setenv(TIMED_RUN_VAR, "x")
    assert OverheadPlan.for_run(3, None).timed_run == 3


def test_imported_traces_are_estimated_from_what_their_capture_recorded(tmp_path: Path) -> None:
    from tenprof.importers.timeline_import import import_trace

    no_steps = tmp_path / "no_steps"
    import_trace(DATA / "compiled" / "torch_profiler_mlp.json.gz", no_steps, force=False)
    profile = load_profile(no_steps)
    assert profile.meta.timeline.trace_recorded == ["record_shapes", "with_stack"]  # the trace's own keys
    o = measure(profile)
    assert o.method == "not measured" and o.unprofiled_step_ns is None and "prof.step()" in o.note
    with_steps = tmp_path / "with_steps"
    import_trace(DATA / "mlp" / "timeline" / "raw" / "kineto_trace.json.gz", with_steps, force=False)
    o = measure(load_profile(with_steps))
    assert o.method == "estimated" and "(ops, shapes, memory)" in o.note and "lines" not in o.note
    assert o.unprofiled_step_ns is not None and o.profiled_step_ns is not None
    assert o.unprofiled_step_ns < o.profiled_step_ns


def test_a_cost_model_that_charges_the_whole_step_estimates_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    # the model's costs per op are a lower bound of the profiler's cost on an H100's host; where they add up to
    # the whole recorded step they do not fit the run, and no un-profiled step is made up from them
    from tenprof.analyses.timeline import overhead

    profile = load_profile(DATA / "mlp")
    fitting = measure(profile)
    assert fitting.method == "estimated" and fitting.unprofiled_step_ns
    assert fitting.profiled_step_ns is not None
    ops_per_step = float(fitting.note.split("estimated from ")[1].split(" ops")[0])
    # a base cost at which the ops' charge reaches the recorded step (what else was recorded adds to it)
    whole = fitting.profiled_step_ns / ops_per_step
    monkeypatch.setitem(overhead.COST_PER_OP_NS, "base", whole)
    o = measure(profile)
    assert o.method == "not measured" and o.unprofiled_step_ns is None and not o.known
    assert "does not fit this run" in o.note and o.profiled_step_ns == fitting.profiled_step_ns


def test_old_recordings_are_estimated_and_labelled_as_such() -> None:
    o = measure(recording(DATA / "mlp"))
    assert o.method == "estimated" and "estimated from" in o.note
    assert o.unprofiled_step_ns is not None and o.profiled_step_ns is not None
    assert o.unprofiled_step_ns < o.profiled_step_ns  # tiny ops: the capture's cost is a real part of the step
    gpu_bound = measure(recording(DATA / "matmul4096_warm"))
    assert gpu_bound.unprofiled_gpu_busy_share is not None and gpu_bound.unprofiled_gpu_busy_share > 0.95
    assert np.isclose(gpu_bound.ratio or 0, 1.0, atol=0.05)  # GPU-bound: the profiler's CPU cost hides


OVERHEAD = DATA / "overhead"  # made on an H100 by `bash scripts/gpu_check.sh honest` (tests/data/README.md)


def _finding_ids(case: str) -> list[str]:

    return [f.id for f in findings_of(recording(OVERHEAD / case))]


def test_gpu_bound_gpt2_is_not_called_launch_bound_nor_idle() -> None:
    """fp32 GPT-2 training: recorded, the profiler doubles the step and the GPU looks idle half the time;
    un-profiled (the steps run with the capture off) the GPU is busy throughout."""
    o = measure(recording(OVERHEAD / "gpt2_fp32"))
    assert o.method == "measured" and o.measured_steps == 3
    assert o.ratio is not None and o.ratio > 1.5  # the default capture's cost on this workload, today
    assert o.unprofiled_gpu_busy_share is not None and o.unprofiled_gpu_busy_share > 0.95
    ids = _finding_ids("gpt2_fp32")
    assert "launch-bound" not in ids and "idle-gaps" not in ids, ids


def test_small_mlp_is_launch_bound_even_un_profiled_and_costs_what_it_would_un_profiled() -> None:

    profile = recording(OVERHEAD / "mlp")
    o = measure(profile)
    assert o.method == "measured" and o.unprofiled_gpu_busy_share is not None and o.unprofiled_gpu_busy_share < 0.2
    (bound,) = [f for f in findings_of(profile) if f.id == "launch-bound"]
    assert o.unprofiled_step_ns is not None and o.profiled_step_ns is not None
    assert bound.numbers["gpu_busy_share"] == pytest.approx(o.unprofiled_gpu_busy_share)
    steps = bound.cost_ns / ((1 - o.unprofiled_gpu_busy_share) * o.unprofiled_step_ns)
    assert steps == pytest.approx(round(steps), abs=1e-6)  # whole steps of un-profiled idle
    assert bound.cost_ns < (o.profiled_step_ns - 0.05 * o.profiled_step_ns) * round(steps)
    assert "un-profiled (measured)" in bound.seen[0]


def test_where_the_gpu_activity_went_off_too_the_busy_share_comes_from_the_recorded_steps() -> None:
    # tenprof's runs now turn CUPTI off in the timed steps: their kernels are not in the trace. Taken away
    # from a run that kept them, the GPU's share un-profiled must then come from the recorded steps' work
    # per step (B / U), not read as an idle GPU.
    from tenprof.analyses.timeline.overhead import capture_on, in_unrecorded_steps, kernel_launch_ns
    from tenprof.store.profile import with_tables

    profile = recording(OVERHEAD / "gpt2_fp32")
    kept = measure(profile)
    kernels = profile.table("kernels").filter(~in_unrecorded_steps(profile, kernel_launch_ns(profile)))
    assert kernels.num_rows < profile.table("kernels").num_rows and (~capture_on(profile)).sum() == 3
    gone = with_tables(profile, {"kernels": kernels})
    assert measure(gone).unprofiled_gpu_busy_share == 0.0  # as an older run would read it: wrong
    gone.meta.timeline.timed_steps_gpu = False
    o = measure(gone)
    # the step is at least its GPU work: B here, the timed steps' own kernels there (0.03% apart)
    assert o.unprofiled_step_ns == pytest.approx(kept.unprofiled_step_ns, rel=1e-3)
    assert o.gpu_busy_per_step_ns == kept.gpu_busy_per_step_ns
    assert o.unprofiled_gpu_busy_share is not None and o.unprofiled_step_ns is not None
    assert o.gpu_busy_per_step_ns is not None
    assert o.unprofiled_gpu_busy_share == pytest.approx(min(1.0, o.gpu_busy_per_step_ns / o.unprofiled_step_ns))
    assert o.unprofiled_gpu_busy_share > 0.95  # GPU-bound, as measured with the kernels kept


def test_a_run_that_turned_everything_off_in_its_timed_steps_measures_the_plain_loop() -> None:
    # small MLP on an H100 (2026-11-27): CUPTI, the samplers and the op recorders all off in steps 3, 8, 13.
    # Those steps took 3.50-3.59 ms, the plain loop 3.1-3.7 ms that day; recorded steps about 6 ms.
    from tenprof.analyses.timeline.overhead import capture_on, in_unrecorded_steps, kernel_launch_ns
    from tenprof.analyses.timeline.temporal import temporal_breakdown

    profile = recording(OVERHEAD / "mlp_all_off")
    assert profile.meta.timeline.timed_steps_gpu is False
    off = profile.table("steps").column("step").to_numpy()[~capture_on(profile)].tolist()
    assert off == [3, 8, 13]
    assert not in_unrecorded_steps(profile, kernel_launch_ns(profile)).any()  # no kernel recorded in them
    o = measure(profile)
    assert o.method == "measured" and o.measured_steps == 3 and o.verdict == "overhead"
    assert o.unprofiled_step_ns is not None and 3.0e6 < o.unprofiled_step_ns < 4.0e6
    assert o.gpu_busy_per_step_ns is not None and o.unprofiled_gpu_busy_share is not None
    assert o.unprofiled_gpu_busy_share == pytest.approx(o.gpu_busy_per_step_ns / o.unprofiled_step_ns)
    # the GPU view per step leaves the timed steps out, rather than calling them idle
    assert {r.step for r in temporal_breakdown(profile)}.isdisjoint(off)


def test_gpu_bound_conv_costs_nothing_to_profile() -> None:
    o = measure(recording(OVERHEAD / "conv"))
    assert o.method == "measured" and o.ratio is not None and o.ratio < 1.1
    assert _finding_ids("conv") == ["layout-conversions", "cold-start"]  # nothing about the host


def test_the_steps_run_with_the_capture_off_are_rebuilt_from_the_raw_recording(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    from tests.conftest import rebuild

    rebuilt = rebuild("overhead/mlp", tmp_path).table("steps")
    stored = pq.read_table(OVERHEAD / "mlp" / "timeline" / "steps.parquet")
    # recorded before steps.tokens: the columns it has are rebuilt as they were, and no step has tokens
    assert rebuilt.select(stored.column_names).equals(stored)
    assert set(rebuilt["tokens"].to_pylist()) == {-1}
    off = [n for n, on in zip(rebuilt["step"].to_pylist(), rebuilt["capture_on"].to_pylist(), strict=True) if not on]
    assert off == [3, 7, 11]


def test_a_run_that_stopped_the_profiler_for_its_timed_steps_is_joined_from_its_parts(tmp_path: Path) -> None:
    # small MLP on an H100 (2026-11-27): torch.profiler stopped for steps 3-4, 8-9 and 13-14 (the first of
    # each pair settles the stop, untimed), a session after each
    import pyarrow.parquet as pq

    from tenprof.analyses.timeline.overhead import in_unrecorded_steps, kernel_launch_ns
    from tenprof.analyses.timeline.step_time import step_time
    from tests.conftest import rebuild

    stored = recording(OVERHEAD / "mlp_stopped")
    assert len(list((OVERHEAD / "mlp_stopped" / "timeline" / "raw").glob("kineto_trace*.json.gz"))) == 4
    rebuilt = rebuild("overhead/mlp_stopped", tmp_path)
    for table in ("steps", "ops", "kernels", "api_calls"):
        kept = pq.read_table(OVERHEAD / "mlp_stopped" / "timeline" / f"{table}.parquet")
        # recorded before steps.gpu_period_ns: the columns it has are rebuilt as they were
        assert rebuilt.table(table).select(kept.column_names).equals(kept)
    steps = stored.table("steps").to_pydict()
    off = [n for n, on in zip(steps["step"], steps["capture_on"], strict=True) if not on]
    assert off == [3, 4, 8, 9, 13, 14] and stored.meta.timeline.timed_steps_gpu is False
    timed = [n for n, d in zip(steps["step"], steps["own_duration_ns"], strict=True) if n in off and d > 0]
    assert timed == [4, 9, 14]
    assert not in_unrecorded_steps(stored, kernel_launch_ns(stored)).any()
    # each recorded step launched the same kernels, the first of each new session too
    per_step = Counter(stored.table("ops").column("step").to_pylist())
    assert len({per_step[n] for n in steps["step"] if 1 <= n <= 21 and n not in off}) == 1
    o = measure(stored)
    assert o.method == "measured" and o.measured_steps == 3 and o.unprofiled_step_ns is not None
    assert o.unprofiled_step_ns == pytest.approx(3.928e6, rel=1e-3)  # the median of 4.32, 3.93, 3.66 ms
    recorded = step_time(stored).steps
    assert recorded and all(sum(s.parts.values()) == s.wall_ns for s in recorded)  # the parts add up
    assert not {s.step for s in recorded} & set(off)


def test_the_overhead_verdict_follows_the_one_significance_rule() -> None:
    from tenprof.analyses.timeline.overhead import _verdict

    ms = 1_000_000
    recorded = np.array([10, 11, 10, 12, 11, 10], dtype=np.int64) * ms
    faster = _verdict(np.array([5, 5, 6]) * ms, recorded, cold_only=False)
    assert faster[0] == "overhead" and faster[2] == pytest.approx(1 / 84)  # every off step below every recorded
    alike = _verdict(np.array([10, 12, 11]) * ms, recorded, cold_only=False)
    assert alike[0] == "within noise" and alike[2] is not None and alike[2] >= 0.05
    few = _verdict(np.array([5]) * ms, np.array([10]) * ms, cold_only=False)  # 1 vs 1: p >= 0.5 whatever
    assert few[0] == "too few steps" and few[2] is None and "1 step run with the capture off" in few[1]
    cold = _verdict(np.array([1]) * ms, np.array([400, 3, 3]) * ms, cold_only=True)  # a pool's start-up
    assert cold[0] == "too few steps" and "first 3" in cold[1]


def test_a_long_runs_sampled_rank_test_is_worked_out_once_for_the_same_steps() -> None:
    # a report measures the overhead four times (summary, step decomposition, findings, MFU); a long run's
    # test samples 20,000 splits, so the same steps must not pay for it again, and the answer is the same
    from tenprof.analyses.compare import significance

    rng = np.random.default_rng(1)
    off, recorded = rng.normal(10, 1, 20), rng.normal(11, 1, 200)
    significance._rank_sum_test.cache_clear()
    first = significance.rank_sum_test(off, recorded, "less")
    again = significance.rank_sum_test(list(off), recorded.copy(), "less")  # equal values, other objects
    assert not first.exact and again == first and first.beyond_noise
    assert significance._rank_sum_test.cache_info().hits == 1
    other = significance.rank_sum_test(recorded, off, "less")  # not the same question
    assert not other.beyond_noise and significance._rank_sum_test.cache_info().misses == 2


def test_the_overhead_line_shows_the_timed_step_unclamped_and_says_when_nothing_is_measurable() -> None:
    from tenprof.analyses.timeline.overhead import Overhead
    from tenprof.renderers.text import overhead_line

    noisy = Overhead("measured", "", 517_520.0, 517_520.0, 1, 6, None, None, 590_000.0, "within noise", "test", 0.6)
    line = overhead_line(noisy)
    assert "no overhead measurable beyond the steps' own variation" in line
    assert "590.00us a step un-profiled, 517.52us recorded" in line
    assert "From 1 step run" in line and "1.00x" not in line
    few = Overhead("measured", "", 489e6, 1.38e6, 1, 3, None, None, 1.38e6, "too few steps", "every ...", None)
    line = overhead_line(few)
    assert "too few steps to tell" in line and "355" not in line and "% of a recorded step" not in line


def test_a_recorded_gpu_run_that_the_profiler_slows_is_measured_as_overhead() -> None:
    o = measure(recording(OVERHEAD / "gpt2_fp32"))
    assert o.verdict == "overhead" and o.p_value is not None and o.p_value < 0.05
    assert o.timed_unprofiled_step_ns == o.unprofiled_step_ns  # faster than recorded: nothing capped
