"""Which ops hand the GPU work (analyses.timeline.gpu_work_ops), one answer for the findings that ask: by the
kernels attributed to an op or an op nested in it, and by a launch inside its time on its own thread."""

from __future__ import annotations

from pathlib import Path

from tenprof.analyses.timeline.gpu_work_ops import ops_handing_gpu_work
from tests.helpers import imported_events, launch


def _op(name: str, ts: float, dur: float, tid: int = 1, ext: int = 0) -> dict[str, object]:
    return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": tid, "ts": ts, "dur": dur,
            "args": {"External id": ext}}  # fmt: skip


def test_an_op_hands_the_gpu_work_through_its_own_kernels_a_nested_ops_or_a_launch_in_its_time(
    tmp_path: Path,
) -> None:
    events = [
        # an op whose nested op launches the kernel: both hand the GPU work
        _op("aten::linear", 0, 200, ext=10),
        *launch("aten::addmm", 10, op_us=100, launch_us=8, kernel_us=50, correlation=11),
        # an op on CPU tensors alone
        _op("aten::add", 300, 40, ext=12),
        # a compiled region whose launch no op is attributed (its own External id matches no op), on its thread
        _op("CompiledFunction", 400, 100, ext=13),
        {"ph": "X", "cat": "cuda_runtime", "name": "cuLaunchKernel", "pid": 1, "tid": 1, "ts": 420, "dur": 6,
         "args": {"correlation": 99, "External id": 9999}},
        # an op on another thread during that launch: the launch is not its
        _op("aten::copy_", 410, 30, tid=2, ext=14),
    ]  # fmt: skip
    profile = imported_events(tmp_path, events)
    ops = profile.table("ops").to_pydict()
    handing = ops_handing_gpu_work(profile)
    by_name = {name: bool(h) for name, h in zip(ops["name"], handing.tolist(), strict=True)}
    assert by_name == {
        "aten::linear": True,
        "aten::addmm": True,
        "aten::add": False,
        "CompiledFunction": True,
        "aten::copy_": False,
    }
