"""The memory findings (issue 39) on real CUDA recordings (tests/data/memory, made on an H200 by
`bash scripts/gpu_record.sh memory39`), rebuilt from their raw traces with this tenprof: each case's
first finding, its control silent, and what the findings read off the allocator."""

from __future__ import annotations

from pathlib import Path

import pytest

from tenprof.analyses.findings import find_all, judging
from tenprof.renderers.finding_text import rendered
from tenprof.store.profile import Profile
from tests.conftest import DATA, rebuild

MEMORY = ("out-of-memory", "memory-growth", "memory-fragmentation")
MiB = 1 << 20


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Profile]:
    root = tmp_path_factory.mktemp("memory")

    class Lazy(dict[str, Profile]):  # each rebuilt the first time a test asks for it
        def __missing__(self, case: str) -> Profile:
            self[case] = profile = rebuild(f"memory/{case}", root)
            return profile

    return Lazy()


def _ids(profile: Profile) -> list[str]:
    return [f.id for f in find_all(profile)]


@pytest.mark.parametrize(("case", "line"), [("keep_outputs", 28), ("loss_graph", 23), ("eval_outputs", 21)])
def test_memory_kept_every_step_is_the_first_finding_at_its_line_and_rate(
    recorded: dict[str, Profile], case: str, line: int
) -> None:
    first = find_all(recorded[case])[0]
    assert first.id == "memory-growth" and first.urgent
    # 4 MiB kept a step (the examples' own sizes), read across the steps timed with the capture off too
    assert first.numbers["growth_bytes_per_step"] == pytest.approx(4 * MiB, rel=0.01)
    assert f"examples/findings/{case}.py:{line}" in first.title
    # a loss summed without .item() and outputs stored outside no_grad keep each step's graph; a list of
    # outputs that need no gradient keeps the outputs alone
    assert ("autograd graph" in first.fix) == (case != "keep_outputs")


@pytest.mark.parametrize(
    "case",
    [
        "keep_outputs_fixed",
        "loss_graph_fixed",
        "eval_outputs_fixed",
        "growing_sizes_fixed",
        "checkpointing",
        "checkpointing_fixed",
    ],
)
def test_controls_raise_no_memory_finding(recorded: dict[str, Profile], case: str) -> None:
    assert not set(_ids(recorded[case])) & set(MEMORY)


def test_the_steps_after_the_capture_restarts_are_no_slow_steps(recorded: dict[str, Profile]) -> None:
    # steps 5, 10 and 15 follow steps timed with the capture off and took ~3 ms against ~0.2 ms: the
    # restart of the GPU-activity session, which slow-step had reported as the control's first finding
    profile = recorded["keep_outputs_fixed"]
    ctx = judging(profile)
    assert ctx.resumed_steps == 3 and not {5, 10, 15} & set(ctx.slow_steps[0].tolist())
    assert "slow-step" not in _ids(profile)


def test_changing_sizes_are_one_fragmentation_finding_with_the_churn_they_cause(recorded: dict[str, Profile]) -> None:
    found = find_all(recorded["growing_sizes"])
    first = found[0]
    assert first.id == "memory-fragmentation" and "expandable_segments:True" in first.fix
    assert first.numbers["bytes_saved"] > 4 * 1024 * MiB and first.numbers["allocator_waited_ns"] > 0
    assert first.cost_ns == first.numbers["allocator_waited_ns"]
    assert "allocator-churn" not in [f.id for f in found]
    assert any(line.startswith("per step: cudaMalloc") for line in first.seen)


def test_an_out_of_memory_run_names_the_list_that_filled_the_card(recorded: dict[str, Profile]) -> None:
    profile = recorded["keep_outputs_until_oom"]
    oom = profile.meta.run.out_of_memory
    assert oom is not None and oom.requested_bytes == 128 * MiB
    assert (Path(profile.directory) / "timeline" / "raw" / oom.snapshot).exists()
    first = rendered(find_all(profile)[0])
    assert first.id == "out-of-memory" and first.where[0].endswith("keep_outputs.py:28")
    holder = next(line for line in first.seen if "blocks of 128.0MiB" in line)
    assert int(holder.split()[0]) * 128 * MiB >= 0.95 * oom.allocated_bytes  # the kept outputs are the card


def test_an_allocation_larger_than_the_card_in_the_first_step(recorded: dict[str, Profile]) -> None:
    first = rendered(find_all(recorded["oom_first_step"])[0])
    assert first.id == "out-of-memory" and "more memory than the card has" in first.fix
    assert "167.0GiB asked for" in first.title


def test_the_recordings_are_here() -> None:
    assert (DATA / "memory" / "keep_outputs" / "meta.json").exists()
