"""The memory findings on real captures (in-process, on the CPU, whose allocator reports to the profiler as
CUDA's does): a list that keeps each step's output, a loss summed with its graph, an out-of-memory error,
and the controls that keep nothing. The GPU cases (a real out-of-memory error, fragmentation) are in
tests/gpu/test_gpu_memory.py."""

from __future__ import annotations

import gc
import time
from pathlib import Path

import pytest

import tenprof
from tenprof.analyses.findings import Thresholds, find_all
from tenprof.analyses.findings.context import Context
from tenprof.analyses.timeline.live_memory import blocks, live_at_end
from tenprof.renderers.finding_text import rendered
from tenprof.store.profile import Profile
from tests.helpers import line_of

torch = pytest.importorskip("torch")
HERE = Path(__file__).resolve()
SOURCE = HERE.read_text()
MIB = 1 << 20


def _outputs_loop(out: Path, keep: bool, steps: int = 10, fail_after: int = 0) -> Profile:
    """Each step, a function, makes a 2 MiB output and sleeps 3 ms (so the host sampler reads its frame);
    `keep`: the output is appended to a list. `fail_after`: after that many steps, an allocation larger
    than the machine fails (the CPU allocator's own out-of-memory error)."""
    w = torch.randn(256, 512)
    x = torch.randn(1024, 256)
    kept: list[object] = []

    def step(i: int) -> None:
        y = (x @ w).relu()  # the output
        kept.append(y if keep else y.mean().item())
        time.sleep(0.003)
        if fail_after and i + 1 == fail_after:
            torch.empty(1 << 50, dtype=torch.uint8)  # the error's line

    with (
        pytest.raises(RuntimeError, match="allocate memory") if fail_after else _nothing(),
        tenprof.profile(str(out), overhead_steps=0) as p,
    ):
        for i in range(steps):
            step(i)
            p.step()
    return p.profile


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def _memory_findings(profile: Profile) -> list[str]:
    return [f.id for f in find_all(profile) if f.id in ("memory-growth", "out-of-memory", "memory-fragmentation")]


def test_outputs_kept_in_a_list_are_the_first_finding_at_their_line(tmp_path: Path) -> None:
    profile = _outputs_loop(tmp_path / "p", keep=True)
    first = rendered(find_all(profile)[0])
    assert first.id == "memory-growth"
    assert first.numbers["growth_bytes_per_step"] == pytest.approx(2 * MIB, rel=0.01)
    assert first.where[0] == f"{HERE}:{line_of(SOURCE, '# the output')}"
    # steps 1-7 judged (0 is the first, 8 and 9 the last two); a step a loaded machine stalled is left out
    # of the analysed ones, which moves the last judged one, but the blocks it made between judged ones are
    # named with them: the line's blocks span the steps up to the second-last analysed one
    analysed = sorted(Context(profile, Thresholds()).step_numbers.tolist())
    assert f"one a step over steps {analysed[0]}-{analysed[-2] - 1}" in first.seen[2]


def test_a_loop_that_keeps_nothing_is_silent_and_each_free_is_recorded(tmp_path: Path) -> None:
    profile = _outputs_loop(tmp_path / "p", keep=False)
    assert _memory_findings(profile) == []
    # every output was freed on the script's thread, where the allocator reports it: the host sampler lets go
    # of the frames it reads before it interns them (it held each step's frame to its next round, and the
    # frame it freed read as a block never freed: 9 of the 10). A step that returns while the sampler holds
    # its frame, which takes the interpreter's lock being handed over mid-walk (seen once on a loaded
    # machine), still loses its free.
    found = blocks(profile)
    outputs = found.nbytes == 2 * MIB  # the product and its relu
    assert outputs.sum() == 20 and (live_at_end(found) & outputs).sum() <= 1


def test_an_out_of_memory_error_names_what_held_the_memory(tmp_path: Path) -> None:
    profile = _outputs_loop(tmp_path / "p", keep=True, fail_after=6)
    oom = profile.meta.run.out_of_memory
    assert oom is not None and oom.requested_bytes == 1 << 50 and oom.device_type == "cpu"
    assert oom.where == f"{HERE}:{line_of(SOURCE, '# the error')}"
    found = [rendered(f) for f in find_all(profile)]
    assert found[0].id == "out-of-memory" and "memory-growth" not in [f.id for f in found]
    assert found[0].where[0] == f"{HERE}:{line_of(SOURCE, '# the output')}"
    holder = next(line for line in found[0].seen if line.startswith("6 blocks of 2.0MiB"))
    assert "one a step over steps 0-4, and 1 outside the complete steps" in holder  # the sixth, unfinished
    assert "Memory is kept across steps" in found[0].fix


def test_outputs_stored_with_their_graph_read_as_the_graph_and_grow_as_they_do(tmp_path: Path) -> None:
    """Predictions kept outside torch.no_grad() keep their step's activations: 2 MiB of hidden activations
    and 10 KiB of output a step, from two ops of one line. Steps are timed with the capture off between the
    recorded ones (the default), which the CPU allocator does not count: the growth is still 2 MiB a step.
    Under torch.no_grad() only the outputs stay, 10 KiB a step: silent."""
    model = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.GELU(), torch.nn.Linear(1024, 10)).eval()
    batch = torch.randn(256, 256)
    for fixed in (False, True):
        predictions = []
        with tenprof.profile(str(tmp_path / str(fixed))) as p:
            for _ in range(16):
                with torch.no_grad() if fixed else _nothing():
                    predictions.append(model(batch))  # the predictions
                p.step()
        if fixed:
            assert _memory_findings(p.profile) == []
            continue
        assert p.profile.table("steps").column("capture_on").to_pylist().count(False) > 0
        first = rendered(find_all(p.profile)[0])
        assert first.id == "memory-growth", first.seen
        assert first.numbers["growth_bytes_per_step"] == pytest.approx(2 * MIB + 10 * 1024, rel=0.02)
        assert "did not count the" in first.seen[0] and "autograd graph" in first.fix
        assert first.where[0] == f"{HERE}:{line_of(SOURCE, '# the predictions')}"


def test_a_loss_summed_with_its_graph_keeps_every_step(tmp_path: Path) -> None:
    model = torch.nn.Sequential(*(m for _ in range(3) for m in (torch.nn.Linear(256, 256), torch.nn.GELU())))
    batch = torch.randn(512, 256)
    for fixed in (False, True):
        total: object = 0.0
        with tenprof.profile(str(tmp_path / str(fixed)), overhead_steps=0) as p:
            for _ in range(9):
                with torch.no_grad() if fixed else _nothing():
                    loss = model(batch).square().mean()
                total = total + (loss.item() if fixed else loss)  # type: ignore[operator]
                p.step()
        found = [rendered(f) for f in find_all(p.profile)]
        if fixed:
            assert _memory_findings(p.profile) == []
        else:
            assert found[0].id == "memory-growth", found[0].seen
            assert "autograd graph" in found[0].fix, found[0].seen


@pytest.mark.parametrize("slow_step", [None, 5])
def test_a_torch_profiler_trace_with_profile_memory_names_the_op(tmp_path: Path, slow_step: int | None) -> None:
    """A slow step (a loaded CI machine's stall, here a sleep) is left out of the judgement, not out of what
    is named as kept: still one block a step."""
    from torch.profiler import ProfilerActivity, profile, schedule

    from tenprof.importers.timeline_import import import_trace
    from tenprof.store.profile import load_profile

    w, x = torch.randn(256, 512), torch.randn(1024, 256)
    kept = []
    with profile(
        activities=[ProfilerActivity.CPU], profile_memory=True, schedule=schedule(wait=1, warmup=1, active=9)
    ) as prof:
        for i in range(11):
            kept.append((x @ w).relu())
            if i == slow_step:
                time.sleep(0.05)
            prof.step()
    prof.export_chrome_trace(str(tmp_path / "trace.json"))
    import_trace(tmp_path / "trace.json", tmp_path / "p", force=False)
    first = rendered(find_all(load_profile(tmp_path / "p"))[0])
    assert first.id == "memory-growth" and first.numbers["growth_bytes_per_step"] == pytest.approx(2 * MIB, rel=0.01)
    assert "from aten::relu, one a step" in first.seen[2] and first.where == []  # the trace has no lines


class _FailingDataset(torch.utils.data.Dataset):  # type: ignore[misc]
    def __len__(self) -> int:
        return 8

    host = False  # the CPU allocator's own failure (1 PiB asked for), else a stand-in for CUDA's

    def __getitem__(self, i: int) -> object:
        if i == 4 and self.host:
            return torch.empty(1 << 50, dtype=torch.uint8)
        if i == 4:
            raise torch.OutOfMemoryError("a stand-in in the worker: Tried to allocate 64.00 MiB")
        return torch.ones(4)


class _HostFailingDataset(_FailingDataset):
    host = True


@pytest.mark.parametrize("host", [False, True])
def test_an_out_of_memory_error_in_a_dataloader_worker_is_the_workers(
    tmp_path: Path, host: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # After the error the loader's shutdown waits for its worker as long as torch's MP_STATUS_CHECK_INTERVAL
    # before it ends it (5 s by default, with or without tenprof): a fifth of a second here, in the loader and
    # in the worker (forked, it inherits the value)
    monkeypatch.setattr(torch.utils.data._utils, "MP_STATUS_CHECK_INTERVAL", 0.2)
    monkeypatch.setattr(torch.utils.data._utils.worker, "MP_STATUS_CHECK_INTERVAL", 0.2)
    dataset = _HostFailingDataset() if host else _FailingDataset()
    loader = torch.utils.data.DataLoader(dataset, batch_size=2, num_workers=1)
    with pytest.raises(RuntimeError) as raised, tenprof.profile(str(tmp_path / "p"), overhead_steps=0) as p:
        for batch in loader:
            batch.sum()
            p.step()
    # The error's traceback holds the loader's iterator, in a cycle with this frame: left to the garbage
    # collector, it can be collected inside a later test's forked DataLoader worker, whose __del__ then shuts
    # down workers not its own ("can only test a child process"; once a worker killed by a segmentation
    # fault in a full CI run). Let go of it here, in the process that owns the workers.
    del raised
    gc.collect()
    first = rendered(find_all(p.profile)[0])
    assert first.id == "out-of-memory" and first.title.startswith("Out of memory in DataLoader worker process 0")
    if host:  # the host's memory ran out: what the worker allocates, not CUDA in the worker
        assert "DefaultCPUAllocator" in first.seen[0] and "host memory" in first.fix and "pin_memory" not in first.fix
    else:
        assert "a stand-in in the worker" in first.seen[0] and "pin_memory=True" in first.fix


def test_a_failed_allocation_in_a_torch_profiler_trace_is_a_post_mortem_at_its_time(tmp_path: Path) -> None:
    # the CPU allocator's own failure: it reports "[OutOfMemory]" to the profiler as CUDA's does; the script
    # catches the error, frees what it kept and goes on: what held the memory is read at the failure
    from torch.profiler import ProfilerActivity, profile

    from tenprof.importers.timeline_import import import_trace
    from tenprof.store.profile import load_profile

    kept = []
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        for _ in range(3):
            kept.append(torch.ones(512, 1024))  # 2 MiB each
        with pytest.raises(RuntimeError, match="can't allocate memory"):
            torch.empty(1 << 50, dtype=torch.uint8)
        kept.clear()
        torch.ones(8).sum()
    prof.export_chrome_trace(str(tmp_path / "trace.json"))
    import_trace(tmp_path / "trace.json", tmp_path / "p", force=False)
    profile_ = load_profile(tmp_path / "p")
    oom = profile_.meta.run.out_of_memory
    assert oom is not None and oom.requested_bytes == 1 << 50 and oom.at_ns > 0 and oom.allocated_bytes >= 6 * MIB
    assert oom.device_type == "cpu"
    first = rendered(find_all(profile_)[0])
    assert first.id == "out-of-memory" and "caught the error" in first.why
    assert "3 blocks of 2.0MiB (6.0MiB) from aten::ones" in " ".join(first.seen)
