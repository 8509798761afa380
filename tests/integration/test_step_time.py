"""The step decomposition of a real tenprof run whose script never calls tenprof.step(): read per inferred
iteration (the decomposition on recordings is in tests/unit/test_step_time.py)."""

from __future__ import annotations

import pytest

from tenprof.analyses.timeline.step_time import step_time
from tenprof.store.profile import load_profile
from tests.integration.conftest import Recorded


@pytest.mark.xdist_group("tight_loop_run")
def test_a_tenprof_run_without_tenprof_step_is_read_per_iteration(tight_loop_run: Recorded) -> None:
    # `tenprof run` of a loop that never calls tenprof.step() (TIGHT_LOOP): its steps table holds one
    # incomplete step 0 (the whole run), which read as "steps marked" and judged the run as one step, set-up
    # included (GPT-2's generate(): its weights' upload read as a per-step copy). Its six iterations are told
    # instead.
    from tenprof.analyses.findings.context import Context
    from tenprof.analyses.findings.thresholds import Thresholds
    from tenprof.analyses.timeline.overhead import steps_marked
    from tenprof.analyses.timeline.summary import summarize

    assert tight_loop_run.ran.code == 0
    profile = load_profile(tight_loop_run.profile)
    steps = profile.table("steps").to_pylist()
    assert len(steps) == 1 and not steps[0]["complete"] and not steps_marked(profile)
    inferred = Context(profile, Thresholds()).inferred
    assert inferred is not None and len(inferred.starts) == 6 and inferred.marker.startswith("aten::randn")
    result = step_time(profile)
    assert result.inferred and len(result.steps) == 6 and result.setup_ns > 0
    assert summarize(profile).inferred_steps == 6
