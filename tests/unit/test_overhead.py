"""tenprof measures its own overhead: steps run with the capture off, and what the findings make of it."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest

from tenprof.analyses.overhead import measure
from tenprof.capture.overhead_plan import OverheadPlan
from tenprof.capture.schedule import Schedule
from tenprof.cli.main import main
from tenprof.store.profile import load_profile
from tests.conftest import DATA


def test_plan_takes_every_fourth_step_from_the_fourth_up_to_the_count() -> None:
    plan = OverheadPlan(count=3)
    assert [s for s in range(20) if plan.is_off(s)] == [3, 7, 11]
    assert not any(OverheadPlan(count=0).is_off(s) for s in range(20))
    after_window = OverheadPlan.for_run(2, Schedule(wait=1, warmup=1, active=2))
    assert [s for s in range(12) if after_window.is_off(s)] == [5, 6]


def test_a_run_with_steps_times_some_with_the_capture_off(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "loop.py"
    script.write_text(
        textwrap.dedent(
            """
            import torch, tenprof
            x = torch.ones(64, 64)
            for _ in range(9):
                for _ in range(20):
                    x = torch.tanh(x @ x)
                tenprof.step()
            """
        )
    )
    out = tmp_path / "prof"
    assert main(["run", "--quiet", "-o", str(out), str(script)]) == 0
    profile = load_profile(out)
    steps = profile.table("steps").to_pydict()
    off = [n for n, on in zip(steps["step"], steps["capture_on"], strict=True) if not on]
    assert off == [3, 7]
    op_steps = set(profile.table("ops").column("step").to_pylist())
    assert not op_steps & {3, 7} and {2, 4, 6, 8} <= op_steps  # nothing recorded while the capture was off
    assert all(d > 0 for d in steps["own_duration_ns"][:9])
    o = measure(profile)
    assert o.method == "measured" and o.measured_steps == 2 and o.recorded_steps == 4  # 4, 5, 6, 8
    assert o.unprofiled_step_ns is not None and o.profiled_step_ns is not None and o.ratio is not None
    assert main(["report", str(out), "--limit", "1"]) == 0
    assert "Overhead   measured: " in capsys.readouterr().out


def test_without_steps_the_overhead_is_not_measured_and_says_how_to_get_it(tmp_path: Path) -> None:
    from tenprof.importers.trace_import import import_trace

    out = tmp_path / "imp"
    trace = DATA / "compiled" / "torch_profiler_mlp.json.gz"
    import_trace(trace, out, force=False)
    o = measure(load_profile(out))
    assert o.unprofiled_step_ns is None or o.method == "estimated"
    assert o.method != "measured"


def test_old_recordings_are_estimated_and_labelled_as_such() -> None:
    o = measure(load_profile(DATA / "mlp"))
    assert o.method == "estimated" and "estimated from" in o.note
    assert o.unprofiled_step_ns is not None and o.profiled_step_ns is not None
    assert o.unprofiled_step_ns < o.profiled_step_ns  # tiny ops: the capture's cost is a real part of the step
    gpu_bound = measure(load_profile(DATA / "matmul4096_warm"))
    assert gpu_bound.unprofiled_gpu_busy_share is not None and gpu_bound.unprofiled_gpu_busy_share > 0.95
    assert np.isclose(gpu_bound.ratio or 0, 1.0, atol=0.05)  # GPU-bound: the profiler's CPU cost hides
