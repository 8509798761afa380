"""all-reduce-every-micro-step on two-GPU DDP recordings (H100s, tests/data): gradient accumulation over
four micro-batches without no_sync() wastes three all-reduce rounds a step; with no_sync() (the twin),
and in DDP without accumulation (tests/data/ranks), the check is silent."""

from __future__ import annotations

import gzip
from pathlib import Path

import orjson
import pytest

from tenprof.analyses.findings.context import Context
from tenprof.analyses.findings.grad_sync import check
from tenprof.analyses.findings.thresholds import Thresholds
from tenprof.cli.main import main
from tenprof.store.profile import Profile, load_profile
from tests.conftest import DATA
from tests.helpers import findings_of, recording


def test_three_of_four_rounds_are_wasted_and_the_cost_is_their_exposed_collective_time(
    rebuilt: dict[str, Profile],
) -> None:
    profile = rebuilt["finding_ddp_no_sync"]
    ctx = Context(profile, Thresholds())
    (found,) = check(ctx)
    n = found.numbers
    assert n["micro_steps_per_optimizer_step"] == 4
    assert n["rounds"] == 4 * ctx.step_count and n["wasted_rounds"] == 3 * ctx.step_count
    # the cost is collective-only GPU time of the wasted rounds: no more than those kernels ran, no more
    # than the decomposition's collective part, and something: the tiny compute cannot hide 400 MB rounds
    assert 0 < found.cost_ns <= n["wasted_all_reduce_gpu_ns"]
    assert found.cost_ns <= ctx.part_ns("collective")
    assert "no_sync()" in found.fix
    assert found.where and found.where[0].startswith("examples/findings/ddp_no_sync.py:")


@pytest.mark.parametrize(
    "case", ["finding_ddp_no_sync_fixed", "ranks/balanced/rank00000", "ranks/slowed/rank00001", "gpt2"]
)
def test_silent_with_no_sync_and_without_accumulation(rebuilt: dict[str, Profile], case: str) -> None:
    profile = rebuilt[case] if "/" not in case else recording(DATA / case)
    assert "all-reduce-every-micro-step" not in {f.id for f in findings_of(profile)}


def test_fires_on_a_plain_torch_profiler_trace_without_marked_steps(tmp_path: Path) -> None:
    # the DDP pair's torch.profiler trace (rank 0, two H100s) with its ProfilerStep ranges taken out: the
    # accumulation windows come from the optimizer's step ranges alone
    trace = orjson.loads(gzip.decompress((DATA / "corpus_traces" / "ddp_no_sync.json.gz").read_bytes()))
    kept = [e for e in trace["traceEvents"] if not str(e.get("name", "")).startswith("ProfilerStep#")]
    assert len(kept) < len(trace["traceEvents"])
    trace["traceEvents"] = kept
    (tmp_path / "trace.json").write_bytes(orjson.dumps(trace))
    assert main(["import", "--quiet", str(tmp_path / "trace.json"), "-o", str(tmp_path / "prof")]) == 0
    found = findings_of(load_profile(tmp_path / "prof"))
    assert found[0].id == "all-reduce-every-micro-step"
    assert found[0].numbers["micro_steps_per_optimizer_step"] == 4
