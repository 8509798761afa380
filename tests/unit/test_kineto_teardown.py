"""kineto_teardown: the threads a stop starts are found, and poked until they end (real threads, no CUDA)."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import pytest

from tenprof.capture import kineto_teardown

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="native threads are read from /proc")


def _waiter(released: threading.Event, polls: list[int]) -> threading.Thread:
    """A thread that waits, as Kineto's teardown does, until a later call releases it."""

    def wait() -> None:
        while not released.wait(0.001):
            polls.append(1)

    return threading.Thread(target=wait, daemon=True)


def test_the_thread_a_stop_starts_is_seen_through_by_pokes() -> None:
    released = threading.Event()
    waiter = _waiter(released, [])
    started = kineto_teardown.threads_started_by(waiter.start)
    assert waiter.native_id in started
    pokes: list[int] = []

    def poke() -> None:  # the third call is the one that finalizes, as a call before the subscription is missed
        pokes.append(1)
        if len(pokes) == 3:
            released.set()

    left = kineto_teardown.see_through(started, poke, deadline_s=10.0)
    assert left == set()
    assert len(pokes) >= 3
    assert not waiter.is_alive()


def test_a_thread_that_does_not_end_is_given_up_on_at_the_deadline() -> None:
    released = threading.Event()
    waiter = _waiter(released, [])
    started = kineto_teardown.threads_started_by(waiter.start)
    try:
        left = kineto_teardown.see_through(started, lambda: None, deadline_s=0.05)
        assert waiter.native_id in left
    finally:
        released.set()
        waiter.join()


def test_threads_already_gone_are_not_waited_for() -> None:
    done = threading.Thread(target=lambda: None)
    done.start()
    done.join()
    gone = done.native_id or -1
    for _ in range(10_000):  # join returns before the OS thread has left /proc (10 s at most, a loaded machine)
        if gone not in kineto_teardown.native_threads():
            break
        time.sleep(0.001)
    calls: list[int] = []
    assert kineto_teardown.see_through({gone}, lambda: calls.append(1), deadline_s=5.0) == set()
    assert calls == []


def test_a_run_without_cuda_never_pokes_even_with_the_teardown_asked_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """TEARDOWN_CUPTI=1 set by a user on a machine without CUDA: no device synchronize (it would raise)."""
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("the case of a machine without CUDA")
    from tenprof.capture.timeline import TimelineOptions, TimelineSession

    monkeypatch.setenv("TEARDOWN_CUPTI", "1")
    # as if the stop had started a thread that is still there (this one is, for the whole test)
    monkeypatch.setattr(kineto_teardown, "threads_started_by", lambda stop: (stop(), {threading.get_native_id()})[1])
    session = TimelineSession(tmp_path, TimelineOptions(lines=False, sample_interval_ns=0))
    session.start()
    for _ in range(2):
        (torch.randn(8, 8) @ torch.randn(8, 8)).sum()
        session.step()
    session.stop()
    assert session.trace_written


def test_a_teardown_still_waiting_is_told_from_one_that_ended() -> None:
    released = threading.Event()
    waiter = _waiter(released, [])
    started = kineto_teardown.threads_started_by(waiter.start)
    assert kineto_teardown.still_running(started) == {waiter.native_id}
    released.set()
    waiter.join()
    # the OS thread outlives join() a moment: waited for as the capture's end waits
    assert kineto_teardown.see_through(started, lambda: None, deadline_s=10.0) == set()
    assert kineto_teardown.still_running(started) == set()
