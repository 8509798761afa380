"""sync-in-loop names only synchronizations that cost something worth fixing (`sync_min_share` of the analysed
steps): a benchmark's timing syncs in a GPU-bound loop cost microseconds of GPU idle against long kernels
(three in a 12.8 s public AlexNet pass cost 40 us), while a sync followed by host work the GPU then waits for
costs that host work every step."""

from __future__ import annotations

from pathlib import Path

from tenprof.analyses.findings import find_all
from tenprof.store.profile import Profile
from tests.helpers import imported_events, launch

STEPS = 6


def _loop(tmp_path: Path, kernel_us: float, host_after_sync_us: float, call: str = "cudaDeviceSynchronize") -> Profile:
    """STEPS marked steps: a matmul launching one `kernel_us` kernel, a cudaDeviceSynchronize waiting for it, then
    `host_after_sync_us` of host work before the next step's launch."""
    events: list[dict[str, object]] = []
    base = 0.0
    for correlation in range(1, STEPS + 1):
        begin = base
        events += launch("aten::mm", base, 30.0, 8.0, kernel_us, correlation)
        kernel_end = base + 23.0 + kernel_us
        events.append({"ph": "X", "cat": "cuda_runtime", "name": call, "pid": 1, "tid": 1,
                       "ts": base + 40.0, "dur": kernel_end + 2.0 - (base + 40.0),
                       "args": {"correlation": 1000 + correlation}})  # fmt: skip
        base = kernel_end + 2.0 + host_after_sync_us
        events.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{correlation}", "pid": 1,
                       "tid": 1, "ts": begin - 1, "dur": base - begin})  # fmt: skip
    return imported_events(tmp_path, events)


def _short_sync_then_host(tmp_path: Path, host_us: float) -> Profile:
    """STEPS marked steps: a 10 ms kernel, a cudaDeviceSynchronize begun 3 us before it ends (5 us long), then
    `host_us` of host work before the next step's launch."""
    events: list[dict[str, object]] = []
    base = 0.0
    for correlation in range(1, STEPS + 1):
        begin = base
        events += launch("aten::mm", base, 30.0, 8.0, 10_000.0, correlation)
        kernel_end = base + 23.0 + 10_000.0
        events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaDeviceSynchronize", "pid": 1, "tid": 1,
                       "ts": kernel_end - 3.0, "dur": 5.0, "args": {"correlation": 1000 + correlation}})  # fmt: skip
        base = kernel_end + 2.0 + host_us
        events.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{correlation}", "pid": 1,
                       "tid": 1, "ts": begin - 1, "dur": base - begin})  # fmt: skip
    return imported_events(tmp_path, events)


def test_syncs_that_cost_the_gpu_microseconds_of_long_steps_are_not_named(tmp_path: Path) -> None:
    ids = {f.id for f in find_all(_loop(tmp_path, kernel_us=10_000.0, host_after_sync_us=5.0))}
    assert "sync-in-loop" not in ids


def test_syncs_followed_by_host_work_the_gpu_waits_for_are_named(tmp_path: Path) -> None:
    found = {f.id: f for f in find_all(_loop(tmp_path, kernel_us=10_000.0, host_after_sync_us=300.0))}
    assert "sync-in-loop" in found and found["sync-in-loop"].cost_ns > 0


def test_syncs_below_the_share_leave_the_idle_time_to_idle_gaps(tmp_path: Path) -> None:
    # a sync that blocks microseconds, then 5 ms of host work each 10 ms step: the sync is nothing to fix, but the
    # GPU's idle after it is still the step's (it vanished with the dropped sync-in-loop, which had owned it)
    found = {f.id: f for f in find_all(_short_sync_then_host(tmp_path, 5_000.0))}
    assert "sync-in-loop" not in found and "idle-gaps" in found
    # and the gaps are the host's work after the sync returned, not waits on it: the sync's part of each is the
    # 2 us it took to return, the 5 ms after it the host's, in Python, as the text and the fix say
    idle = found["idle-gaps"]
    assert idle.title.endswith("mostly host not launching work") and "Python" in idle.fix
    assert idle.numbers["waiting_on_a_synchronization_ns"] < 0.01 * idle.numbers["host_not_launching_work_ns"]
    assert idle.seen[0].startswith(f"GPU 0: {STEPS - 1} gaps with no kernel running")  # each gap told once


def test_rocms_blocking_copy_is_a_synchronization(tmp_path: Path) -> None:
    # ROCm's PyTorch copies to the host with hipMemcpyWithStream, which returns once the copy is done
    (tmp_path / "hip").mkdir()
    (tmp_path / "async").mkdir()
    found = {f.id for f in find_all(_loop(tmp_path / "hip", 10_000.0, 300.0, call="hipMemcpyWithStream"))}
    assert "sync-in-loop" in found
    # the control: an asynchronous copy call of the same length is no synchronization
    queued = {f.id for f in find_all(_loop(tmp_path / "async", 10_000.0, 300.0, call="hipMemcpyAsync"))}
    assert "sync-in-loop" not in queued


def test_long_gaps_after_a_sync_are_split_without_overflow(tmp_path: Path) -> None:
    # 4 s of host work after each 5 us sync: the pieces' shares of a gap, in nanoseconds, multiply to more
    # than an int64 holds (once read as 10 s of idle time instead of 20); each gap told once, its two pieces
    # adding up to it
    idle = {f.id: f for f in find_all(_short_sync_then_host(tmp_path, 4_000_000.0))}["idle-gaps"]
    pieces = idle.numbers["waiting_on_a_synchronization_ns"] + idle.numbers["host_not_launching_work_ns"]
    assert pieces == idle.numbers["idle_ns"] and idle.numbers["idle_ns"] > 0.99 * (STEPS - 1) * 4e9
    gap_lines = [line for line in idle.seen if line.startswith("gap of ")]
    assert gap_lines and all("waiting on a synchronization, then " in line for line in gap_lines)
