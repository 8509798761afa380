"""Where each step went (analyses.step_time), on the GPU recordings in tests/data: the parts add up to every
step's wall time in every recording, and each planted cause is the largest part of its step while its
fixed twin has none of it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tenprof.analyses.step_time import PARTS, StepTime, step_time
from tenprof.store.profile import load_profile
from tests.conftest import CASES, DATA


@pytest.mark.parametrize("case", CASES)
def test_the_parts_add_up_to_each_step(case: str) -> None:
    result = step_time(load_profile(DATA / case))
    assert result.steps, "every recording has steps or a profiled span"
    for step in result.steps:
        assert set(step.parts) == set(PARTS)
        assert all(ns >= 0 for ns in step.parts.values()), step
        assert sum(step.parts.values()) == step.wall_ns, step


def _largest(result: StepTime) -> str:
    return max(PARTS, key=result.mean)


def _share(result: StepTime, part: str) -> float:
    return result.mean(part) / result.mean_wall_ns


@pytest.mark.parametrize(
    "planted, fixed, part",
    [
        # an 8 ms collate in the script's process (num_workers=0): the main thread is in __next__
        ("finding_slow_collate", "finding_slow_loader_fixed", "data_loading"),
        # 5 ms of time.sleep between two matmuls: Python outside torch ops
        ("finding_host_gaps_sampled", "finding_host_gaps_sampled_fixed", "python"),
        # a shape that changes every step: torch.compile compiles again
        ("finding_recompile", "finding_recompile_fixed", "compile"),
    ],
)
def test_a_planted_cause_is_the_largest_part_and_its_twin_has_none(planted: str, fixed: str, part: str) -> None:
    before = step_time(load_profile(DATA / planted))
    assert _largest(before) == part and _share(before, part) > 0.5, {p: before.mean(p) for p in PARTS}
    after = step_time(load_profile(DATA / fixed))
    assert _share(after, part) < 0.1, {p: after.mean(p) for p in PARTS}


def test_a_gpu_bound_step_is_the_gpus() -> None:
    result = step_time(load_profile(DATA / "matmul4096_warm"))
    assert _largest(result) == "gpu" and _share(result, "gpu") > 0.8


def test_a_launch_bound_step_is_the_hosts() -> None:
    # small kernels: the GPU runs a fraction of each step; the host is in ops and between them
    result = step_time(load_profile(DATA / "finding_launch_bound"))
    assert _share(result, "gpu") < 0.1 and _share(result, "dispatch") + _share(result, "python") > 0.8


def test_workers_too_slow_for_the_loop_show_in_every_other_step() -> None:
    # two DataLoader workers sleeping 4 ms per item, 8 items a batch: each makes a batch in 32 ms, and the
    # loop takes one every 3 ms, so every other step waits about 30 ms for them. The mean step keeps both
    # kinds of step (a median step would be one of the short ones and show no data loading)
    result = step_time(load_profile(DATA / "finding_slow_workers"))
    waiting = [s for s in result.steady if s.parts["data_loading"] > 0.5 * s.wall_ns]
    assert 3 <= len(waiting) < len(result.steady)
    assert _largest(result) == "data_loading" and _share(result, "data_loading") > 0.5
    assert sum(result.mean(p) for p in PARTS) == pytest.approx(result.mean_wall_ns)


def test_a_run_without_steps_is_one_span(tmp_path: Path) -> None:
    from tenprof.cli.main import main

    out = tmp_path / "imported"  # a plain torch.profiler trace: no step marked
    assert main(["import", "--quiet", str(DATA / "torch_traces" / "slow_step.json.gz"), "-o", str(out)]) == 0
    result = step_time(load_profile(out))
    assert not result.marked and len(result.steps) == 1 and result.steps[0].step == -1
    assert sum(result.steps[0].parts.values()) == result.steps[0].wall_ns > 0
