"""Call-tree transformations keep totals and never merge different files' frames."""

from __future__ import annotations

from tenprof.analyses.timeline.calltree import Node, _finish, flat, hide_frames, prune


def _tree() -> Node:
    root = Node("root", "all")
    lib = root.child("frame", "call:3", "/site-packages/lib.py", 3)
    for model in ("/work/model_a.py", "/work/model_b.py"):
        op = lib.child("frame", "forward:10", model, 10).child("op", "aten::mm")
        op.self_cpu_ns += 5
        op.calls += 1
        kernel = op.child("kernel", "gemm")
        kernel.self_gpu_ns += 100
        kernel.calls += 1
    return _finish(root)


def test_same_function_and_line_in_two_files_stay_two_nodes() -> None:
    tree = hide_frames(_tree(), exclude="site-packages")
    frames = [c for c in tree.children.values() if c.kind == "frame"]
    assert sorted(f.file for f in frames) == ["/work/model_a.py", "/work/model_b.py"]
    assert tree.gpu_ns == 200 and tree.cpu_ns == 10


def test_inclusive_calls_and_pruning() -> None:
    tree = _tree()
    assert tree.metric("calls") == 4 and tree.metric("calls", inclusive=False) == 0
    pruned = prune(tree, "calls", max_depth=2)
    assert pruned.metric("calls") == 4
    assert all(not c.children for child in pruned.children.values() for c in child.children.values())


def test_flat_view_sums_exclusive_time_by_name() -> None:
    rows = flat(_tree(), "gpu_time")
    assert rows[0].kind == "kernel" and rows[0].name == "gemm" and rows[0].self_value == 200
