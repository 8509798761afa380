"""On the GPU machine: `TENPROF_OPS=sampled` under tenprof's own CUPTI client (ops recorded in the steps the
input sampling asks in alone, the others' copied from a recorded step that launched the same work:
capture/op_copy.py), set beside the same script recorded with every step's ops. The small MLP repeats one
step, so the copy must give every kernel and every allocator sample the op, line and step the full
recording gives it, and the launch digest must read every steady step as its kind's.

python -m pytest -m gpu tests/gpu/test_gpu_op_copy.py
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from tenprof.analyses.timeline.attribution_keys import kernel_keys, memory_keys
from tenprof.analyses.timeline.summary import attribution
from tenprof.cli.main import main
from tenprof.store.profile import Profile, load_profile

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.gpu
STEPS = 40


def _record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ops: str) -> Profile:
    with monkeypatch.context() as env:
        if ops:
            env.setenv("TENPROF_OPS", ops)
        else:
            env.delenv("TENPROF_OPS", raising=False)
        out = tmp_path / (ops or "every")
        argv = ["run", "--quiet", "--capture", "native-cupti", "--overhead-steps", "0", "-o", str(out)]
        assert main([*argv, str(ROOT / "examples/small_mlp.py"), "--steps", str(STEPS)]) == 0
    return load_profile(out)


def test_ops_copied_by_their_launches_attribute_as_ops_recorded_in_every_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    full = _record(tmp_path, monkeypatch, "")
    sampled = _record(tmp_path, monkeypatch, "sampled")
    copy = sampled.meta.timeline.op_copy
    print("op copy", copy, "input sampling", sampled.meta.timeline.input_sampling)
    assert copy is not None and full.meta.timeline.op_copy is None
    last = max(sampled.table("steps").column("step").to_pylist())
    # the steady steps copied; none changed its launches; none left without ops but the partial last one
    assert copy["copied_steps"] >= STEPS - 10 and copy["launches_changed"] == 0 and set(copy["unmatched"]) <= {last}
    a = attribution(sampled)
    assert a.op_percent == pytest.approx(100.0) and a.user_line_percent == pytest.approx(100.0)

    def by_op(keys: list[tuple[object, ...]]) -> Counter[tuple[object, ...]]:
        return Counter(key[:3] for key in keys)  # (op, line, step): two runs' kernels last differently

    assert by_op(kernel_keys(sampled)) == by_op(kernel_keys(full))
    assert Counter(memory_keys(sampled)) == Counter(memory_keys(full))
