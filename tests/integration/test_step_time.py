"""The step decomposition of a real tenprof run whose script never calls tenprof.step(): read per inferred
iteration (the decomposition on recordings is in tests/unit/test_step_time.py)."""

from __future__ import annotations

from pathlib import Path

from tenprof.analyses.timeline.step_time import step_time
from tenprof.store.profile import load_profile

UNMARKED_LOOP = """\
import time

import torch

w = torch.randn(64, 64)
for i in range(6):
    x = torch.randn(8, 64)
    y = (x @ w).relu()
    y.sum().item()
    time.sleep(0.002)
"""


def test_a_tenprof_run_without_tenprof_step_is_read_per_iteration(tmp_path: Path) -> None:
    # `tenprof run` of a loop that never calls tenprof.step(): its steps table holds one incomplete step 0
    # (the whole run), which read as "steps marked" and judged the run as one step, set-up included (GPT-2's
    # generate(): its weights' upload read as a per-step copy). Its six iterations are told instead.
    from tenprof.analyses.findings.context import Context
    from tenprof.analyses.findings.thresholds import Thresholds
    from tenprof.analyses.timeline.overhead import steps_marked
    from tenprof.analyses.timeline.summary import summarize
    from tenprof.cli.main import main

    (tmp_path / "loop.py").write_text(UNMARKED_LOOP)
    assert main(["run", "--quiet", "-o", str(tmp_path / "prof"), str(tmp_path / "loop.py")]) == 0
    profile = load_profile(tmp_path / "prof")
    steps = profile.table("steps").to_pylist()
    assert len(steps) == 1 and not steps[0]["complete"] and not steps_marked(profile)
    inferred = Context(profile, Thresholds()).inferred
    assert inferred is not None and len(inferred.starts) == 6 and inferred.marker.startswith("aten::randn")
    result = step_time(profile)
    assert result.inferred and len(result.steps) == 6 and result.setup_ns > 0
    assert summarize(profile).inferred_steps == 6
