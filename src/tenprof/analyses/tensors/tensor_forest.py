"""The tensor forest: base tensors are roots, each view a child of the tensor it views.

A storage's tensors form one tree (its base, views of it, views of those). Transformations (`clone`,
`_to_copy`, `copy_`, which give a tensor the values of another in a storage of its own) are not tree
edges but links between trees: the derived tensor stays a root, and `source` names where its values
came from. This keeps parameters roots even when they were moved to the GPU with `.to()`.

Metrics for node size and ordering: `bytes` (its elements' bytes), `uses` (ops that read or wrote it),
`lifetime` (op sequence numbers from its first use to its storage's free).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from tenprof.analyses.timeline.summary import user_frame_of
from tenprof.store.profile import Profile

METRICS = ("bytes", "uses", "lifetime")
_TORCH_FILE = re.compile(r"[/\\](site|dist)-packages[/\\]torch[/\\]|^<")


@dataclass(frozen=True)
class Forest:
    """Columns of the tensors table plus the tree structure; everything indexed by tensor_id."""

    profile: Profile

    @cached_property
    def columns(self) -> dict[str, np.ndarray]:
        t = self.profile.table("tensors")
        out = {name: t.column(name).to_numpy(zero_copy_only=False) for name in t.column_names}
        if len(out["tensor_id"]) and not np.array_equal(out["tensor_id"], np.arange(len(out["tensor_id"]))):
            raise ValueError("tensors table is not numbered 0..n-1")
        return out

    @property
    def size(self) -> int:
        return len(self.columns["tensor_id"])

    @cached_property
    def children(self) -> dict[int, list[int]]:
        kids: dict[int, list[int]] = {}
        for child, parent in enumerate(self.columns["parent_tensor_id"].tolist()):
            if parent >= 0:
                kids.setdefault(parent, []).append(child)
        return kids

    @cached_property
    def roots(self) -> np.ndarray:
        return np.flatnonzero(self.columns["parent_tensor_id"] < 0)

    @cached_property
    def op_count(self) -> int:
        ops = self.profile.table("tensor_ops")
        return int(ops.column("op_seq").to_numpy().max()) + 1 if ops.num_rows else 0

    def metric(self, name: str) -> np.ndarray:
        c = self.columns
        out: np.ndarray
        if name == "bytes":
            out = np.asarray(c["nbytes"], dtype=np.int64)
        elif name == "uses":
            out = np.asarray(c["reads"] + c["writes"], dtype=np.int64)
        elif name == "lifetime":
            end = np.where(c["free_op_seq"] >= 0, c["free_op_seq"], self.op_count)
            out = np.maximum(end - np.maximum(c["first_use_op_seq"], 0), 0).astype(np.int64)
        else:
            raise ValueError(f"unknown metric {name!r}; choose from {', '.join(METRICS)}")
        return out

    def subtree_order(self, root: int) -> list[tuple[int, int]]:
        """(tensor_id, depth) of a tree in depth-first order, children in creation order."""
        out: list[tuple[int, int]] = []
        stack = [(root, 0)]
        kids = self.children
        while stack:
            node, depth = stack.pop()
            out.append((node, depth))
            stack.extend((k, depth + 1) for k in reversed(kids.get(node, [])))
        return out

    def path_to_root(self, tensor_id: int) -> list[int]:
        """The tensor, its parent, ..., its root."""
        parent = self.columns["parent_tensor_id"]
        path = [tensor_id]
        while parent[path[-1]] >= 0:
            path.append(int(parent[path[-1]]))
        return path

    # -- labels
    @cached_property
    def _user_frame(self) -> np.ndarray:
        return user_frame_of(self.profile, "tensor_frames")

    @cached_property
    def _frame_paths(self) -> tuple[list[str], list[int]]:
        f = self.profile.table("tensor_frames")
        return f.column("file").to_pylist(), f.column("parent_frame_id").to_pylist()

    @cached_property
    def _frame_text(self) -> list[str]:
        f = self.profile.table("tensor_frames")
        files = f.column("file").to_pylist()
        lines = f.column("line").to_pylist()
        return [f"{_short(fl)}:{ln}" for fl, ln in zip(files, lines, strict=True)]

    def creator_line(self, tensor_id: int) -> str:
        return self.frame_line(int(self.columns["creator_frame_id"][tensor_id]))

    def frame_line(self, frame: int) -> str:
        """`file:line` of the innermost user frame on a call path (the frame itself when none is)."""
        if frame < 0:
            return ""
        user = int(self._user_frame[frame])
        return self._frame_text[user if user >= 0 else frame]

    def creator_library_line(self, tensor_id: int) -> str:
        """The innermost line outside torch on the creator's path when it is not the user's line (e.g. the
        line of a model library the user's line called into), else ""."""
        frame = int(self.columns["creator_frame_id"][tensor_id])
        if frame < 0:
            return ""
        files, parents = self._frame_paths
        while frame >= 0 and _TORCH_FILE.search(files[frame]):
            frame = parents[frame]
        if frame < 0 or frame == int(self._user_frame[int(self.columns["creator_frame_id"][tensor_id])]):
            return ""
        return self._frame_text[frame]

    def creator_op(self, tensor_id: int) -> str:
        seq = int(self.columns["creator_op_seq"][tensor_id])
        if seq < 0:
            return ""
        return str(self.op_names[seq]) if seq < len(self.op_names) else ""

    @cached_property
    def op_names(self) -> np.ndarray:
        ops = self.profile.table("tensor_ops")
        names = np.full(self.op_count, "", dtype=object)
        names[ops.column("op_seq").to_numpy()] = ops.column("name").to_numpy(zero_copy_only=False)
        return names

    def describe(self, tensor_id: int) -> str:
        """`bfloat16[8, 12, 256, 64] (view, strided)`-style type text."""
        c = self.columns
        shape = ", ".join(str(d) for d in c["shape"][tensor_id])
        return f"{c['dtype'][tensor_id]}[{shape}]"

    def is_contiguous(self, tensor_id: int) -> bool:
        c = self.columns
        expected = 1
        for size, stride in reversed(list(zip(c["shape"][tensor_id], c["stride"][tensor_id], strict=True))):
            if size != 1 and stride != expected:
                return False
            expected *= size
        return True


def _short(path: str) -> str:
    parts = path.replace("\\", "/").split("/")
    return "/".join(parts[-2:]) if len(parts) > 2 else path


@dataclass(frozen=True)
class RootGroup:
    """Trees that repeat (the same tensor made again each step): one representative, their count and
    the metric summed over every tree in the group."""

    representative: int
    members: list[int]
    total: int


def group_roots(forest: Forest, metric: str) -> list[RootGroup]:
    """Roots grouped by what they are (creator op and line, type, and the shape of their view tree),
    largest total first; within a tree, the metric of a root counts its whole subtree."""
    values = forest.metric(metric)
    groups: dict[tuple[object, ...], list[int]] = {}
    totals: dict[tuple[object, ...], int] = {}
    c = forest.columns
    for root in forest.roots.tolist():
        tree = forest.subtree_order(root)
        key = (
            forest.creator_op(root),
            forest.creator_line(root),
            tuple((depth, str(c["view_op"][n]), forest.describe(n)) for n, depth in tree),
        )
        groups.setdefault(key, []).append(root)
        # bytes: a storage's bytes once (views share them); uses and lifetime: summed over the tree
        value = int(values[root]) if metric == "bytes" else int(sum(int(values[n]) for n, _ in tree))
        totals[key] = totals.get(key, 0) + value
    ordered = sorted(groups, key=lambda k: (-totals[k], groups[k][0]))
    return [RootGroup(groups[k][0], groups[k], totals[k]) for k in ordered]
