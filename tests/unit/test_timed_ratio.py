"""benchmarks/timed_ratio.py: the un-profiled step against the plain loop over processes, with its interval."""

from __future__ import annotations

import json

import pytest

from tests.helpers import ROOT, benchmark_module

timed_ratio = benchmark_module("timed_ratio")


def test_the_same_steps_are_within_and_a_clear_excess_is_outside() -> None:
    plain = [3.0, 3.1, 2.9, 3.05, 2.95, 3.0]
    same = timed_ratio.timed_ratio(plain, list(plain))
    assert same.ratio == pytest.approx(1.0)
    assert same.low <= 1.0 <= same.high
    assert same.verdict == "within"
    slower = timed_ratio.timed_ratio(plain, [1.3 * v for v in plain])
    assert slower.ratio == pytest.approx(1.3)
    assert slower.low > 1.1
    assert slower.verdict == "outside"


def test_a_wide_spread_is_not_told_apart_and_the_interval_is_repeatable() -> None:
    plain = [2.9, 4.1, 3.3, 3.9]
    timed = [3.2, 4.4, 3.0, 4.0]
    first = timed_ratio.timed_ratio(plain, timed)
    assert first.low < 1.0 < 1.1 < first.high
    assert first.verdict == "not told apart"
    assert timed_ratio.timed_ratio(plain, timed) == first  # a fixed seed: the same files, the same interval
    with pytest.raises(ValueError):
        timed_ratio.timed_ratio([3.0], timed)


def test_runs_are_pooled_per_card_and_workload_and_failed_runs_left_out() -> None:
    def doc(card: str, plain_loop: float | None) -> dict:
        return {
            "machine": {"card": card},
            "runs": [
                {"workload": "mlp", "config": "plain", "loop_s": plain_loop, "steps": 200},
                {"workload": "mlp", "config": "tenprof-timed", "loop_s": 2.0, "steps": 200, "timed_step_s": 0.004},
                {"workload": "mlp", "config": "tenprof-timed", "loop_s": None, "steps": 200, "timed_step_s": None},
            ],
        }

    pooled = timed_ratio.processes([doc("H200", 0.7), doc("H200", 0.8), doc("H100", None)])
    assert pooled[("H200", "mlp", "1 settling, 1 timed")] == ([3.5, 4.0], [4.0, 4.0])
    assert pooled[("H100", "mlp", "1 settling, 1 timed")] == ([], [4.0])
    other = doc("H200", 0.7)
    other["runs"].append({"workload": "mlp", "config": "tenprof-timed-s3t3", "loop_s": 2.0, "timed_step_s": 0.0036})
    both = timed_ratio.processes([other])  # each timed configuration against the same plain processes
    assert both[("H200", "mlp", "1 settling, 1 timed")] == ([3.5], [4.0])
    assert both[("H200", "mlp", "3 settling, 3 timed")] == ([3.5], [3.6])
    # results that name their plan are pooled by it, whatever the configuration was called then
    other["runs"].append(
        {"workload": "mlp", "config": "tenprof-timed", "plan": "3 settling, 3 timed", "timed_step_s": 0.0038}
    )
    assert timed_ratio.processes([other])[("H200", "mlp", "3 settling, 3 timed")] == ([3.5], [3.6, 3.8])


def test_the_committed_pinned_runs_give_the_documented_ratio() -> None:
    """docs/BENCHMARKS.md's pooled MLP figure comes from these two calls' results."""
    results = ROOT / "benchmarks" / "results"
    documents = [json.loads((results / f"2026-12-01-h200-pinned36-mlp-{s}.json").read_text()) for s in "ab"]
    plain, timed = timed_ratio.processes(documents)[("NVIDIA H200", "mlp", "1 settling, 1 timed")]
    assert (len(plain), len(timed)) == (25, 25)
    r = timed_ratio.timed_ratio(plain, timed)
    assert (round(r.ratio, 3), round(r.low, 3), round(r.high, 3)) == (1.095, 1.01, 1.14)
    assert r.verdict == "not told apart"


def test_the_committed_settling_runs_give_the_documented_ratios() -> None:
    """docs/BENCHMARKS.md's compiled GPT-2 figures for the two plans come from this call's results."""
    document = json.loads((ROOT / "benchmarks" / "results" / "2026-12-01-h200-settle36gpu-b.json").read_text())
    pooled = timed_ratio.processes([document])
    got = {}
    for plan in ("1 settling, 1 timed", "3 settling, 3 timed"):
        r = timed_ratio.timed_ratio(*pooled[("NVIDIA H200", "gpt2-compiled", plan)])
        got[plan] = (round(r.ratio, 3), round(r.low, 3), round(r.high, 3))
    assert got == {"1 settling, 1 timed": (1.214, 1.097, 1.345), "3 settling, 3 timed": (1.017, 0.907, 1.194)}


def test_paired_rounds_pool_as_a_geometric_mean_over_rounds() -> None:
    # rounds that each set a tenprof run's timed steps beside a plain run's same steps (benchmarks/step_clocks.py):
    # a machine's mood moves both sides of a round together, so a steady ratio reads tight however the rounds differ
    host_a = [(12.15, 10.96), (12.06, 10.58), (12.09, 10.67)]  # the H100 host A of 2026-12-07
    r = timed_ratio.paired_ratio(host_a)
    assert r.ratio == pytest.approx(0.887, abs=1e-3) and 0.87 < r.low <= r.ratio <= r.high < 0.90
    assert r.verdict == "outside"  # consistently faster than the plain run by more than 10%
    varied = [(10.0, 10.2), (20.0, 19.6), (15.0, 15.3)]  # plain steps far apart, each round within 2%
    assert timed_ratio.paired_ratio(varied).verdict == "within"
    with pytest.raises(ValueError):
        timed_ratio.paired_ratio(host_a[:1])


def test_step_clocks_pools_its_rounds_files(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    step_clocks = benchmark_module("step_clocks")
    files = sorted((ROOT / "benchmarks" / "results").glob("2026-12-07-h100-clocks36-r*.json"))
    assert len(files) == 3
    plain, timed = step_clocks.round_medians(json.loads(files[0].read_text()))
    assert plain == pytest.approx(12.15, abs=0.01) and timed == pytest.approx({"host wall": 10.96}, abs=0.01)
    step_clocks.pool(files)
    printed = capsys.readouterr().out
    assert "host wall: 3 rounds, geometric mean 0.887 (90% 0.879-0.895): outside" in printed
