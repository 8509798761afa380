"""The main thread's CPU time per step and the GC's collections (capture/step_clocks.py), kept in a run's
sidecar and read beside a plain run's by benchmarks/step_clocks.py."""

from __future__ import annotations

import gc
import gzip
import json
import os
import time
from pathlib import Path

import pytest

from tenprof.capture.step_clocks import StepClocks
from tests.helpers import benchmark_module

step_clocks = benchmark_module("step_clocks")
plain_steps, profile_steps, readings = step_clocks.plain_steps, step_clocks.profile_steps, step_clocks.readings


def test_the_clocks_note_each_boundary_and_each_collection_until_stopped() -> None:
    clocks = StepClocks()
    clocks.start()
    try:
        clocks.ended()
        sum(i * i for i in range(20_000))  # some CPU work on this thread between the two reads
        clocks.resumed()
        gc.collect()  # a full collection
    finally:
        clocks.stop()
    assert clocks._on_collection not in gc.callbacks
    [[at_end, at_resume]] = clocks.columns()["thread_cpu_ns"]
    assert at_resume > at_end
    [[whole_at_end, whole_at_resume]] = clocks.columns()["process_cpu_ns"]
    # the process's time holds this thread's (its reads come a few us after the thread's: that much slack)
    assert whole_at_resume - whole_at_end >= at_resume - at_end - 50_000
    full = [c for c in clocks.columns()["collections"] if c[2] == 2]
    assert full and all(end >= start for start, end, _ in full)
    gc.collect()  # after the stop: not noted
    assert len([c for c in clocks.collections if c[2] == 2]) == len(full)


def test_a_forked_child_does_not_carry_the_clocks_callback() -> None:
    # a DataLoader worker forked from the script: its collections are none of the script's steps
    clocks = StepClocks()
    clocks.start()
    try:
        pid = os.fork()
        if pid == 0:  # the child: 0 where the callback is gone
            os._exit(0 if clocks._on_collection not in gc.callbacks else 1)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert clocks._on_collection in gc.callbacks  # the parent keeps it
    finally:
        clocks.stop()
    assert clocks._on_collection not in gc.callbacks


def test_collections_past_the_cap_are_counted_not_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("tenprof.capture.step_clocks.MAX_COLLECTIONS", 2)
    clocks = StepClocks()
    clocks.start()
    try:
        for _ in range(3):
            gc.collect()
    finally:
        clocks.stop()
    assert len(clocks.collections) == 2 and clocks.columns()["collections_dropped"] >= 1


def test_a_collection_counts_in_the_steps_it_overlaps_by_its_part_in_each() -> None:
    # steps 1 and 2 on the perf clock, a full collection across their boundary
    steps = readings(
        [(0, 10_000_000), (12_000_000, 20_000_000)],
        [(0, 9_000_000), (9_500_000, 15_000_000)],
        [[8_000_000, 14_000_000, 2]],
        first=1,
    )
    assert [(s.step, s.wall_ms, s.cpu_ms) for s in steps] == [(1, 10.0, 9.0), (2, 8.0, 5.5)]
    assert [(s.gc_ms, s.full_collections) for s in steps] == [(2.0, 1), (2.0, 1)]
    assert [s.others_cpu_ms for s in steps] == [None, None]  # no process clock kept: not read
    # with the process's CPU time: what the other threads took beside the step's own thread
    steps = readings([(0, 10_000_000)], [(0, 9_000_000)], [], first=1, process=[(100_000_000, 112_000_000)])
    assert steps[0].others_cpu_ms == 3.0


def test_a_plain_runs_marks_read_as_its_steps(tmp_path: Path) -> None:
    marks = tmp_path / "marks.json"
    marks.write_text(json.dumps([0, 100_000_000, 103_000_000, 107_000_000]))  # the script's start, three calls
    clocks = {"thread_cpu_ns": [[50, 50], [2_000_050, 2_000_050], [5_000_050, 5_000_050]], "collections": []}
    (tmp_path / "marks.clocks.json").write_text(json.dumps(clocks))
    steps = plain_steps(marks)
    assert [(s.step, s.wall_ms, s.cpu_ms) for s in steps] == [(1, 3.0, 2.0), (2, 4.0, 3.0)]


@pytest.mark.xdist_group("cpu_steps_run")
def test_a_runs_sidecar_keeps_a_reading_per_step_and_the_timed_steps_are_told(cpu_steps_run: Path) -> None:
    profile = cpu_steps_run / "prof"
    sidecar = json.loads(gzip.decompress((profile / "timeline" / "raw" / "callsites.json.gz").read_bytes()))
    cpu = sidecar["step_clocks"]["thread_cpu_ns"]
    assert len(cpu) == len(sidecar["step_bounds"]) == 15
    flat = [t for pair in cpu for t in pair]
    assert flat == sorted(flat)  # one thread's CPU time only grows
    steps, timed = profile_steps(profile)
    assert timed == {9, 10, 11}  # the default plan on fifteen steps (capture.overhead_plan)
    assert [s.step for s in steps] == list(range(1, 15))
    assert all(s.wall_ms > 0 and s.cpu_ms >= 0 for s in steps)
    # no GPU: no step has a period on the GPU's clock, and the host's clock times them
    assert sidecar["timed_gpu_ns"] == [] and all(s.gpu_ms is None for s in steps)
    assert len(sidecar["step_clocks"]["process_cpu_ns"]) == 15
    # the process's CPU time holds the main thread's; its other threads' share is what is left (a clock read
    # a few hundred ns apart from the thread's: small negatives are read noise)
    assert all(s.others_cpu_ms is not None and s.others_cpu_ms > -0.05 for s in steps)


def test_every_threads_clock_is_read_at_each_boundary_only_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    from tenprof.capture import step_clocks as capture_clocks

    assert "threads" not in StepClocks().columns()  # off by default: a diagnostic
    monkeypatch.setenv(capture_clocks.THREAD_CLOCKS_VAR, "1")
    go, spun, leave = threading.Event(), threading.Event(), threading.Event()

    def spin() -> None:  # 20 ms of its own CPU time between the two reads, however loaded the machine
        go.wait()
        began = time.thread_time_ns()
        while time.thread_time_ns() - began < 20_000_000:
            sum(range(1000))
        spun.set()
        leave.wait()

    spinner = threading.Thread(target=spin)
    clocks = StepClocks()
    spinner.start()
    try:
        clocks.ended()
        go.set()
        assert spun.wait(60)
        clocks.ended()
    finally:
        go.set()
        leave.set()
        spinner.join()
    threads = clocks.columns()["threads"]
    spinning = str(spinner.native_id)
    first, second = threads["cpu_ns"]
    assert second[spinning] - first[spinning] >= 15_000_000  # the 20 ms it spun, as the kernel counts them
    assert len(threads["switches"]) == 2 and threads["switches"][1][0] >= threads["switches"][0][0]
    threads["names"][spinning] = "spinner"  # (Python does not name its threads for the OS before 3.14)
    medians, involuntary = step_clocks.threads_by_name({"threads": threads}, steps=[1])
    assert medians["spinner"] >= 15 and "main" in medians and involuntary >= 0
    # the script's thread is the one the run names, not the lowest TID (TIDs wrap around): the spinner with
    # TID 1 stays the spinner
    main = threads["main"]
    assert main == str(threading.main_thread().native_id)
    renamed = {spinning: "1", main: "999999999"}
    wrapped = {
        "names": {renamed.get(t, t): n for t, n in threads["names"].items()},
        "cpu_ns": [{renamed.get(t, t): ns for t, ns in read.items()} for read in threads["cpu_ns"]],
        "switches": threads["switches"],
        "main": "999999999",
    }
    medians, _ = step_clocks.threads_by_name({"threads": wrapped}, steps=[1])
    assert medians["spinner"] >= 15 and "main" in medians
