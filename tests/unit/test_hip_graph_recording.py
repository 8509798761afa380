"""A step that records a HIP graph (ROCm's hipGraphInstantiate, as CUDA's cudaGraphInstantiate) is a one-off like
compiling, kept out of the steady-state checks (analyses.findings.context): TraceLens's MI300X Flux capture traces
led with "compiled regions cost 324 ms CPU" while they recorded their graphs."""

from __future__ import annotations

from pathlib import Path

from tenprof.analyses.findings.context import Context
from tenprof.analyses.findings.thresholds import Thresholds
from tenprof.store.profile import Profile
from tests.helpers import imported_events, launch


def _steps(tmp_path: Path, call_in_step_2: str) -> Profile:
    """Four marked steps of one matmul each; step 2 also makes the runtime call `call_in_step_2`."""
    events: list[dict[str, object]] = []
    for step in range(4):
        base = 1000.0 * step
        events += launch("aten::mm", base, 30.0, 8.0, 200.0, step + 1)
        if step == 2:
            events.append({"ph": "X", "cat": "cuda_runtime", "name": call_in_step_2, "pid": 1, "tid": 1,
                           "ts": base + 300.0, "dur": 50.0, "args": {"correlation": 100}})  # fmt: skip
        events.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{step}", "pid": 1, "tid": 1,
                       "ts": base - 1, "dur": 900.0})  # fmt: skip
    tmp_path.mkdir()
    return imported_events(tmp_path, events)


def test_a_step_recording_a_hip_graph_is_kept_out_like_a_compiling_one(tmp_path: Path) -> None:
    assert Context(_steps(tmp_path / "hip", "hipGraphInstantiate"), Thresholds()).compiling_steps == 1
    assert Context(_steps(tmp_path / "cuda", "cudaGraphInstantiateWithFlags"), Thresholds()).compiling_steps == 1
    # the control: replaying a graph is the steady state
    assert Context(_steps(tmp_path / "replay", "hipGraphLaunch"), Thresholds()).compiling_steps == 0
