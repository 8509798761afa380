"""What launch-bound tells a run to do, by what the run already does: an eager loop is told to fuse its small
ops (torch.compile) or replay CUDA graphs; a run whose steps already execute torch.compile's code is not
told to compile, but to replay that code as CUDA graphs. Stored recordings of tests/data (H100/H200)."""

from __future__ import annotations

from tenprof.analyses.findings import Finding
from tests.conftest import DATA
from tests.helpers import findings_of, recording


def _launch_bound(case: str) -> Finding:
    found = {f.id: f for f in findings_of(recording(DATA / case))}
    assert "launch-bound" in found, sorted(found)
    return found["launch-bound"]


def test_an_eager_loop_is_told_to_fuse_or_replay() -> None:
    fix = _launch_bound("mlp").fix  # the small MLP, eager
    assert "fuse the small ops (torch.compile)" in fix and "CUDA graph" in fix


def test_a_compiled_loop_is_told_to_replay_not_to_compile() -> None:
    for case in ("compiled/mlp_default", "compiled/gpt2_default"):  # torch.compile, default mode
        fix = _launch_bound(case).fix
        assert "already run torch.compile's code" in fix and "mode='reduce-overhead'" in fix
        assert "fuse the small ops (torch.compile)" not in fix
