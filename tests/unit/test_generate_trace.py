"""GPT-2 `generate()` recorded with plain torch.profiler (no tenprof, no steps marked, no stack; one NVIDIA H200,
2026-11-28, tests/data/generate): the decode loop's iterations are inferred, the set-up before it (the
weights' copy to the GPU included) is left out of them, and the findings read the loop: launch-bound first;
each token's two `.item()` syncs cost 15.5 us of GPU idle a token (the host is behind the GPU anyway), 0.2%
of the step, below sync-in-loop's `sync_min_share`; the one-time weight upload is not called a per-step
pageable copy (it was, before iterations were inferred in runs without marked steps)."""

from __future__ import annotations

from pathlib import Path

from tenprof.analyses.timeline.step_time import step_time
from tenprof.cli.main import main
from tenprof.store.profile import load_profile
from tests.conftest import DATA
from tests.helpers import findings_of

TRACE = DATA / "generate" / "gpt2_generate_torch_profiler.json.gz"


def test_generate_traced_by_torch_profiler_reads_per_token(tmp_path: Path) -> None:
    assert main(["import", "--quiet", str(TRACE), "-o", str(tmp_path / "p")]) == 0
    profile = load_profile(tmp_path / "p")
    found = [f for f in findings_of(profile) if not f.once]
    assert found[0].id == "launch-bound" and "sync-in-loop" not in {f.id for f in found}
    assert "pageable-transfer" not in {f.id for f in findings_of(profile)}
    steps = step_time(profile)
    # 48 tokens: the prefill and 47 decode steps, give or take the loop's first and last partial iterations
    assert not steps.marked and steps.inferred and 45 <= len(steps.steps) <= 50
    assert steps.setup_ns > 1e9  # imports, the model, its copy to the GPU: seconds, left out
