"""variance: the same launch is the same op's k-th launch (findings.variance). A compiled region or a graph replay
launches many GEMMs of one kernel and one grid (the grid does not hold the reduced dimension), all under the
region's one set of input shapes: a public compiled transformer's backward (`CompiledFunctionBackward`, RTX 3060)
read 80 different GEMMs as one shape varying 47%, and tests/data's compiled GPT-2 graph replay 108 launches varying
31%. The control: the same launch of the region slowing from step to step is still named."""

from __future__ import annotations

from pathlib import Path

from tenprof.analyses.findings import find_all
from tenprof.store.profile import Profile
from tests.helpers import imported_events, launch, profiler_step

STEPS = 8
KERNEL = "ampere_sgemm_128x64_nn"


def _region_steps(tmp_path: Path, first_us: list[float], second_us: list[float]) -> Profile:
    """STEPS marked steps, each one call of CompiledFunctionBackward (input shapes [[32,256,8192]]) launching
    KERNEL twice with one grid and block: its first launch `first_us[step]` long, its second `second_us[step]`."""
    events: list[dict[str, object]] = []
    correlation = 0
    for step in range(STEPS):
        base = 2_000.0 * step
        events.append(profiler_step(step, base, 1_990.0))
        region = {"ph": "X", "cat": "cpu_op", "name": "CompiledFunctionBackward", "pid": 1, "tid": 1, "ts": base + 5,
                  "dur": 1_000.0, "args": {"Input Dims": [[32, 256, 8192]], "External id": 10_000 + step}}  # fmt: skip
        events.append(region)
        for i, kernel_us in enumerate((first_us[step], second_us[step])):
            correlation += 1
            for event in launch(KERNEL, base + 10 + 400.0 * i, 30.0, 8.0, kernel_us, correlation, ext=10_000 + step):
                if event["cat"] == "cpu_op":
                    continue  # the region is the op
                if event["cat"] == "kernel":
                    event["args"] = {**event["args"], "grid": [4, 128, 2], "block": [128, 1, 1]}  # type: ignore[dict-item]
                events.append(event)
    return imported_events(tmp_path, events)


def test_a_regions_different_gemms_of_one_kernel_are_no_variance(tmp_path: Path) -> None:
    # each step: a 100 us GEMM, then a 300 us one; each the same from step to step
    found = {f.id for f in find_all(_region_steps(tmp_path, [100.0] * STEPS, [300.0] * STEPS))}
    assert "variance" not in found


def test_the_same_launch_of_a_region_varying_is_still_named(tmp_path: Path) -> None:
    # the region's second GEMM takes 300 us in half the steps, 100 us in the others
    slow = [300.0 if step % 2 else 100.0 for step in range(STEPS)]
    found = {f.id: f for f in find_all(_region_steps(tmp_path, [100.0] * STEPS, slow))}
    assert "variance" in found and found["variance"].title.startswith(KERNEL)
