"""The host sampler behind its native gate (TENPROF_SAMPLER_GATE=1): while the script's thread runs torch
ops, rounds are skipped without the interpreter's lock and get the ops' call sites; a sleep, where no op
runs, is sampled as without the gate. No timing is asserted: only that some of the op loop's rounds were
skipped (the loop makes an op callback every few microseconds while it runs) and where samples land."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import torch

from tenprof.capture.callsites import new_interner
from tenprof.capture.frames import FrameInterner
from tenprof.capture.host_sampler import HostSampler
from tenprof.capture.native_lines import (
    NativeCallsiteRecorder,
    NativeLinesUnavailable,
    SamplerGate,
    build_library,
    load_library,
)
from tenprof.capture.skipped_rounds import samples_of_skipped


def _ops_for(seconds: float) -> None:
    x = torch.ones(4)  # ONES_LINE
    began = time.perf_counter()
    while time.perf_counter() - began < seconds:
        torch.relu(torch.add(x, x))  # OPS_LINE


@contextmanager
def _gated(**recorded: bool) -> Iterator[tuple[FrameInterner, NativeCallsiteRecorder, HostSampler]]:
    """The native recorder (`recorded`: what else it records) and the host sampler behind its gate, running."""
    try:
        lib = load_library(build_library())
    except NativeLinesUnavailable as exc:
        pytest.skip(str(exc))
    interner = new_interner(None)
    recorder = NativeCallsiteRecorder(interner, lib, **recorded)
    sampler = HostSampler(interner, gate=SamplerGate(lib))
    recorder.__enter__()
    sampler.start()
    try:
        yield interner, recorder, sampler
    finally:
        sampler.stop()
        recorder.__exit__(None, None, None)
        recorder.close()


def test_rounds_in_an_op_loop_are_skipped_and_given_the_ops_line_and_a_sleep_is_sampled() -> None:
    with _gated() as (interner, recorder, sampler):
        _ops_for(0.3)
        time.sleep(0.1)  # SLEEP_LINE
    made = samples_of_skipped(sampler.skipped, recorder.records)
    assert len(sampler.skipped) >= 2 and len(made) == len(sampler.skipped) * 3 // 2
    source = Path(__file__).read_text().splitlines()
    ops_line = next(i + 1 for i, t in enumerate(source) if t.endswith("# OPS_LINE"))
    sleep_line = next(i + 1 for i, t in enumerate(source) if t.endswith("# SLEEP_LINE"))
    rows = interner.rows
    ones_line = next(i + 1 for i, t in enumerate(source) if t.endswith("# ONES_LINE"))
    made_lines = [rows[frame][3] for frame in made[2::3]]  # a frame row: id, parent, file, line, ...
    # each skipped round has the line of the op running then or just before: the loop's, but for a round due
    # right after torch.ones, before the loop's first op (seen once in a full parallel run)
    assert ops_line in made_lines and set(made_lines) <= {ops_line, ones_line} and made_lines.count(ones_line) <= 1
    sampled_lines = [rows[frame][3] for frame in sampler.samples[2::3]]
    assert sampled_lines.count(sleep_line) >= 5  # 100 rounds were due; a loaded machine may take fewer


def test_with_the_op_callbacks_off_the_allocations_still_skip_rounds() -> None:
    # TENPROF_OPS=sampled runs most steps with the op callbacks off and the allocator reports on: the gate
    # reads the reports then (each op here allocates its result), so the loop's rounds are skipped, not
    # taken with the interpreter's lock; a sleep is still sampled.
    with _gated(every_op=True, memory=True, stand_in=True) as (interner, recorder, sampler):
        _ops_for(0.05)  # with its callbacks: the thread is one that runs ops
        recorder.ops_off = True
        _ops_for(0.3)
        time.sleep(0.1)  # SLEEP_OFF_LINE
    source = Path(__file__).read_text().splitlines()
    sleep_line = next(i + 1 for i, t in enumerate(source) if t.endswith("# SLEEP_OFF_LINE"))
    reports = recorder.ops["memory"]
    off_at = max(recorder.records[1::4])  # after the last call site recorded with the callbacks on
    assert sum(1 for t in reports["ts_ns"] if t > off_at) > 100  # the loop allocated with its callbacks off
    skipped_after = [t for t in sampler.skipped[1::2] if t > off_at]
    assert len(skipped_after) >= 10  # 300 rounds were due in the loop (none skipped without the reports)
    sampled_lines = [interner.rows[frame][3] for frame in sampler.samples[2::3]]
    assert sampled_lines.count(sleep_line) >= 5
