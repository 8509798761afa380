"""allocator-churn tells how the memory goes back to the driver (analyses.findings.allocator): in a burst between
ops every step (torch.cuda.empty_cache() in the loop) or a few blocks inside each of many ops (the caching
allocator off: PYTORCH_NO_CUDA_MEMORY_CACHING=1, as in a public MI300X ResNet-18 trace read as empty_cache()),
and reads ROCm's calls (hipMalloc, hipFree) as CUDA's: that trace's 3.35 s in hipFree were "other CUDA calls"
and its first finding idle-gaps, told to warm up its kernels."""

from __future__ import annotations

from pathlib import Path

from tenprof.analyses.findings import find_all
from tenprof.store.profile import Profile
from tests.helpers import imported_events, launch

STEPS, OPS = 5, 12


def _call(name: str, ts: float, dur: float, correlation: int) -> dict[str, object]:
    return {"ph": "X", "cat": "cuda_runtime", "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur,
            "args": {"correlation": correlation}}  # fmt: skip


def _loop(tmp_path: Path, burst: bool, between_ops: bool = False) -> Profile:
    """STEPS marked steps of OPS ops, each taking fresh memory (hipMalloc) and launching a 20 us kernel; each
    block is given back (hipFree, 400 us) inside the op that freed it, or, with `burst`, all of them together
    after the step's ops, outside any op, or, with `between_ops`, each right after its op (Python dropping the
    tensor with no cache to keep it)."""
    events: list[dict[str, object]] = []
    base, correlation = 0.0, 0
    for step in range(STEPS):
        begin = base
        for _ in range(OPS):
            correlation += 1
            events += launch("aten::add", base, 30.0 if burst else 450.0, 8.0, 20.0, correlation)
            events.append(_call("hipMalloc", base + 20.0, 5.0, 10_000 + correlation))
            if between_ops:
                events.append(_call("hipFree", base + 460.0, 400.0, 20_000 + correlation))
            elif not burst:
                events.append(_call("hipFree", base + 40.0, 400.0, 20_000 + correlation))
            base += 40.0 if burst else (870.0 if between_ops else 460.0)
        if burst:
            for _ in range(OPS):
                correlation += 1
                events.append(_call("hipFree", base, 400.0, 20_000 + correlation))
                base += 401.0
        events.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{step}", "pid": 1, "tid": 1,
                       "ts": begin - 1, "dur": base - begin})  # fmt: skip
        base += 10.0
    return imported_events(tmp_path, events)


def test_memory_freed_inside_many_ops_is_a_cache_turned_off(tmp_path: Path) -> None:
    found = {f.id: f for f in find_all(_loop(tmp_path, burst=False))}
    churn = found["allocator-churn"]
    assert "PYTORCH_NO_CUDA_MEMORY_CACHING" in churn.fix
    assert any("as if the allocator cached nothing" in line for line in churn.seen)
    assert any("hipFree" in line for line in churn.seen)


def test_memory_freed_in_a_burst_between_ops_is_an_emptied_cache(tmp_path: Path) -> None:
    found = {f.id: f for f in find_all(_loop(tmp_path, burst=True))}
    churn = found["allocator-churn"]
    assert churn.fix.startswith("Remove torch.cuda.empty_cache()")
    assert any("the cache is emptied" in line for line in churn.seen)


def test_memory_freed_one_block_between_each_op_is_a_cache_turned_off_too(tmp_path: Path) -> None:
    # no release inside an op, but twelve between ops a step, one each: not empty_cache()'s one burst
    churn = {f.id: f for f in find_all(_loop(tmp_path, burst=False, between_ops=True))}["allocator-churn"]
    assert "PYTORCH_NO_CUDA_MEMORY_CACHING" in churn.fix


def test_the_pinned_memory_advice_needs_pinned_allocations() -> None:
    from collections import Counter

    from tenprof.analyses.findings.allocator import CANNOT_KEEP, _fix

    assert "Pinned host buffers" not in _fix(CANNOT_KEEP, Counter({"cuMemCreate": 8, "cuMemMap": 8}))
    assert "Pinned host buffers" not in _fix(CANNOT_KEEP, Counter({"hipFree": 12}))
    assert "Pinned host buffers" in _fix(CANNOT_KEEP, Counter({"cudaHostAlloc": 6, "cudaFreeHost": 6}))
