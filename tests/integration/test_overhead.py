"""tenprof run measures its own overhead on a real capture: steps run with the capture off, timed, and what the
report says of them (the analyses on recordings are in tests/unit/test_overhead.py)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from tenprof.analyses.timeline.overhead import measure
from tenprof.cli.main import main
from tenprof.store.profile import load_profile


@pytest.mark.xdist_group("cpu_steps_run")
def test_a_run_with_steps_times_some_with_the_capture_off(
    cpu_steps_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # torch's profiler flag (torch.compile's generated code records launches while it is up) is down
    # in the steps timed un-profiled
    assert (cpu_steps_run / "flags.txt").read_text() == "111111000000111"
    out = cpu_steps_run / "prof"
    profile = load_profile(out)
    steps = profile.table("steps").to_pydict()
    off = [n for n, on in zip(steps["step"], steps["capture_on"], strict=True) if not on]
    assert off == [6, 7, 8, 9, 10, 11]
    # the first three settle the profiler's stop and are not timed
    timed = [n for n, d in zip(steps["step"], steps["own_duration_ns"], strict=True) if n in off and d > 0]
    assert timed == [9, 10, 11]
    op_steps = set(profile.table("ops").column("step").to_pylist())
    assert not op_steps & set(off) and {2, 5, 12, 14} <= op_steps  # nothing recorded while the capture was off
    # the profiler was stopped for the stretch, and a new session recorded the steps after it: two parts,
    # joined into one timeline whose recorded steps each hold the loop's ops
    raw = out / "timeline" / "raw"
    assert sorted(p.name for p in raw.glob("kineto_trace*")) == ["kineto_trace.1.json.gz", "kineto_trace.json.gz"]
    per_step = Counter(profile.table("ops").column("step").to_pylist())
    assert len({per_step[n] for n in (2, 3, 4, 5, 12, 13, 14)}) == 1
    assert all(d > 0 for n, d in zip(steps["step"], steps["own_duration_ns"], strict=True) if n not in (6, 7, 8, 15))
    o = measure(profile)
    assert o.method == "measured" and o.measured_steps == 3 and o.recorded_steps == 6  # 3-5, 12-14
    assert o.unprofiled_step_ns is not None and o.profiled_step_ns is not None and o.ratio is not None
    assert main(["report", str(out), "--limit", "1"]) == 0
    assert "Overhead   measured: " in capsys.readouterr().out
