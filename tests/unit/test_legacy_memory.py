"""Memory events in Kineto's format of 2021 (the TensorBoard plugin's ResNet-50 samples: "[memory]" events with
each event's bytes, no allocator totals, no addresses): the peak is summed from each device's events' bytes, a
lower bound said to be one, and no block is paired (without addresses an allocation matches no free; paired by
the address 0 they all, the sample's peak read "-1B allocated", held by one 54 MiB block)."""

from __future__ import annotations

from pathlib import Path

from tenprof.analyses.timeline.summary import memory_peak
from tenprof.renderers.text import memory_line
from tests.helpers import imported_events

MIB = 1 << 20


def _memory(ts: float, nbytes: int, device_type: int = 1, device: int = 0) -> dict[str, object]:
    return {"ph": "i", "s": "t", "name": "[memory]", "pid": 1, "tid": 1, "ts": ts,
            "args": {"Device Type": device_type, "Device Id": device, "Bytes": nbytes}}  # fmt: skip


def test_a_trace_without_allocator_totals_reads_its_peak_from_the_bytes(tmp_path: Path) -> None:
    events: list[dict[str, object]] = [
        {"ph": "X", "cat": "Operator", "name": "aten::empty", "pid": 1, "tid": 1, "ts": 0.0, "dur": 50.0},
        _memory(10.0, 64 * MIB),
        _memory(20.0, 32 * MIB),
        _memory(30.0, -64 * MIB),
        _memory(40.0, 16 * MIB),
        _memory(45.0, 4096, device_type=0, device=-1),  # the CPU's, counted apart
    ]
    peak = memory_peak(imported_events(tmp_path, events))
    assert peak is not None and peak.device == "cuda:0"
    assert peak.allocated_bytes == 96 * MIB and peak.summed_from_events
    assert peak.held == []  # no addresses: no blocks to name
    assert "peak at least 96.0MiB allocated on cuda:0 (the trace records no totals" in memory_line(peak)


def test_a_recording_that_begins_by_freeing_counts_what_it_freed_as_held(tmp_path: Path) -> None:
    # 48 MiB freed first (allocated before the recording): at least that much was held before it, so the sum
    # after each event never goes below zero (it read -48 MiB, and the page drew it)
    events = [_memory(10.0, -48 * MIB), _memory(20.0, 16 * MIB), _memory(30.0, 8 * MIB)]
    peak = memory_peak(imported_events(tmp_path, events))
    assert peak is not None and peak.allocated_bytes == 24 * MIB and peak.summed_from_events


def test_a_device_with_recorded_totals_keeps_them(tmp_path: Path) -> None:
    # the CPU's events carry totals, the GPU's none: each device is read as it was recorded
    cpu = {"ph": "i", "s": "t", "name": "[memory]", "pid": 1, "tid": 1, "ts": 5.0,
           "args": {"Device Type": 0, "Device Id": -1, "Bytes": 4096, "Total Allocated": 1 << 30}}  # fmt: skip
    peak = memory_peak(imported_events(tmp_path, [cpu, _memory(10.0, 64 * MIB), _memory(20.0, 32 * MIB)]))
    assert peak is not None and peak.device == "cuda:0" and peak.allocated_bytes == 96 * MIB
