"""Identical layers of one module call are not a loop's iterations (analyses.timeline.inferred_steps,
`_inside_one_module_call`). A single forward pass of a model whose blocks are alike (`for block in
self.blocks: x = block(x)`, between an embedding and a head) runs the same calls per block, launches most of
the work and spans most of the pass: every other rule reads it as a loop. tenprof's call-site records tell it
apart: all the blocks' calls share a path inside the model's forward, whose call runs other lines (the
embedding, the head) right before and after them. A constructor building its layers is one call too. The
controls, still inferred: a loop in the user's own function, and a loop whose every iteration only calls one
`nn.Sequential` (its iterations share a path inside the Sequential's forward too, but what flanks them is
more of that line's calls). Traces' with_stack frames are not read: they name a function by its first line,
so one call and many of the same function share a frame."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from tenprof.analyses.timeline.inferred_steps import infer_steps
from tenprof.store.profile import Profile, with_tables
from tenprof.store.schema import TABLES
from tests.helpers import imported_events, launch

BLOCK = ("aten::layer_norm", "aten::linear", "aten::relu", "aten::linear", "aten::add")
BLOCKS = 6
SCRIPT, TORCH = "/job/model.py", "/site-packages/torch/nn/modules/module.py"


@dataclass
class _Frames:
    """A frames table built node by node (the call-site records' shape: one node per line on a path)."""

    rows: list[dict[str, object]]

    def add(self, parent: int, file: str, line: int, function: str) -> int:
        depth = 0 if parent < 0 else int(self.rows[parent]["depth"]) + 1  # type: ignore[call-overload]
        self.rows.append({"frame_id": len(self.rows), "parent_frame_id": parent, "file": file, "line": line,
                          "function": function, "depth": depth, "is_user": file == SCRIPT, "text": None})  # fmt: skip
        return len(self.rows) - 1

    def module_call(self, caller: int, line: int, function: str = "forward") -> int:
        """A module called from `caller`: torch's _call_impl, then the module's `function` at `line`."""
        return self.add(self.add(caller, TORCH, 1789, "_call_impl"), SCRIPT, line, function)


def _recorded(tmp_path: Path, calls: list[tuple[str, int]], frames: _Frames, source: str = "callsite") -> Profile:
    """Each (op, frame) of `calls` on the main thread, one after another, each launching a 20 us kernel; the
    ops' call paths are `frames`, as tenprof's call-site records give them (`source`)."""
    events: list[dict[str, object]] = []
    for i, (name, _) in enumerate(calls):
        events += launch(name, 50.0 * i, 30.0, 8.0, 20.0, i + 1)
    profile = imported_events(tmp_path, events)
    ops = profile.table("ops")
    assert ops.num_rows == len(calls)
    ops = ops.set_column(ops.schema.get_field_index("frame_id"), "frame_id", pa.array([f for _, f in calls]))
    ops = ops.set_column(ops.schema.get_field_index("frame_source"), "frame_source", pa.array([source] * len(calls)))
    return with_tables(profile, {"ops": ops, "frames": pa.Table.from_pylist(frames.rows, schema=TABLES["frames"])})


def _one_forward(tmp_path: Path, source: str = "callsite") -> Profile:
    """One forward pass: an embedding (model.py:21), BLOCKS alike blocks from the loop line (model.py:23), each
    op on its own line of the block's forward, then the head (model.py:24)."""
    frames = _Frames([])
    script = frames.add(-1, SCRIPT, 40, "<module>")
    model = frames.add(script, TORCH, 1789, "_call_impl")
    embed, loop, head = (frames.add(model, SCRIPT, line, "forward") for line in (21, 23, 24))
    block = [frames.module_call(loop, 12 + i) for i in range(len(BLOCK))]
    calls = [("aten::embedding", embed)]
    for _ in range(BLOCKS):
        calls += list(zip(BLOCK, block, strict=True))
    calls.append(("aten::linear", head))
    return _recorded(tmp_path, calls, frames, source)


def test_one_forwards_alike_blocks_between_its_embedding_and_head_are_no_loop(tmp_path: Path) -> None:
    assert infer_steps(_one_forward(tmp_path)) is None  # judged as one pass


def test_a_traces_stack_frames_are_not_read_as_one_call(tmp_path: Path) -> None:
    # the same paths from a with_stack trace: a function's frame stands for all its calls there, so the rule
    # does not apply and the blocks read as iterations, as before
    found = infer_steps(_one_forward(tmp_path, source="stack"))
    assert found is not None and len(found.starts) == BLOCKS


def test_a_constructor_building_its_layers_is_no_loop(tmp_path: Path) -> None:
    # layers made on the GPU (their weights initialised by kernels) in a comprehension in the model's __init__
    frames = _Frames([])
    script = frames.add(-1, SCRIPT, 38, "<module>")
    init = frames.add(frames.add(script, TORCH, 480, "__call__"), SCRIPT, 19, "__init__")
    comprehension = frames.add(init, SCRIPT, 19, "<genexpr>")
    layer = [frames.module_call(comprehension, 7 + i, "__init__") for i in range(3)]
    calls = [(name, frame) for _ in range(BLOCKS) for name, frame in zip(("aten::empty", "aten::uniform_",
             "aten::fill_"), layer, strict=True)]  # fmt: skip
    assert infer_steps(_recorded(tmp_path, calls, frames)) is None


def test_a_loop_in_the_users_function_is_still_inferred(tmp_path: Path) -> None:
    # main() runs the model, then the loss, each iteration: the shared path is main's, a user function
    frames = _Frames([])
    main = frames.add(frames.add(-1, SCRIPT, 50, "<module>"), SCRIPT, 44, "main")
    forward = frames.module_call(frames.add(main, SCRIPT, 45, "main"), 12)
    loss = frames.add(main, SCRIPT, 46, "main")
    calls = [(name, frame) for _ in range(BLOCKS) for name, frame in (("aten::linear", forward),
             ("aten::mse_loss", loss))]  # fmt: skip
    found = infer_steps(_recorded(tmp_path, calls, frames))
    assert found is not None and len(found.starts) == BLOCKS


def test_a_loop_only_calling_a_sequential_is_still_inferred(tmp_path: Path) -> None:
    # every iteration only calls model(batch), an nn.Sequential of a Linear, a GELU and a Linear: all of it
    # shares the path of the Sequential's `input = module(input)`, but what flanks it (the batch made before
    # the loop, the predictions joined after it) is the script's, no other line of the Sequential's forward
    frames = _Frames([])
    top = frames.add(-1, SCRIPT, 50, "<module>")
    before, after = frames.add(-1, SCRIPT, 15, "<module>"), frames.add(-1, SCRIPT, 25, "<module>")
    script = frames.add(top, SCRIPT, 21, "step")
    sequential = frames.add(frames.add(script, TORCH, 1789, "_call_impl"), "/torch/nn/modules/container.py", 250,
                            "forward")  # fmt: skip
    linear, gelu = frames.module_call(sequential, 134), frames.module_call(sequential, 840)
    calls = [(name, frame) for _ in range(BLOCKS) for name, frame in (("aten::linear", linear),
             ("aten::gelu", gelu), ("aten::linear", linear))]  # fmt: skip
    calls = [("aten::randn", before), *calls, ("aten::cat", after)]
    found = infer_steps(_recorded(tmp_path, calls, frames))
    assert found is not None and len(found.starts) == BLOCKS


def test_a_loop_whose_model_builds_something_on_its_first_call_keeps_its_iterations(tmp_path: Path) -> None:
    # `for _ in range(6): model(x)`: the model's forward makes a tensor on its first call only (model.py:30),
    # then runs `return self.net(x)` (model.py:31), a Linear, a ReLU and a Linear. The lazy line flanks the
    # first iteration on one side only: the iterations stay, starting where each call of the net starts
    frames = _Frames([])
    loop = frames.add(-1, SCRIPT, 50, "<module>")
    lazy = frames.module_call(loop, 30)
    net_line = frames.add(int(frames.rows[lazy]["parent_frame_id"]), SCRIPT, 31, "forward")  # type: ignore[call-overload]
    net = [frames.module_call(net_line, 10 + i) for i in range(3)]
    calls = [("aten::ones", lazy)]
    for _ in range(BLOCKS):
        calls += [("aten::linear", net[0]), ("aten::relu", net[1]), ("aten::linear", net[2])]
    profile = _recorded(tmp_path, calls, frames)
    found = infer_steps(profile)
    assert found is not None and len(found.starts) == BLOCKS
    first_linear = profile.column("ops", "start_ns")[1]  # after aten::ones
    assert int(found.starts[0]) == int(first_linear) and found.marker.startswith("aten::linear")
