"""A single pass recorded cold (no steps marked, no loop to infer): a kernel launch that takes milliseconds while the
GPU idles is its kernel's module loading on first use, the step decomposition's `cuda_api`, not op dispatch; where
such launches hold a tenth of the pass, cold-start is its first finding, and neither launch-bound nor idle-gaps
charges the same time. Two public traces of a Switch Transformer's cold forward pass on an A100 had one launch of
323 and 497 ms and were told to launch fewer, larger ops."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from tenprof.analyses.findings import find_all, not_judged
from tenprof.analyses.findings.causes import idle_budget_ns
from tenprof.analyses.findings.context import Context
from tenprof.analyses.findings.thresholds import Thresholds
from tenprof.analyses.timeline.step_time import step_time
from tenprof.store.profile import Profile
from tests.helpers import imported_events, launch

FIRST_LAUNCH_US = 50_000.0  # the first launch's module load, as a cold pass has it
SMALL_OPS = 20


def _pass(tmp_path: Path, first_launch_us: float, steps: int = 0) -> Profile:
    """One embedding lookup whose launch takes `first_launch_us`, then SMALL_OPS matmuls of 150 us kernels
    launched 200 us apart; `steps` > 0 repeats the whole as that many marked steps."""
    return _lookups_and_matmuls(
        tmp_path, Shape(iterations=max(steps, 1), slow=0, slow_launch_us=first_launch_us, lookup_us=100,
                        matmul_us=150, apart_us=200, marked=steps > 0)
    )  # fmt: skip


@dataclass(frozen=True)
class Shape:
    iterations: int
    slow: int  # the iteration whose lookup launches for slow_launch_us (8 us in the others)
    slow_launch_us: float
    lookup_us: float  # the lookup's kernel
    matmul_us: float  # each matmul's kernel
    apart_us: float  # between two matmuls' launches, and after the lookup
    marked: bool  # each iteration a ProfilerStep


def _lookups_and_matmuls(tmp_path: Path, shape: Shape) -> Profile:
    """Iterations of an embedding lookup and SMALL_OPS matmuls, as `shape` says."""
    events: list[dict[str, object]] = []
    correlation, base = 0, 0.0
    for step in range(shape.iterations):
        begin, launch_us = base, shape.slow_launch_us if step == shape.slow else 8.0
        correlation += 1
        events += launch("aten::embedding", base, launch_us + 20, launch_us, shape.lookup_us, correlation)
        base += launch_us + shape.apart_us
        for _ in range(SMALL_OPS):
            correlation += 1
            events += launch("aten::mm", base, 30, 10, shape.matmul_us, correlation)
            base += shape.apart_us
        if shape.marked:
            events.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{step}", "pid": 1, "tid": 1,
                           "ts": begin - 1, "dur": base - begin})  # fmt: skip
        base += 100
    return imported_events(tmp_path, events)


def test_a_cold_pass_is_told_to_warm_up_not_to_launch_fewer_ops(tmp_path: Path) -> None:
    profile = _pass(tmp_path, FIRST_LAUNCH_US)
    result = step_time(profile)
    assert not result.marked and not result.inferred  # judged as one pass
    # the module load is the host's time in a CUDA call, not op dispatch
    parts = result.steps[0].parts
    assert parts["cuda_api"] == pytest.approx(FIRST_LAUNCH_US * 1000, rel=0.01)
    assert parts["dispatch"] < 0.1 * parts["cuda_api"]
    found = find_all(profile)
    first = found[0]
    assert first.id == "cold-start" and not first.once
    assert first.cost_ns == pytest.approx(FIRST_LAUNCH_US * 1000, rel=0.01)
    assert first.seen[1].startswith("slowest calls: cudaLaunchKernel") and first.seen[1].endswith("in aten::embedding")
    assert "warm" in first.fix.lower() or "once before" in first.fix
    ids = {f.id for f in found}
    assert "launch-bound" not in ids
    # one cause, one finding: the costs charged to the GPU's idle time never exceed it
    idle_charged = sum(f.cost_ns for f in found if f.id in ("cold-start", "idle-gaps", "launch-bound"))
    assert idle_charged <= idle_budget_ns(Context(profile, Thresholds()))
    assert any("only by its first uses (slow first calls, module loads)" in note for note in not_judged(profile))


def test_the_same_pass_warm_has_no_cold_start(tmp_path: Path) -> None:
    profile = _pass(tmp_path, 8.0)
    assert step_time(profile).steps[0].parts["cuda_api"] == 0
    assert "cold-start" not in {f.id for f in find_all(profile)}


def test_marked_steps_keep_cold_start_a_one_off_of_the_first_step(tmp_path: Path) -> None:
    # the same cold first launch in the first of four marked steps: a one-off beside a steady state, judged by the
    # first step against the others and never charged to the steps' idle time
    profile = _pass(tmp_path, FIRST_LAUNCH_US, steps=4)
    cold = [f for f in find_all(profile) if f.id == "cold-start"]
    assert len(cold) == 1 and cold[0].once and "median step" in cold[0].title


def _loop_with_a_stall(tmp_path: Path, marked: bool) -> Profile:
    """Eight iterations of an embedding lookup and SMALL_OPS small matmuls (5 us kernels launched 50 us apart:
    the host bounds them), the second iteration's lookup launching for 80 ms (a first use's load paid late);
    `marked`: each iteration a ProfilerStep, else none (the iterations are inferred)."""
    return _lookups_and_matmuls(
        tmp_path, Shape(iterations=8, slow=1, slow_launch_us=80_000.0, lookup_us=20, matmul_us=5, apart_us=50,
                        marked=marked)
    )  # fmt: skip


def test_a_stall_that_dwarfs_the_inferred_iterations_comes_first(tmp_path: Path) -> None:
    # no steps marked: the one-off holds far more time than the iterations judged, and leads
    profile = _loop_with_a_stall(tmp_path, marked=False)
    found = find_all(profile)
    assert Context(profile, Thresholds()).inferred is not None
    assert found[0].id == "slow-step" and found[0].once
    assert any(f.id == "launch-bound" for f in found[1:])


def test_with_marked_steps_the_same_stall_ranks_after_the_steps_costs(tmp_path: Path) -> None:
    found = find_all(_loop_with_a_stall(tmp_path, marked=True))
    assert found[0].id == "launch-bound"
    assert "slow-step" in {f.id for f in found[1:]}


def _library_pass(
    tmp_path: Path, first_conv_us: float, once_us: float, cpu_op_us: float = 30.0, setup_us: float = 0.0
) -> Profile:
    """One pass (no loop to infer): a convolution taking `first_conv_us` on the host (a library's handles and
    heuristics: no slow CUDA call in it), a batch norm, a ReLU, a second convolution (30 us), a linear taking
    `once_us` (its only call) and a CPU-only op of `cpu_op_us` that launches nothing; each GPU op launches one
    40 us kernel in 8 us, 100 us after the op before. `setup_us`: before them, a model's .to() of that long
    (starting CUDA), which copies its weights as it ends: set-up, before the pass's first kernel."""
    events: list[dict[str, object]] = []
    base = 0.0
    if setup_us:
        events += [
            {"ph": "X", "cat": "cpu_op", "name": "aten::to", "pid": 1, "tid": 1, "ts": 0.0, "dur": setup_us,
             "args": {"External id": 99}},
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "pid": 1, "tid": 1, "ts": setup_us - 20,
             "dur": 8, "args": {"correlation": 99, "External id": 99}},
            {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0, "tid": 7,
             "ts": setup_us - 10, "dur": 5, "args": {"correlation": 99, "device": 0, "stream": 7, "External id": 99}},
        ]  # fmt: skip
        base = setup_us + 100
    sequence = [("aten::cudnn_convolution", first_conv_us), ("aten::cudnn_batch_norm", 30.0),
                ("aten::clamp_min_", 20.0), ("aten::cudnn_convolution", 30.0), ("aten::addmm", once_us)]  # fmt: skip
    for correlation, (name, op_us) in enumerate(sequence, start=1):
        events += launch(name, base, op_us, 8, 40, correlation)
        base += op_us + 100
    events.append({"ph": "X", "cat": "cpu_op", "name": "aten::randn", "pid": 1, "tid": 1, "ts": base,
                   "dur": cpu_op_us})  # fmt: skip
    return imported_events(tmp_path, events)


def test_a_librarys_slow_first_calls_are_the_cold_passes_start_up(tmp_path: Path) -> None:
    # a ResNet-18's cold forward on an H200 (a public trace): the first cuDNN convolution 141 ms against 32 us for
    # the later ones, the one addmm 56.6 ms, with few slow CUDA calls in them; idle-gaps came first there
    profile = _library_pass(tmp_path, first_conv_us=40_000, once_us=15_000, cpu_op_us=5_000)
    found = find_all(profile)
    first = found[0]
    assert first.id == "cold-start" and not first.once
    # both first calls, not the CPU op (it launched nothing: a cost of every pass, whatever its size)
    assert first.cost_ns == pytest.approx(55_000_000, rel=0.01)
    assert "first calls of 2 op(s)" in first.seen[0]
    assert first.seen[-1].startswith("slowest first calls: aten::cudnn_convolution")
    assert "(its only call)" in first.seen[-1]
    idle = [f for f in found if f.id == "idle-gaps"]
    assert not idle or idle[0].cost_ns < first.cost_ns


def test_set_ups_slow_first_call_before_the_pass_is_not_named_in_it(tmp_path: Path) -> None:
    # HTA's AlexNet benchmark: the model's .to(), which started CUDA, took 29.94 s before the 12.84 s pass and
    # was named its slowest first call
    profile = _library_pass(tmp_path, first_conv_us=40_000, once_us=15_000, setup_us=300_000)
    first = find_all(profile)[0]
    assert first.id == "cold-start"
    assert "first calls of 2 op(s)" in first.seen[0]
    assert "aten::to" not in first.seen[-1] and first.seen[-1].startswith("slowest first calls: aten::cudnn")


def test_a_warm_pass_with_a_slow_once_called_op_below_a_millisecond_is_not_cold(tmp_path: Path) -> None:
    profile = _library_pass(tmp_path, first_conv_us=30, once_us=900)
    assert "cold-start" not in {f.id for f in find_all(profile)}


def _ahead(tmp_path: Path, first_step: int, backlog_us: float) -> Profile:
    """Four marked steps of a loop whose host runs ahead: each queues one 1 ms kernel in 50 us and goes on; the
    first step's kernel starts `backlog_us` after its launch (work queued before the recording began)."""
    events: list[dict[str, object]] = []
    base = 0.0
    for k in range(4):
        events += launch("aten::mm", base + 5, 20, 10, 1000, correlation=k + 1)
        kernel = events[-1]
        if k == 0:
            kernel["ts"] = float(kernel["ts"]) + backlog_us  # type: ignore[arg-type]
        else:  # each kernel waits for the one before it on the stream
            kernel["ts"] = max(float(kernel["ts"]), float(events[-5]["ts"]) + 1000)  # type: ignore[arg-type]
        events.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{first_step + k}", "pid": 1,
                       "tid": 1, "ts": base, "dur": 50})  # fmt: skip
        base += 60
    tmp_path.mkdir()
    return imported_events(tmp_path, events)


def test_a_loop_whose_host_runs_ahead_is_judged_by_its_gpu_work_not_by_a_backlog_before_the_recording(
    tmp_path: Path,
) -> None:
    # without a backlog the steps are alike on the critical path (1 ms each, on the GPU): no cold start, though
    # on the host's clock each takes 50 us against the first's
    assert "cold-start" not in {f.id for f in find_all(_ahead(tmp_path / "a", 15, 0.0))}
    # a trace begun mid-run (ProfilerStep#15): its first kernel waited 5 ms behind work queued before it, which is
    # not the step's own start-up
    assert "cold-start" not in {f.id for f in find_all(_ahead(tmp_path / "b", 15, 5000.0))}
    # the program's own first step (step 0) keeps that wait: nothing ran before it, the wait is its start-up
    cold = [f for f in find_all(_ahead(tmp_path / "c", 0, 5000.0)) if f.id == "cold-start"]
    assert len(cold) == 1 and cold[0].numbers["ratio"] > 4
