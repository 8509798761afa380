"""The timed steps as the GPU saw them: CUDA events at their boundaries (capture/timed_gpu_periods.py), their
periods carried into the steps table and preferred by the overhead's measure over the host's clock."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tenprof.analyses.timeline.overhead import measure
from tenprof.capture import timed_gpu_periods
from tenprof.core.rawfiles import later_trace_parts
from tenprof.importers.timeline_import import build_pass
from tenprof.store.profile import load_profile
from tests.conftest import DATA, rebuild_pass
from tests.helpers import benchmark_module, recording


class _FakeEvent:
    """An event whose GPU timestamp is given (ms), on one stream: waiting for one completes every event
    stamped before it, and CUDA's elapsed_time reads only completed events."""

    completed_to = -1.0  # the latest GPU time waited for

    def __init__(self, at_ms: float) -> None:
        self.at_ms = at_ms

    def synchronize(self) -> None:
        _FakeEvent.completed_to = max(_FakeEvent.completed_to, self.at_ms)

    def elapsed_time(self, end: _FakeEvent) -> float:
        assert max(self.at_ms, end.at_ms) <= _FakeEvent.completed_to, "an event is read only once complete"
        return end.at_ms - self.at_ms


def _fake_clocks(monkeypatch: pytest.MonkeyPatch, gpu_ms: list[float], host_ms: list[float]) -> None:
    """Each event recorded next is stamped with the next GPU time, and read at the next host time (ms)."""
    gpu, host = iter(gpu_ms), iter(host_ms)
    _FakeEvent.completed_to = -1.0
    monkeypatch.setattr(timed_gpu_periods, "_event_now", lambda: _FakeEvent(next(gpu)))
    monkeypatch.setattr(timed_gpu_periods, "perf_counter_ns", lambda: round(next(host) * 1e6))


def test_a_gpu_bound_steps_period_is_the_time_between_its_events(monkeypatch: pytest.MonkeyPatch) -> None:
    # the host ahead of a busy GPU: the events at each boundary run back to back on the GPU, 6 ms of work a
    # step, while the host's boundaries come 1 ms apart
    _fake_clocks(monkeypatch, gpu_ms=[6.0, 6.0, 12.0, 12.0, 18.0], host_ms=[1.0, 1.05, 2.0, 2.05, 3.0])
    periods = timed_gpu_periods.TimedGpuPeriods()
    periods.ended(8)  # the settling step before the first timed one
    periods.began(9)
    periods.ended(9)
    periods.began(10)
    periods.ended(10)
    assert periods.periods() == [[9, 6_000_000], [10, 6_000_000]]
    assert periods.periods() == []  # read once, then let go


def test_a_host_bound_step_is_not_charged_the_tail_the_gpu_ran_during_tenprofs_boundary(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the host sets the pace: 3 ms a step, tenprof's boundary work 0.2 ms, the GPU finishing each step's last
    # kernel 0.05 ms after the step ends and then idle until the next step's first event
    host = [3.0, 3.2, 6.2, 6.4, 9.4]  # the closing event of step 8, opening of 9, closing of 9, ...
    gpu = [3.05, 3.2, 6.25, 6.4, 9.45]
    _fake_clocks(monkeypatch, gpu_ms=gpu, host_ms=host)
    periods = timed_gpu_periods.TimedGpuPeriods()
    periods.ended(8)
    periods.began(9)
    periods.ended(9)
    periods.began(10)
    periods.ended(10)
    took = dict(periods.periods())
    # between its own events each step reads 3.05 ms, its own tail in it; the one before's, run while tenprof
    # worked at the boundary, is taken off: the host's 3 ms, as the program runs it
    assert took[9] == pytest.approx(3_000_000, abs=1) and took[10] == pytest.approx(3_000_000, abs=1)


def test_a_step_without_both_its_events_has_no_period(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_clocks(monkeypatch, gpu_ms=[1.0, 2.0, 3.0], host_ms=[1.0, 2.0, 3.0])
    periods = timed_gpu_periods.TimedGpuPeriods()
    periods.began(9)
    periods.ended(9)
    periods.began(10)  # the script ended inside step 10: no event closes it
    assert periods.periods() == [[9, 1_000_000]]  # no closing event of step 8: nothing taken off


def test_no_event_is_recorded_where_cuda_is_not_in_use() -> None:
    # the CPU test machine: no CUDA, so the host's clock stands (nothing initialised for the script)
    periods = timed_gpu_periods.TimedGpuPeriods()
    periods.began(9)
    periods.ended(9)
    assert periods.periods() == []


def _with_periods(tmp_path: Path, periods: list[list[int]] | None) -> Path:
    """overhead/mlp_stopped (an H100 run from before the events: steps 4, 9 and 14 timed on the host, 4.32,
    3.93 and 3.66 ms) rebuilt with these GPU periods written into its call-site log."""
    target = tmp_path / "mlp_stopped"
    shutil.copytree(DATA / "overhead" / "mlp_stopped", target)
    sidecar_path = target / "timeline" / "raw" / "callsites.json.gz"
    sidecar: dict[str, Any] = json.loads(gzip.decompress(sidecar_path.read_bytes()))
    if periods is not None:
        sidecar["timed_gpu_ns"] = periods
    sidecar_path.write_bytes(gzip.compress(json.dumps(sidecar).encode()))
    rebuild_pass(
        target,
        "timeline",
        lambda writer, raw: build_pass(
            writer, raw / "kineto_trace.json.gz", raw / "callsites.json.gz", later_parts=later_trace_parts(raw)
        ),
    )
    return target


def test_the_measure_times_the_steps_on_the_gpus_clock_where_it_has_their_periods(tmp_path: Path) -> None:
    ms = 1_000_000
    profile = load_profile(_with_periods(tmp_path, [[4, 5_100_000], [9, 5_300_000], [14, 5_000_000]]))
    steps = profile.table("steps").to_pydict()
    periods = {n: p for n, p in zip(steps["step"], steps["gpu_period_ns"], strict=True) if p > 0}
    assert periods == {4: 5_100_000, 9: 5_300_000, 14: 5_000_000}  # the timed steps only
    o = measure(profile)
    assert o.method == "measured" and o.measured_steps == 3
    assert o.timed_unprofiled_step_ns == pytest.approx(5.1 * ms)  # their median, not the host's 3.93
    assert "timed on the GPU" in o.note


def test_without_periods_the_hosts_clock_times_the_steps_as_before(tmp_path: Path) -> None:
    o = measure(load_profile(_with_periods(tmp_path, None)))
    assert o.timed_unprofiled_step_ns == pytest.approx(3.928e6, rel=1e-3)  # the median of 4.32, 3.93, 3.66 ms
    assert "timed on the GPU" not in o.note


def test_the_benchmark_pools_each_reading_of_the_timed_steps_against_the_plain_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    benchmark_module("timed_ratio")  # which step_clocks imports as a script beside it would
    step_clocks = benchmark_module("step_clocks")

    def round_file(name: str, plain: float, wall: float, gpu: float, report: float) -> Path:
        row = {"tenprof": {"wall_ms": wall, "gpu_ms": gpu}, "plain": {"wall_ms": plain}}
        path = tmp_path / name
        path.write_text(json.dumps({"rows": [row, row, row], "report_timed_ms": report}))
        return path

    old = tmp_path / "old.json"  # a round from before the GPU periods: its rows alone
    old.write_text(json.dumps([{"tenprof": {"wall_ms": 9.0}, "plain": {"wall_ms": 10.0}}]))
    assert step_clocks.round_medians(json.loads(old.read_text())) == (10.0, {"host wall": 9.0})
    paths = [round_file("a.json", 10.0, 8.8, 10.1, 10.1), round_file("b.json", 12.0, 10.6, 12.0, 12.0)]
    step_clocks.pool(paths)
    out = capsys.readouterr().out
    assert "host wall: 2 rounds, geometric mean 0.882" in out
    assert "GPU period: 2 rounds, geometric mean 1.005" in out and "report: 2 rounds" in out


def _timed(case: str) -> tuple[dict[int, int], dict[int, int]]:
    """A recording's timed steps: their host walls and their GPU periods (ns), by step."""
    steps = recording(DATA / "overhead" / case).table("steps").to_pydict()
    rows = zip(steps["step"], steps["capture_on"], steps["own_duration_ns"], steps["gpu_period_ns"], strict=True)
    timed = [(n, wall, period) for n, on, wall, period in rows if not on and wall > 0]
    return {n: wall for n, wall, _ in timed}, {n: period for n, _, period in timed}


def test_a_host_bound_loop_reads_alike_on_both_clocks() -> None:
    # overhead/mlp_gpu_periods (H100, 2026-12-08): the small MLP's host sets the pace (GPU busy ~8%)
    walls, periods = _timed("mlp_gpu_periods")
    assert sorted(periods) == [9, 10, 11]
    for n, period in periods.items():
        assert period == pytest.approx(walls[n], rel=0.05), (n, walls[n], period)
    o = measure(recording(DATA / "overhead" / "mlp_gpu_periods"))
    assert o.timed_unprofiled_step_ns == sorted(periods.values())[1]


def test_a_loop_whose_host_runs_ahead_is_timed_by_its_gpu_work() -> None:
    # overhead/host_ahead (H100, 2026-12-08): 8M cycles of torch.cuda._sleep a step, queued in microseconds
    walls, periods = _timed("host_ahead")
    assert sorted(periods) == [9, 10, 11]
    for n, period in periods.items():
        assert 3.5e6 < period < 5e6 and walls[n] < period / 50, (n, walls[n], period)
    o = measure(recording(DATA / "overhead" / "host_ahead"))
    assert o.timed_unprofiled_step_ns == pytest.approx(4.045e6, rel=0.01)
