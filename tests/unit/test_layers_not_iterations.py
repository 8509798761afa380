"""A forward pass's layers are not a loop's iterations (analyses.timeline.inferred_steps): where the recording
runs a backward and no inferred iteration but the last holds any of it, the "iterations" are one pass's layers
and its backward follows them; a training loop runs a backward in every iteration. A public trace of one
ResNet-50 forward and backward on a T4 (no stacks) was read as 52 iterations starting at its convolutions."""

from __future__ import annotations

from pathlib import Path

from tenprof.analyses.timeline.inferred_steps import infer_steps
from tenprof.store.profile import Profile
from tests.helpers import imported_events, launch

LAYERS = 8


def _backward(at: float, correlation: int) -> list[dict[str, object]]:
    """A backward node on the autograd thread (2) launching one kernel."""
    events = launch("aten::mm", at, 40.0, 8.0, 30.0, correlation)
    for event in events:
        if event["cat"] != "kernel":
            event["tid"] = 2
    wrapper = {"ph": "X", "cat": "cpu_op", "name": "autograd::engine::evaluate_function: MmBackward0", "pid": 1,
               "tid": 2, "ts": at - 1, "dur": 42.0}  # fmt: skip
    return [wrapper, *events]


def _recording(tmp_path: Path, loop: bool) -> Profile:
    """LAYERS calls of a convolution then a ReLU on the main thread, each with a 60 us kernel; `loop`: each is
    an iteration with its own backward node after it, else one backward of LAYERS nodes after them all."""
    events: list[dict[str, object]] = []
    base, correlation = 0.0, 0
    for _ in range(LAYERS):
        for name in ("aten::conv2d", "aten::relu"):
            correlation += 1
            events += launch(name, base, 30.0, 8.0, 60.0, correlation)
            base += 100.0
        if loop:
            correlation += 1
            events += _backward(base, correlation)
            base += 100.0
    if not loop:
        for _ in range(LAYERS):
            correlation += 1
            events += _backward(base, correlation)
            base += 100.0
    return imported_events(tmp_path, events)


def test_one_passes_layers_before_its_backward_are_not_iterations(tmp_path: Path) -> None:
    assert infer_steps(_recording(tmp_path, loop=False)) is None  # judged as one pass


def test_a_training_loop_that_runs_a_backward_each_iteration_is_still_inferred(tmp_path: Path) -> None:
    found = infer_steps(_recording(tmp_path, loop=True))
    assert found is not None and len(found.starts) == LAYERS
