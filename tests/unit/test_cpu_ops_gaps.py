"""idle-gaps where the host, while the GPU idles, is in torch ops that compute on the CPU and launch nothing (an
input made with torch.randn on the CPU every step, as a public T4 notebook trace had it: 10 ms a step against a
6.9 ms kernel): the advice is to make those tensors on the GPU or ahead of time, not to fuse or batch launches,
which is still the advice where the host's ops are launching small kernels."""

from __future__ import annotations

from pathlib import Path

import orjson

from tenprof.analyses.findings import find_all
from tenprof.cli.main import main
from tenprof.store.profile import Profile, load_profile

STEPS = 5


def _loop(tmp_path: Path, on_cpu: bool) -> Profile:
    """Each 10 ms step: 5 ms of host work, then a 4 ms kernel. The host work is one CPU op (aten::randn, no
    launch) when `on_cpu`, else 25 small ops that each launch a 5 us kernel."""
    events: list[dict[str, object]] = []
    correlation = 0

    def op(name: str, ts: float, dur: float, kernel_us: float | None) -> None:
        nonlocal correlation
        correlation += 1
        events.append({"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur,
                       "args": {"External id": correlation}})  # fmt: skip
        if kernel_us is not None:
            events.extend(
                [
                    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": ts + 2,
                     "dur": 6.0, "args": {"correlation": correlation, "External id": correlation}},
                    {"ph": "X", "cat": "kernel", "name": f"{name}_kernel", "pid": 0, "tid": 7, "ts": ts + 10,
                     "dur": kernel_us,
                     "args": {"correlation": correlation, "device": 0, "stream": 7, "External id": correlation}},
                ]
            )  # fmt: skip

    for step in range(STEPS):
        base = 10_000.0 * step
        events.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{step}", "pid": 1, "tid": 1,
                       "ts": base, "dur": 9_990.0})  # fmt: skip
        if on_cpu:
            op("aten::randn", base + 10, 5_000.0, None)
        else:
            for i in range(25):
                op("aten::add", base + 10 + 200.0 * i, 190.0, 5.0)
        op("aten::mm", base + 5_100, 20.0, 4_000.0)
    trace = tmp_path / "loop.json"
    trace.write_bytes(orjson.dumps({"schemaVersion": 1, "traceEvents": events, "baseTimeNanoseconds": 0}))
    assert main(["import", "--quiet", str(trace), "-o", str(tmp_path / "out")]) == 0
    return load_profile(tmp_path / "out")


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
