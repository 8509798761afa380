"""The corpus of planted mistakes (examples/findings/corpus.json, issue 36): on each pair's GPU recording
the first finding paid every step is the planted cause, and the fixed twin does not raise it.

Checked on what tenprof recorded (`tenprof run`, tests/data/finding_*, rebuilt from their raw files by
this tenprof) and on the same scripts recorded with plain torch.profiler, without and with with_stack
(tests/data/corpus_traces/, imported as a user would). docs/FINDINGS.md keeps the table
(benchmarks/corpus_table.py), with each first finding's cost against the time its fix saved.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from tenprof.analyses.findings import Finding, find_all, not_judged
from tenprof.analyses.findings.context import Context
from tenprof.analyses.findings.thresholds import Thresholds
from tenprof.analyses.timeline.step_time import step_time
from tenprof.cli.main import main
from tenprof.core.units import duration
from tenprof.renderers.text import _cost as cost_text
from tenprof.store.profile import Profile, load_profile
from tests.conftest import DATA

CORPUS = Path(__file__).resolve().parents[2] / "examples" / "findings" / "corpus.json"
PAIRS: list[dict[str, Any]] = json.loads(CORPUS.read_text())["pairs"]
TRACES = DATA / "corpus_traces"
TRACED = [p for p in PAIRS if (TRACES / f"{p['name']}.json.gz").exists()]


def _ranked(profile: Profile) -> list[Finding]:
    """The findings in the order a user reads them: those paid every step, then the one-offs other than
    cold start (which every recording's first step has, planted or not)."""
    return [f for f in find_all(profile) if not f.once or f.id != "cold-start"]


def _twin(pair: dict[str, Any]) -> str:
    return str(pair.get("twin", pair["recording"] + "_fixed"))


def _check(pair: dict[str, Any], bad: Profile, twin: Profile) -> None:
    found = _ranked(bad)
    assert found, "no finding"
    assert found[0].id == pair["finding"], [(f.id, f.cost_ns) for f in found[:3]]
    assert found[0].where, found[0]  # and says where to look
    assert pair["finding"] not in {f.id for f in find_all(twin)}


def _marked(pairs: list[dict[str, Any]], source: str) -> list[Any]:
    """A pair the corpus records as a known miss (`known_miss`: why; `known_miss_in`: on which recordings,
    "run" and/or "traces", both when not said) is expected to fail there, strictly: once it passes, the
    test says so and the mark must go."""
    return [
        pytest.param(p, id=p["name"], marks=pytest.mark.xfail(strict=True, reason=p["known_miss"]))
        if p.get("known_miss") and source in p.get("known_miss_in", ("run", "traces"))
        else pytest.param(p, id=p["name"])
        for p in pairs
    ]


@pytest.mark.parametrize("pair", _marked(PAIRS, "run"))
def test_the_first_finding_is_the_planted_cause_and_the_twin_is_silent(
    rebuilt: dict[str, Profile], pair: dict[str, Any]
) -> None:
    _check(pair, rebuilt[pair["recording"]], rebuilt[_twin(pair)])


@pytest.mark.parametrize("pair", _marked(TRACED, "traces"))
def test_the_same_on_plain_torch_profiler_traces(tmp_path: Path, pair: dict[str, Any]) -> None:
    for stack in ("", "_stack"):
        if stack and pair.get("stack_trace_not_kept"):  # recorded, too large for the repository
            continue
        profiles = []
        for twin in ("", "_fixed"):
            name = f"{pair['name']}{twin}{stack}"
            assert main(["import", "--quiet", str(TRACES / f"{name}.json.gz"), "-o", str(tmp_path / name)]) == 0
            profiles.append(load_profile(tmp_path / name))
        if pair.get("needs_shapes") and not stack:  # recorded without record_shapes: nothing to judge it by
            assert pair["finding"] not in {f.id for f in find_all(profiles[0])}
            assert any("no input shapes were recorded" in note for note in not_judged(profiles[0]))
            continue
        if stack and "stack" in pair.get("known_miss_in", ()):  # strictly: once it holds, the mark must go
            with pytest.raises(AssertionError):
                _check(pair, *profiles)
            continue
        _check(pair, *profiles)


def test_the_corpus_is_the_issue_s_size() -> None:
    # at least 15 mistakes, each with a recorded twin; at least a third of them also as torch.profiler traces
    assert len(PAIRS) >= 15 and len(TRACED) >= len(PAIRS) // 3
    for pair in PAIRS:
        assert (DATA / pair["recording"] / "meta.json").exists() and (DATA / _twin(pair) / "meta.json").exists()


def _line_of(script: str, text: str) -> str:
    lines = (CORPUS.parent / script).read_text().splitlines()
    return f"examples/findings/{script}:{next(i + 1 for i, t in enumerate(lines) if text in t)}"


def test_allocator_churn_names_the_empty_cache_line_and_the_host_time_in_the_allocator(
    rebuilt: dict[str, Profile],
) -> None:
    # ResNet-18 calling torch.cuda.empty_cache() every step (H100): the releases happen outside any op, the
    # line is the call's (sampled), and the cost is the host's time the allocator takes in the analysed
    # steps: at least its CUDA calls, plus what the ops that allocate take beyond their calls that reuse
    # cached memory, which the GPU's idle time covers here.
    import numpy as np

    from tenprof.analyses.findings.context import Context
    from tenprof.analyses.findings.thresholds import Thresholds
    from tenprof.analyses.timeline.step_time import ALLOCATOR_CALLS

    profile = rebuilt["finding_empty_cache"]
    found = {f.id: f for f in find_all(profile)}
    churn = found["allocator-churn"]
    assert churn.where[0] == _line_of("empty_cache.py", "torch.cuda.empty_cache()  # the planted")
    assert "empty_cache()" in churn.fix and churn.numbers["releases_outside_ops_per_step"] >= 1
    ctx = Context(profile, Thresholds())
    api = profile.table("api_calls")
    names = api.column("name").to_pylist()
    starts, ends = api.column("start_ns").to_numpy(), api.column("end_ns").to_numpy()
    chosen = np.array([n in ALLOCATOR_CALLS for n in names]) & ctx.in_steps(starts)
    # the step decomposition's allocator part holds the calls (summed over the host's threads they may
    # overlap, so their union is a little less) and the allocator's work around them in the ops, which the
    # cost counts too (analyses.timeline.allocator_slow_path)
    calls = int((ends - starts)[chosen].sum())
    assert churn.numbers["host_ns"] >= 0.9 * calls and churn.numbers["host_ns"] > calls  # the slow path too
    assert churn.numbers["allocator_time_ns"] >= churn.numbers["host_ns"]
    assert churn.cost_ns == churn.numbers["allocator_time_ns"]
    # the ops that allocate: each of ResNet-18's convolutions and batch norms takes its output afresh; what
    # they take beyond their calls into the driver is the allocator's slow path, more than nothing and
    # less than the calls themselves
    extra = churn.numbers["allocator_time_ns"] - calls
    assert 0.1 * calls < extra < calls
    assert any("top-level ops per step that call the allocator" in line for line in churn.seen)
    assert "allocator-churn" not in {f.id for f in find_all(rebuilt["finding_empty_cache_fixed"])}


def test_data_loading_says_where_the_loading_runs(rebuilt: dict[str, Profile]) -> None:
    # the same per-sample transform in the script's process (num_workers=0) and in one worker: the advice
    # differs (workers; faster or more workers), and each names the transform's line, sampled
    single = {f.id: f for f in find_all(rebuilt["finding_slow_transform"])}["data-loading"]
    worker = {f.id: f for f in find_all(rebuilt["finding_few_workers"])}["data-loading"]
    assert single.numbers["single_process"] == 1 and "num_workers=N" in single.fix
    assert worker.numbers["single_process"] == 0 and "more workers" in worker.fix
    # sampled in the worker process, in the Dataset's __getitem__ (this recording predates the sampler's
    # shorter switch interval, so its samples sit at the torch.full before the transform: see
    # benchmarks/sampler_attribution.py)
    getitem = {_line_of("slow_transform.py", "sample = torch.full"), _line_of("slow_transform.py", "spin(TRANSFORM_S)")}
    assert worker.where[0] in getitem and single.where[0] in getitem


def test_a_loader_the_unprofiled_steps_hide_is_kept_last_with_its_recorded_cost(rebuilt: dict[str, Profile]) -> None:
    # TensorBoard's ResNet-50 sample traces (num_workers=0, torch 1.8, docs/FINDINGS.md) are estimated to run
    # un-profiled with the GPU never idle: the host, without the profiler's cost, is ahead of the GPU by more
    # than the loading. Stand-in: the single-process loader's recording, with such an un-profiled reading
    profile = rebuilt["finding_slow_transform"]
    ctx = Context(profile, Thresholds())
    ctx.overhead = dataclasses.replace(ctx.overhead, unprofiled_gpu_busy_share=1.0)  # a cached property
    found = find_all(profile, ctx=ctx)
    hidden = {f.id: f for f in found}["data-loading"]
    every_step = [f for f in found if not f.once]
    assert hidden.cost_ns == 0 and hidden is every_step[-1] and len(every_step) > 1
    assert hidden.numbers["recorded_cost_ns"] == pytest.approx(hidden.numbers["waited_ns"])
    assert any("the steps leave the GPU no idle time" in line for line in hidden.seen)
    recorded = duration(int(hidden.numbers["recorded_cost_ns"]))
    assert cost_text(hidden).endswith(f"of the steps un-profiled, {recorded} as recorded")


def test_data_loading_quotes_the_wait_where_each_step_went_shows(rebuilt: dict[str, Profile]) -> None:
    # one worker: the batches it made before the loop serve steps 1 and 2 without a wait (3.0 and 5.4 ms
    # against 15.5-18.0 ms after them); the finding quotes and charges the steady steps' wait, the one the
    # decomposition shows above it, not the mean over the analysed steps (14.33 ms, 0.77 of what more
    # workers saved un-profiled: docs/FINDINGS.md)
    profile = rebuilt["finding_few_workers"]
    waiting = {f.id: f for f in find_all(profile)}["data-loading"]
    parts = step_time(profile)
    shown = parts.mean("data_loading")
    assert waiting.numbers["share"] == pytest.approx(shown / parts.mean_wall_ns, rel=1e-6)
    assert waiting.cost_ns / Context(profile, Thresholds()).step_count == pytest.approx(shown, rel=0.01)


@pytest.mark.parametrize(
    "case", ["tensor_cost/embedding_random", "stalls/user_kernels", "finding_slow_transform_fixed"]
)
def test_allocator_churn_is_silent_on_one_steps_first_allocation(case: str) -> None:
    # two analysed steps, the first of which takes one block from the driver (the cache warming up): no churn
    assert "allocator-churn" not in {f.id for f in find_all(load_profile(DATA / case))}
