"""A single pass's layers are not a loop's iterations (analyses.timeline.inferred_steps). Where the recording
runs a backward and no inferred iteration but the last holds any of it, the "iterations" are one pass's layers
and its backward follows them (a public trace of one ResNet-50 forward and backward on a T4, no stacks, was read
as 52 iterations starting at its convolutions). Where most consecutive "iterations" after the first run unlike
calls, they are the blocks between one op's calls in one pass (a 4-layer Llama's, read as 9 iterations starting
at each norm's aten::pow); where they launch little of the work, they are a pass's first blocks (a particle
transformer's convolutions). A loop whose iterations run alike calls is still inferred."""

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


def _forward_pass(
    tmp_path: Path,
    blocks: list[list[str]],
    tail_kernel_us: float = 0.0,
    first_call_us: float = 30.0,
    setup_kernel_us: float = 20.0,
) -> Profile:
    """One forward pass without a backward: an embedding, then each block's ops (one 20 us kernel each) on
    the main thread, each block starting with an RMS norm's aten::pow, then a last norm and the head (its
    kernel `tail_kernel_us` long, where given); the first block's second op takes `first_call_us` on the host
    (a library's cold first call), the embedding's kernel `setup_kernel_us`."""
    events: list[dict[str, object]] = []
    base, correlation = 0.0, 0

    def op(name: str, kernel_us: float = 20.0, host_us: float = 30.0) -> None:
        nonlocal base, correlation
        correlation += 1
        events.extend(launch(name, base, host_us, 8.0, kernel_us, correlation))
        base += max(40.0, kernel_us + 30.0, host_us + 10.0)

    op("aten::embedding", setup_kernel_us)
    for number, block in enumerate(blocks):
        op("aten::pow")
        for position, name in enumerate(block):
            op(name, host_us=first_call_us if number == position == 0 else 30.0)
    op("aten::pow")
    op("aten::linear", tail_kernel_us or 20.0)
    tmp_path.mkdir(exist_ok=True)
    return imported_events(tmp_path, events)


# a Llama layer's calls after each of its two norms
ATTENTION = [
    "aten::linear",
    "aten::linear",
    "aten::linear",
    "aten::scaled_dot_product_attention",
    "aten::linear",
    "aten::add",
]
MLP = ["aten::linear", "aten::linear", "aten::silu", "aten::mul", "aten::linear", "aten::add"]


def test_a_forward_passs_unlike_blocks_between_its_norms_are_not_iterations(tmp_path: Path) -> None:
    # a Llama's four layers without stacks: a norm before each attention block, before each MLP block and
    # before the head (a public trace of a 4-layer Llama on two GPUs was read as 9 iterations starting there)
    assert infer_steps(_forward_pass(tmp_path, [ATTENTION, MLP] * 4)) is None


def test_an_inference_loop_of_alike_iterations_is_still_inferred(tmp_path: Path) -> None:
    # the same calls each time after a first that differs (a prefill before the decode steps)
    found = infer_steps(_forward_pass(tmp_path, [ATTENTION + MLP + ["aten::cat"]] + [ATTENTION + MLP] * 5))
    assert found is not None and len(found.starts) == 6


def test_repeated_calls_launching_little_of_the_work_are_not_iterations(tmp_path: Path) -> None:
    # a pass whose first blocks repeat (a particle transformer's convolution blocks, each starting at
    # batch_norm) before the long part of the work: a cold cuDNN call among them has them span much of the
    # recording, but they launch little of its work
    blocks = [["aten::conv1d", "aten::add_"]] * 5
    assert infer_steps(_forward_pass(tmp_path / "a", blocks)) is not None  # the blocks alone: alike, a loop
    assert infer_steps(_forward_pass(tmp_path / "b", blocks, tail_kernel_us=5000.0, first_call_us=6000.0)) is None


def test_a_loop_after_long_gpu_set_up_is_still_inferred(tmp_path: Path) -> None:
    # weights initialised or data made on the GPU before the loop launch more than the loop does: only what is
    # launched from the loop's start on is weighed
    found = infer_steps(_forward_pass(tmp_path, [ATTENTION + MLP] * 5, setup_kernel_us=1500.0))
    assert found is not None and len(found.starts) == 6  # each norm starts one; the last, the head's


def test_a_loop_that_recompiles_every_iteration_is_still_inferred(tmp_path: Path) -> None:
    # each recompilation names its compiled region anew: "Torch-Compiled Region: 0/1", "0/2", ...
    blocks = [["TorchDynamo Cache Lookup", f"Torch-Compiled Region: 0/{n}", "aten::add"] for n in range(6)]
    found = infer_steps(_forward_pass(tmp_path, blocks))
    assert found is not None and len(found.starts) == 6


def _calls(tmp_path: Path, names: list[str]) -> Profile:
    """One 20 us kernel per call, 50 us apart, on the main thread, in the order given."""
    events: list[dict[str, object]] = []
    for number, name in enumerate(names, start=1):
        events += launch(name, 50.0 * number, 30.0, 8.0, 20.0, number)
    tmp_path.mkdir(exist_ok=True)
    return imported_events(tmp_path, events)


def test_two_iterations_of_which_the_first_holds_few_of_the_seconds_calls_are_no_loop(tmp_path: Path) -> None:
    # a ViT's single forward (a public trace): a few calls after the input's first .to(), then, after its second,
    # the blocks' 251 calls, then a last .to(): read as three iterations of 12, 251 and 0 calls
    attention = ["aten::layer_norm", "aten::linear", "aten::softmax", "aten::linear"]
    mlp = ["aten::layer_norm", "aten::linear", "aten::gelu", "aten::linear", "aten::add"]
    blocks = (attention + mlp) * 6
    single_pass = ["aten::to", "aten::conv2d", "aten::flatten", "aten::to", *blocks, "aten::mean", "aten::to"]
    assert infer_steps(_calls(tmp_path / "pass", single_pass)) is None
    # the control: a loop of three iterations whose first, warm, runs the others' calls and more
    loop = ["aten::to", "aten::zeros", *blocks, "aten::mean"] + ["aten::to", *blocks, "aten::mean"] * 2
    found = infer_steps(_calls(tmp_path / "loop", loop))
    assert found is not None and len(found.starts) == 3
