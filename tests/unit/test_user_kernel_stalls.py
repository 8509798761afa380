"""Counters and stalls of the kernels the script launches itself (issue 20), on an H100 recording
(tests/data/stalls/user_kernels: `tenprof run --passes timeline,counters,stalls examples/user_kernels.py
--steps 3`, one ncu run): the Triton gather, launched in no aten op, is replayed once per signature as
"(user kernel) gather_kernel" with no scope asked for, its stalls are blamed on the scalar load of the
gather (not the vector loads of x and the index), and its metrics reach its launch line."""

from __future__ import annotations

from collections import defaultdict

from tenprof.analyses.kernels.stalls import stall_rollup
from tests.conftest import DATA
from tests.helpers import recording

GATHER_OP = "(user kernel) gather_kernel"
EXAMPLE = DATA.parent.parent / "examples" / "user_kernels.py"


def _line(text: str) -> int:
    return next(i + 1 for i, t in enumerate(EXAMPLE.read_text().splitlines()) if text in t)


def test_the_gather_is_blamed_on_its_scalar_load_at_the_gather_line() -> None:
    profile = recording(DATA / "stalls" / "user_kernels")
    kernel = next(k for k in profile.table("stall_kernels").to_pylist() if k["op"] == GATHER_OP)
    assert kernel["name"] == "gather_kernel" and not kernel["scope"]
    sass = {r["pc"]: r for r in profile.table("sass").to_pylist() if r["replay_id"] == kernel["replay_id"]}
    blame: dict[int, float] = defaultdict(float)
    for r in profile.table("blame").to_pylist():
        if r["replay_id"] == kernel["replay_id"] and r["reason"] == "long_scoreboard":
            blame[r["blamed_pc"]] += r["samples"]
    loads = {pc: r for pc, r in sass.items() if r["opcode"] == "LDG"}
    by_line: dict[int, float] = defaultdict(float)
    for pc, r in loads.items():
        by_line[r["line"]] += blame.get(pc, 0.0)
    gather, x, index = _line("the random gather"), _line("x = tl.load"), _line("idx = tl.load")
    assert set(by_line) == {gather, x, index}  # Triton's line info, read with ncu's source view
    assert by_line[gather] > 1.5 * max(by_line[x], by_line[index]) > 0
    top = max(loads, key=lambda pc: blame.get(pc, 0.0))
    assert loads[top]["line"] == gather and ".128" not in loads[top]["text"]  # scalar, not the vector loads


def test_the_user_kernels_metrics_reach_their_launch_line() -> None:
    profile = recording(DATA / "stalls" / "user_kernels")
    rows = {r.op: r for r in stall_rollup(profile)}
    launch = _line("the user's Triton kernel")
    assert rows[GATHER_OP].line == f"examples/user_kernels.py:{launch}"
    # the CUDA extension's function (a pybind function, no aten op) is replayed and placed the same way
    extension = _line("the extension's kernel")
    assert rows["(user kernel) scale"].line == f"examples/user_kernels.py:{extension}"
    # and so is the function of the library called through ctypes, at the line in the helper calling it
    assert rows["(user kernel) launch_add_one"].line == f"examples/user_kernels.py:{_line('library.launch_add_one(')}"
    add_one = next(k for k in profile.table("stall_kernels").to_pylist() if k["op"] == "(user kernel) launch_add_one")
    assert add_one["name"] == "add_one"
    ops = profile.table("ops").column("name").to_pylist()
    kernels = profile.table("kernel_counters").to_pylist()
    k_ops = profile.table("kernels").column("op_id").to_pylist()
    matched = [k for k in kernels if k["kernel_id"] >= 0 and ops[k_ops[k["kernel_id"]]] == GATHER_OP]
    assert matched  # the counters pass's replay joined to the timeline's user-kernel launches


def test_the_tensor_stall_cost_charges_the_gathered_table() -> None:
    # tests/data/tensor_cost/user_kernels (H100: timeline, tensors, stalls, accesses on the same script,
    # 2 steps): the gather kernel's memory stalls go to the tensors it read, the 256 MB table most (its
    # loads are the random ones), and none of the tensors it reads is "made and never read" any more;
    # the ctypes library's kernel is charged too.
    from tenprof.analyses.tensors.memory import memory_report
    from tenprof.analyses.tensors.tensor_forest import Forest
    from tenprof.analyses.tensors.tensor_stall_cost import tensor_stall_cost

    profile = recording(DATA / "tensor_cost" / "user_kernels")
    forest = Forest(profile)
    gather = [c for c in tensor_stall_cost(profile) if c.tensor_id >= 0 and "gather_kernel" in c.kernels]
    table, x, index = (
        f"examples/user_kernels.py:{_line(text)}" for text in ("table = torch.randn", "x = torch.randn", "idx = torch")
    )
    charged = {forest.creator_line(c.tensor_id): c for c in gather}
    assert set(charged) == {table, x, index}
    assert charged[table].samples > 1.5 * max(charged[x].samples, charged[index].samples)
    assert GATHER_OP in charged[table].ops
    dead = {forest.creator_line(d.tensor_id) for d in memory_report(profile).dead}
    assert not dead & {table, x, index}
    # the extension's kernel reads `out` (made by empty_like): its stalls are charged there
    out = f"examples/user_kernels.py:{_line('out = torch.empty_like')}"
    scale = [c for c in tensor_stall_cost(profile) if c.tensor_id >= 0 and "scale_kernel" in c.kernels]
    assert {forest.creator_line(c.tensor_id) for c in scale} == {out}
    # the ctypes library's kernel gets raw pointers, not tensors: its loads are found among the live
    # tensors by address, and land on `scaled`, the tensor it adds one to
    scaled = f"examples/user_kernels.py:{_line('scaled = torch.empty_like')}"
    add_one = [c for c in tensor_stall_cost(profile) if c.tensor_id >= 0 and "add_one" in c.kernels]
    assert {forest.creator_line(c.tensor_id) for c in add_one} == {scaled}
