"""On the GPU machine: `tenprof run` on CUDA agrees with torch.profiler and attributes every kernel.

python -m pytest -m gpu tests/gpu
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tenprof.analyses.timeline.summary import attribution
from tenprof.cli.main import main
from tenprof.cli.run_command import default_capture
from tenprof.store.profile import load_profile

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.gpu


def test_cuda_is_there() -> None:
    torch = pytest.importorskip("torch")
    assert torch.cuda.is_available(), "the gpu tests need a CUDA device"


def test_run_on_cuda_matches_torch_profiler_and_attributes_every_kernel(tmp_path: Path) -> None:
    out = tmp_path / "prof"
    example = ROOT / "examples" / "matmul_add.py"
    assert main(["run", "--quiet", "--verify", "-o", str(out), str(example), "--size", "2048", "--steps", "5"]) == 0
    profile = load_profile(out)
    assert profile.meta.gpus and profile.meta.cuda_version
    kernels = profile.table("kernels")
    assert kernels.num_rows >= 10
    names = set(kernels.column("name").to_pylist()) | set(profile.table("transfers").column("name").to_pylist())
    ours_us = (kernels.column("duration_ns").to_numpy().sum() + profile.column("transfers", "duration_ns").sum()) / 1e3
    if default_capture() == "native-cupti":
        # no torch.profiler session runs beside tenprof's own CUPTI client (one CUPTI client a process), so
        # there are no totals of torch's to set against: the parity benchmark compares the two captures
        assert "torch_key_averages_self_device_us" not in profile.meta.checks
    else:
        by_key = profile.meta.checks["torch_key_averages_self_device_us"]
        torch_us = sum(v for k, v in by_key.items() if k in names)
        assert abs(ours_us - torch_us) <= 0.01 * torch_us
    a = attribution(profile)
    # TENPROF_OPS=sampled (experimental): the stretch after the last step mark may run with the op
    # callbacks off and match no recorded step (this example's final checksum, 12% of its kernel time on an
    # H200): those kernels have no op and are said so; every other kernel has its op and line
    unmatched = (profile.meta.timeline.op_copy or {}).get("unmatched") or []
    assert set(unmatched) <= {max(profile.table("steps").column("step").to_pylist())}
    assert (a.to_op_ns + a.uncopied_ns) >= 0.99 * a.kernel_time_ns
    assert (a.to_user_line_ns + a.uncopied_ns) >= 0.99 * a.kernel_time_ns
    assert (kernels.column("grid_x").to_numpy() > 0).all() and (kernels.column("block_x").to_numpy() > 0).all()
    assert (kernels.column("registers_per_thread").to_numpy() > 0).all()
    assert np.isin(["aten::mm", "aten::add"], profile.table("ops").column("name").to_pylist()).all()


def test_in_process_profile_on_cuda(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    import tenprof

    with tenprof.profile(str(tmp_path / "p")) as p:
        for _ in range(3):
            x = torch.randn(512, 512, device="cuda")
            (x @ x).relu().sum().item()
            p.step()
    profile = p.profile
    assert profile.table("kernels").num_rows >= 9
    assert attribution(profile).user_line_percent >= 99.0
    assert profile.table("steps").num_rows == 4


EXITS_AFTER_PROFILE = """
import sys, torch, tenprof
with tenprof.profile(sys.argv[1]) as p:
    for _ in range(3):
        x = torch.randn(256, 256, device="cuda")
        (x @ x).sum()
        p.step()
print("profiled", flush=True)
"""


def test_a_script_ending_right_after_an_in_process_profile_exits(tmp_path: Path) -> None:
    """Kineto's CUPTI teardown waits for a CUDA call after the stop; none follows here, and before
    tenprof.capture.kineto_teardown the process never exited (H200, 2026-12-02)."""
    import gzip
    import json
    import subprocess
    import sys

    out = tmp_path / "p"
    done = subprocess.run(
        [sys.executable, "-c", EXITS_AFTER_PROFILE, str(out)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "profiled" in done.stdout
    sidecars = list(out.rglob("callsites.json.gz"))
    assert sidecars, "no sidecar written"
    wait = json.loads(gzip.decompress(sidecars[0].read_bytes()))["cupti_teardown_wait"]
    assert wait["threads"] >= 1 and wait["left"] == 0, wait


def test_teardowns_seen_through_at_each_stop_leave_none_waiting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """TENPROF_TEARDOWN_AT_STOP=1 (experimental): every stop's CUPTI teardown has ended by the next session's
    start, so the steps run un-profiled between them had CUPTI detached (the sidecar's
    cupti_teardowns_pending: [step, still waiting, started so far] at each start and at the end)."""
    import gzip
    import json

    if default_capture() == "native-cupti":
        pytest.skip("tenprof's own CUPTI client starts no Kineto teardown")
    monkeypatch.setenv("TENPROF_TEARDOWN_AT_STOP", "1")
    out = tmp_path / "prof"
    example = ROOT / "examples" / "small_mlp.py"
    assert main(["run", "--quiet", "-o", str(out), str(example), "--steps", "24", "--warmup", "2"]) == 0
    sidecar = json.loads(gzip.decompress((out / "timeline" / "raw" / "callsites.json.gz").read_bytes()))
    pending = sidecar["cupti_teardowns_pending"]
    assert len(pending) >= 2 and pending[-1][2] >= 2, pending  # at least two stops seen
    assert all(waiting == 0 for _, waiting, _ in pending), pending


GPU_AHEAD_SCRIPT = """
import torch, tenprof
x = torch.ones(1, device="cuda")
for step in range(15):
    torch.cuda._sleep(SPIN)  # the GPU's work of the step; the host only queues it and goes on
    x += 1
    tenprof.step()
torch.cuda.synchronize()
"""


def test_timed_steps_are_timed_on_the_gpus_clock_where_the_host_runs_ahead(tmp_path: Path) -> None:
    """A loop whose host only queues a long kernel a step: the host's clock reads a timed step in microseconds,
    the CUDA events at its boundaries (capture/timed_gpu_periods.py) read the kernel's time, and the report's
    un-profiled step is theirs."""
    import gzip
    import json

    import torch

    from tenprof.analyses.timeline.overhead import measure

    # calibrate the spin: about 4 ms of GPU time a step on whatever card this is
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda._sleep(1_000_000)  # warm
    start.record()
    torch.cuda._sleep(10_000_000)
    end.record()
    end.synchronize()
    spin = int(10_000_000 * 4.0 / start.elapsed_time(end))
    script = tmp_path / "ahead.py"
    script.write_text(GPU_AHEAD_SCRIPT.replace("SPIN", str(spin)))
    out = tmp_path / "prof"
    assert main(["run", "--quiet", "-o", str(out), str(script)]) == 0
    sidecar = json.loads(gzip.decompress((out / "timeline" / "raw" / "callsites.json.gz").read_bytes()))
    periods = dict(sidecar["timed_gpu_ns"])
    assert sorted(periods) == [9, 10, 11], periods  # the default plan's timed steps, and only they
    bounds = sidecar["step_bounds"]
    host = {n: bounds[n][0] - bounds[n - 1][1] for n in periods}
    for n, ns in periods.items():
        assert 3.5e6 < ns < 5.5e6, (n, ns)  # the spin's time, within what the card's clock lets it vary
        assert host[n] < ns / 2, (n, host[n], ns)  # the host queued it far faster
    o = measure(load_profile(out))
    assert o.timed_unprofiled_step_ns == pytest.approx(sorted(periods.values())[1], rel=0.05)
