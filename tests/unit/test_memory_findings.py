"""The memory findings on torch.profiler traces written here (profile_memory's "[memory]" events, no lines):
blocks paired with their frees (analyses.timeline.live_memory), memory-growth and memory-fragmentation, and
their clean controls. Real captures are in tests/integration/test_memory_findings.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from tenprof.analyses.findings import find_all
from tenprof.analyses.timeline.live_memory import blocks, live_at, live_at_end
from tenprof.importers.timeline_import import import_trace
from tenprof.renderers.finding_text import rendered
from tenprof.store.profile import Profile, load_profile

MIB = 1 << 20
STEP_US = 1000.0


def _op(name: str, ts: float, dur: float) -> dict[str, Any]:
    return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur, "args": {}}


def _memory(ts: float, nbytes: int, address: int, allocated: int, reserved: int) -> dict[str, Any]:
    args = {
        "Total Reserved": reserved,
        "Total Allocated": allocated,
        "Bytes": nbytes,
        "Device Id": 0,
        "Device Type": 1,  # CUDA
        "Addr": address,
    }
    return {
        "ph": "i",
        "cat": "cpu_instant_event",
        "s": "t",
        "name": "[memory]",
        "pid": 1,
        "tid": 1,
        "ts": ts,
        "args": args,
    }


class Allocator:
    """Totals as a caching allocator reports them: allocated follows the blocks, reserved its high-water mark
    (or more, for a fragmented one)."""

    def __init__(self) -> None:
        self.allocated = 0
        self.reserved = 0
        self.events: list[dict[str, Any]] = []

    def alloc(self, ts: float, nbytes: int, address: int, reserve_extra: int = 0) -> None:
        self.allocated += nbytes
        self.reserved = max(self.reserved, self.allocated + reserve_extra)
        self.events.append(_memory(ts, nbytes, address, self.allocated, self.reserved))

    def free(self, ts: float, nbytes: int, address: int) -> None:
        self.allocated -= nbytes
        self.events.append(_memory(ts, -nbytes, address, self.allocated, self.reserved))


def _steps(count: int, step: Any) -> list[dict[str, Any]]:
    """`count` ProfilerStep ranges of STEP_US each, `step(k, start)` giving each one's events."""
    events: list[dict[str, Any]] = []
    for k in range(count):
        start = k * STEP_US
        events.append(
            {"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{k}", "pid": 1, "tid": 1, "ts": start,
             "dur": STEP_US - 1}
        )  # fmt: skip
        events.extend(step(k, start))
    return events


def _profile(tmp_path: Path, events: list[dict[str, Any]], name: str = "p") -> Profile:
    trace = tmp_path / f"{name}.json"
    trace.write_bytes(orjson.dumps({"schemaVersion": 1, "traceEvents": events, "baseTimeNanoseconds": 0}))
    import_trace(trace, tmp_path / name, force=False)
    return load_profile(tmp_path / name)


def _kept_every_step(tmp_path: Path, keep: bool, name: str = "p") -> Profile:
    """Ten steps of aten::mm making a 4 MiB output and a 1 MiB temporary; `keep`: the output is never freed."""
    heap = Allocator()

    def step(k: int, start: float) -> list[dict[str, Any]]:
        output, temporary = 0x10000000 + k * 0x1000000, 0x7000000
        heap.alloc(start + 20, 4 * MIB, output)
        heap.alloc(start + 30, MIB, temporary)
        heap.free(start + 60, MIB, temporary)
        if not keep:
            heap.free(start + 900, 4 * MIB, output)
        return [_op("aten::mm", start + 10, 80), _op("aten::add", start + 850, 100)]

    ops = _steps(10, step)
    return _profile(tmp_path, ops + heap.events, name)


def test_blocks_pair_each_allocation_with_its_free(tmp_path: Path) -> None:
    profile = _kept_every_step(tmp_path, keep=False)
    found = blocks(profile)
    assert len(found) == 20 and found.devices == ["cuda:0"] and found.on("cuda:0").all()
    assert not live_at_end(found).any()
    # the temporary's address is handed out again each step: each allocation ends at its own free
    temporary = found.nbytes == MIB
    assert (found.end_ns[temporary] - found.start_ns[temporary] == 30_000).all()
    assert int(found.nbytes[live_at(found, 5 * 1_000_000 + 40_000)].sum()) == 5 * MIB


def test_an_allocation_whose_free_was_lost_ends_when_its_address_is_handed_out_again(tmp_path: Path) -> None:
    events = [
        _op("aten::empty", 0, 10),
        _memory(1, 100, 0xA0, 100, 512),
        _memory(5, 200, 0xA0, 300, 512),  # the first free was not recorded
        _memory(7, -50, 0xB0, 250, 512),  # a free of a block made before the recording: no block
    ]
    found = blocks(_profile(tmp_path, events))
    assert found.nbytes.tolist() == [100, 200]
    assert found.end_ns.tolist() == [5000, -1]


def test_an_output_kept_every_step_is_memory_growth_named_by_its_op(tmp_path: Path) -> None:
    found = find_all(_kept_every_step(tmp_path, keep=True))
    first = rendered(found[0])
    assert first.id == "memory-growth" and first.urgent
    assert first.numbers["growth_bytes_per_step"] == pytest.approx(4 * MIB)
    # steps 1-9 are analysed (step 0 is the first), the last two not judged
    assert first.numbers["steps_judged"] == 7 and first.numbers["steps_leaving_memory"] == 7
    assert "7 blocks of 4.0MiB (28.0MiB) from aten::mm, one a step over steps 1-7" in first.seen
    assert "appended to a list" in first.fix


def test_the_same_steps_freeing_their_output_are_silent(tmp_path: Path) -> None:
    assert not [f for f in find_all(_kept_every_step(tmp_path, keep=False)) if f.id.startswith("memory")]


def test_a_bounded_cache_that_frees_its_oldest_entry_is_no_growth(tmp_path: Path) -> None:
    # each step keeps a new block and frees one made before the recording: blocks survive, memory is flat
    heap = Allocator()
    heap.allocated = heap.reserved = 64 * MIB

    def step(k: int, start: float) -> list[dict[str, Any]]:
        heap.alloc(start + 20, 4 * MIB, 0x10000000 + k * 0x1000000)
        heap.free(start + 500, 4 * MIB, 0x90000000 + k * 0x1000000)
        return [_op("aten::mm", start + 10, 80)]

    ops = _steps(10, step)
    assert not [f for f in find_all(_profile(tmp_path, ops + heap.events)) if f.id == "memory-growth"]


def test_a_few_steps_cannot_tell_growth(tmp_path: Path) -> None:
    heap = Allocator()

    def step(k: int, start: float) -> list[dict[str, Any]]:
        heap.alloc(start + 20, 4 * MIB, 0x10000000 + k * 0x1000000)
        return [_op("aten::mm", start + 10, 80)]

    ops = _steps(5, step)  # four analysed: fewer than memory_growth's five
    assert not [f for f in find_all(_profile(tmp_path, ops + heap.events)) if f.id == "memory-growth"]


def test_reserved_far_above_the_most_ever_allocated_is_fragmentation(tmp_path: Path) -> None:
    # sizes that alternate, each taking a new segment: 6 GiB reserved for at most 2 GiB allocated
    heap = Allocator()

    def step(k: int, start: float) -> list[dict[str, Any]]:
        size = (1 << 30) + (k % 2) * (1 << 29)
        heap.alloc(start + 20, size, 0x10000000 + k * 0x100000000, reserve_extra=(1 << 30) * min(k, 4))
        heap.free(start + 600, size, 0x10000000 + k * 0x100000000)
        return [_op("aten::empty", start + 10, 20)]

    ops = _steps(8, step)
    found = [f for f in find_all(_profile(tmp_path, ops + heap.events)) if f.id == "memory-fragmentation"]
    assert len(found) == 1
    assert found[0].numbers["reserved_peak_bytes"] == 5.5 * (1 << 30)
    assert found[0].numbers["bytes_saved"] == 4 * (1 << 30)  # reserved peak less the allocated peak (1.5 GiB)
    assert "expandable_segments:True" in found[0].fix


def test_a_cache_kept_after_the_peak_is_no_fragmentation(tmp_path: Path) -> None:
    # one big step, then small ones: reserved stays at the peak's (the cache), far above what is allocated
    # later, but never above the most that was allocated
    heap = Allocator()

    def step(k: int, start: float) -> list[dict[str, Any]]:
        size = 4 << 30 if k == 1 else 1 << 28
        heap.alloc(start + 20, size, 0x10000000)
        heap.free(start + 600, size, 0x10000000)
        return [_op("aten::empty", start + 10, 20)]

    ops = _steps(8, step)
    assert not [f for f in find_all(_profile(tmp_path, ops + heap.events)) if f.id == "memory-fragmentation"]


def test_the_errors_of_both_allocators_are_out_of_memory_errors_with_what_they_asked_for() -> None:
    from tenprof.capture.out_of_memory import is_out_of_memory, requested

    class OutOfMemoryError(RuntimeError):  # torch's, by name: no torch imported here
        pass

    cuda = (
        "CUDA out of memory. Tried to allocate 128.00 MiB. GPU 3 has a total capacity of 79.19 GiB of which "
        "3.19 MiB is free."
    )
    cpu = (
        "[enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: can't allocate memory: you tried to "
        "allocate 1125899906842624 bytes. Error code 12 (Cannot allocate memory)"
    )
    assert is_out_of_memory(OutOfMemoryError(cuda)) and requested(cuda) == (128 * MIB, 3)
    assert is_out_of_memory(RuntimeError(cpu)) and requested(cpu) == (1 << 50, -1)
    assert not is_out_of_memory(RuntimeError("shapes cannot be multiplied")) and requested("x") == (-1, -1)


def test_a_rocm_builds_gpu_memory_is_the_gpus(tmp_path: Path) -> None:
    # PyTorch on ROCm reports its GPUs' allocations with c10's HIP device type (6); public MI300X traces
    # (AMD-AGI/TraceLens's tests) were told their peak of GPU memory was on "cpu:0", and the memory findings,
    # which judge CUDA devices, did not see it. The same ten steps as a CUDA trace's give the same finding.
    from tenprof.analyses.timeline.summary import memory_peak

    cuda = _kept_every_step(tmp_path, keep=True, name="cuda")
    rocm_events = [
        {**e, "args": {**e["args"], "Device Type": 6}} if e["name"] == "[memory]" else e
        for e in orjson.loads((tmp_path / "cuda.json").read_bytes())["traceEvents"]
    ]
    rocm = _profile(tmp_path, rocm_events, "rocm")
    assert set(rocm.strings("memory", "device_type").values) == {"cuda"}
    peak = memory_peak(rocm)
    assert peak is not None and peak.device == "cuda:0" and peak == memory_peak(cuda)
    assert [f.id for f in find_all(rocm)] == [f.id for f in find_all(cuda)] and "memory-growth" in {
        f.id for f in find_all(rocm)
    }


def _kept_every_unmarked_iteration(tmp_path: Path, backward: bool) -> Profile:
    """`_kept_every_step`'s loop with no step marked (iterations inferred from its repeated calls), each keeping
    its 4 MiB output; `backward`: each iteration also runs a backward op on autograd's thread."""
    heap = Allocator()
    events: list[dict[str, Any]] = []
    for k in range(10):
        start = k * STEP_US
        heap.alloc(start + 20, 4 * MIB, 0x10000000 + k * 0x1000000)
        events += [_op("aten::mm", start + 10, 80), _op("aten::add", start + 850, 100)]
        if backward:
            events.append(_op("autograd::engine::evaluate_function: MmBackward0", start + 400, 100) | {"tid": 2})
    return _profile(tmp_path, events + heap.events)


def test_unmarked_iterations_without_a_backward_are_not_judged_a_leak(tmp_path: Path) -> None:
    # the layers of one forward pass read as iterations, each keeping its activations for the backward: a
    # ResNet-50's single forward pass (a public trace, no steps) was told it leaks, urgent, first
    from tenprof.analyses.findings import not_judged
    from tenprof.analyses.findings.context import Context
    from tenprof.analyses.findings.thresholds import Thresholds

    profile = _kept_every_unmarked_iteration(tmp_path, backward=False)
    inferred = Context(profile, Thresholds()).inferred
    assert inferred is not None and len(inferred.starts) == 10  # the loop is read
    assert "memory-growth" not in {f.id for f in find_all(profile)}
    assert any(
        n.startswith("memory growth: the inferred iterations do not each run a backward") for n in not_judged(profile)
    )


def test_unmarked_training_iterations_that_keep_memory_are_a_leak(tmp_path: Path) -> None:
    found = find_all(_kept_every_unmarked_iteration(tmp_path, backward=True))
    assert found[0].id == "memory-growth" and found[0].urgent
    assert found[0].numbers["growth_bytes_per_step"] == pytest.approx(4 * MIB)
