"""On the GPU machine: the numbers the user attaches, through real Triton and NVML.

A Triton kernel declared with `@triton.jit(launch_metadata=fn)` (Proton's convention: flops32, bytes)
gives each of its launches user_metrics rows owned by its "(user kernel)" op; a kernel without
launch_metadata and Inductor's own kernels give none; tenprof.scope's numbers land on every recorded
entry of the scope and tenprof.step's tokens on its step; the GPU's clocks are sampled (nvidia-ml-py)
into gpu_samples, on the trace's clock, and Perfetto draws them.

python -m pytest -m gpu tests/gpu/test_user_metrics_gpu.py
"""

from __future__ import annotations

import io
from pathlib import Path

import orjson
import pytest

from tenprof.analyses.findings import clocks
from tenprof.analyses.findings.context import Context
from tenprof.analyses.findings.thresholds import Thresholds
from tenprof.cli.main import main
from tenprof.renderers.perfetto import write_perfetto
from tenprof.store.profile import load_profile

pytestmark = pytest.mark.gpu

N = 1 << 20

SCRIPT = """\
import torch
import triton
import triton.language as tl

import tenprof


def add_numbers(grid, kernel, args):
    n = args["n"]
    return {"name": f"add n={n}", "flops32": float(n), "bytes": 12 * n}


@triton.jit(launch_metadata=add_numbers)
def add_kernel(x, y, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=mask) + tl.load(y + offs, mask=mask), mask=mask)


@triton.jit
def scale_kernel(x, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(x + offs, tl.load(x + offs, mask=mask) * 0.5, mask=mask)


@torch.compile
def fused(a):
    return (a * 2).relu() + 1


x = torch.randn(N, device="cuda")
y = torch.randn(N, device="cuda")
out = torch.empty_like(x)
n = x.numel()
grid = (triton.cdiv(n, 1024),)
for step in range(8):
    with tenprof.scope("add", flops=float(n), bytes=12.0 * n):
        add_kernel[grid](x, y, out, n, BLOCK=1024)
    scale_kernel[grid](out, n, BLOCK=1024)
    fused(out)
    for _ in range(20):  # enough GPU work for NVML to find it busy
        out = torch.sin(out)
    tenprof.step(tokens=4096)
torch.cuda.synchronize()
""".replace("N, device", f"{N}, device")


def test_launch_metadata_scopes_tokens_and_gpu_clocks(tmp_path: Path) -> None:
    pytest.importorskip("triton")
    pytest.importorskip("pynvml")
    script = tmp_path / "numbers.py"
    script.write_text(SCRIPT)
    out = tmp_path / "prof"
    assert main(["run", "--quiet", "-o", str(out), str(script)]) == 0
    profile = load_profile(out)
    status = profile.meta.passes["timeline"]
    assert "GPU clocks not sampled" not in status.reason, status.reason

    ops = profile.table("ops").to_pydict()
    metrics = profile.table("user_metrics").to_pydict()
    rows = list(zip(metrics["owner"], metrics["owner_id"], metrics["metric"], metrics["value"], strict=True))
    launches: dict[int, dict[str, float]] = {}
    for owner, owner_id, name, value in rows:
        if owner == "launch":
            launches.setdefault(owner_id, {})[name] = value
    add_ops = [i for i, name in enumerate(ops["name"]) if name == "(user kernel) add_kernel"]
    scale_ops = [i for i, name in enumerate(ops["name"]) if name == "(user kernel) scale_kernel"]
    print("add ops", len(add_ops), "scale ops", len(scale_ops), "launch rows", len(launches))
    assert add_ops and scale_ops
    # every launch of the kernel with launch_metadata, and only those, have its numbers (Triton's own keys
    # and the name left out); not the plain kernel, not Inductor's
    assert sorted(launches) == add_ops
    assert all(numbers == {"flops32": float(N), "bytes": 12.0 * N} for numbers in launches.values())

    scopes = profile.table("scopes").to_pydict()
    add_scopes = [i for i, name in enumerate(scopes["name"]) if name == "add"]
    by_scope: dict[int, dict[str, float]] = {}
    for owner, owner_id, name, value in rows:
        if owner == "scope":
            by_scope.setdefault(owner_id, {})[name] = value
    assert sorted(by_scope) == add_scopes and add_scopes
    assert all(numbers == {"flops": float(N), "bytes": 12.0 * N} for numbers in by_scope.values())

    steps = profile.table("steps").to_pydict()
    assert [t for t, n in zip(steps["tokens"], steps["step"], strict=True) if n < 8] == [4096] * 8

    samples = profile.table("gpu_samples").to_pydict()
    print("gpu samples", len(samples["ts_ns"]), "first", {k: v[:1] for k, v in samples.items()})
    assert len(samples["ts_ns"]) >= 2 and set(samples["device"]) == {0}
    assert all(0 < s <= m + 1 for s, m in zip(samples["sm_clock_mhz"], samples["max_sm_clock_mhz"], strict=True))
    assert all(p > 0 for p in samples["power_w"]) and all(t > 0 for t in samples["temperature_c"])
    # on the trace's clock: inside the recording, from the first step's start (the sampler starts with the
    # capture) to the last one's end (it reads once more as the capture stops)
    lo, hi = min(steps["start_ns"]), max(steps["end_ns"])
    assert lo - 100_000_000 <= min(samples["ts_ns"]) and max(samples["ts_ns"]) <= hi + 100_000_000
    # the GPU is busy through the steps: NVML sees it at work there, and off its idle clock
    busy = [r for t, r in zip(samples["ts_ns"], samples["clock_reasons"], strict=True) if lo <= t <= hi and r == 0]
    print("samples in the steps with no clocks-event reason:", len(busy))
    print("clocks finding:", clocks.check(Context(profile, Thresholds())))

    # the report's performance model shows each, with the rate over the kernel time inside it
    from tenprof.analyses.perf_model import perf_model

    model = perf_model(profile)
    assert model is not None
    shown = {(u.owner, u.name): u for u in model.user}
    launch, scope = shown[("launch", "(user kernel) add_kernel")], shown[("scope", "add")]
    assert launch.calls == len(add_ops) and launch.metrics["flops32"] == float(N) * len(add_ops)
    assert scope.calls == len(add_scopes) and launch.gpu_ns > 0 and scope.gpu_ns >= launch.gpu_ns
    assert launch.tflops_per_s is not None
    assert launch.gbytes_per_s == pytest.approx(12.0 * N * launch.calls / launch.gpu_ns)
    # no NVML reads on the script's thread: the host sampler never sees pynvml
    frames = profile.table("frames").column("file").to_pylist()
    sampled = set(profile.table("host_samples").column("frame_id").to_pylist())
    assert not any("pynvml" in frames[f] for f in sampled if f >= 0)

    trace = io.BytesIO()
    write_perfetto(profile, trace)
    names = {e["name"] for e in orjson.loads(trace.getvalue())["traceEvents"] if e["ph"] == "C"}
    assert {"GPU 0 SM clock", "GPU 0 power", "GPU 0 temperature"} <= names
