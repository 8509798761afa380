"""Memory events in Kineto's format of 2021 (the TensorBoard plugin's ResNet-50 samples: "[memory]" events with
each event's bytes, no allocator totals, no addresses): the peak is the running sum of each device's bytes since
the recording began, said to be so, and no block is paired (without addresses an allocation matches no free;
paired by the address 0 they all, the sample's peak read "-1B allocated", held by one 54 MiB block)."""

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
    assert peak.allocated_bytes == 96 * MIB and peak.since_recording_start
    assert peak.held == []  # no addresses: no blocks to name
    assert "beyond what was held as the recording began" in memory_line(peak)
