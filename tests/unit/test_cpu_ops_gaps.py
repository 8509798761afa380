"""idle-gaps where the host, while the GPU idles, is in torch ops that compute on the CPU and launch nothing (an
input made with torch.randn on the CPU every step, as a public T4 notebook trace had it: 10 ms a step against a
6.9 ms kernel): the advice is to make those tensors on the GPU or ahead of time, not to fuse or batch launches,
which is still the advice where the host's ops are launching small kernels."""

from __future__ import annotations

from pathlib import Path

from tenprof.analyses.findings import find_all
from tenprof.store.profile import Profile
from tests.helpers import imported_events, launch, profiler_step

STEPS = 5


def _loop(tmp_path: Path, on_cpu: bool) -> Profile:
    """Each 10 ms step: 5 ms of host work, then a 4 ms kernel. The host work is one CPU op (aten::randn, no
    launch) when `on_cpu`, else 25 small ops that each launch a 5 us kernel."""
    events: list[dict[str, object]] = []
    correlation = 0
    for step in range(STEPS):
        base = 10_000.0 * step
        events.append(profiler_step(step, base, 9_990.0))
        if on_cpu:
            events.append({"ph": "X", "cat": "cpu_op", "name": "aten::randn", "pid": 1, "tid": 1,
                           "ts": base + 10, "dur": 5_000.0})  # fmt: skip
        else:
            for i in range(25):
                correlation += 1
                events += launch("aten::add", base + 10 + 200.0 * i, 190.0, 6.0, 5.0, correlation)
        correlation += 1
        events += launch("aten::mm", base + 5_100, 20.0, 6.0, 4_000.0, correlation)
    return imported_events(tmp_path, events)


def test_the_host_making_tensors_on_the_cpu_is_told_to_make_them_on_the_gpu(tmp_path: Path) -> None:
    idle = {f.id: f for f in find_all(_loop(tmp_path, on_cpu=True))}["idle-gaps"]
    assert idle.fix.startswith("The host computes with torch on the CPU between the GPU's work (aten::randn)")
    assert "device='cuda'" in idle.fix and "fuse" not in idle.fix
    # the host's time in the gaps: 5 ms of randn in ops, 1 ms of Python between the steps' ops
    assert any("in torch ops 84% (84% in ops that ran on the CPU and launched no GPU work: aten::randn" in line
               for line in idle.seen)  # fmt: skip


def test_a_host_launching_small_kernels_keeps_the_launch_advice(tmp_path: Path) -> None:
    found = {f.id: f for f in find_all(_loop(tmp_path, on_cpu=False))}
    idle = found.get("idle-gaps") or found["launch-bound"]
    assert "on the CPU" not in idle.fix and "fuse" in idle.fix.lower()
    assert not any("launched no GPU work" in line for line in idle.seen)
