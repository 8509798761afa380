"""The call-path tree: Python frames -> user scopes -> aten ops -> kernels and transfers.

Built on demand from the tables (the profile is the source of truth); transformations (exclude,
include, depth, threshold) return new trees and never change the one they are given.

Metrics per node, each inclusive (`*_ns`) and exclusive (`self_*_ns`):
- gpu: duration of the kernels and transfers under the node (exclusive: launched by this very op);
- cpu: CPU time inside aten ops (exclusive: an op's self time), and the sampled host time outside
  them (below); Python frames and scopes have no exclusive CPU time of their own;
- calls: how many op instances / kernel launches the node stands for (inclusive: in its subtree).

Host time outside torch ops (the host sampler's samples, where the profile has them) is a `sampled`
leaf named "Python (not in a torch op)" under the frame the thread was at, its sampled time as CPU time
(wall time at that line: a sleep counts): for the threads that ran torch ops, and for the main threads
of the DataLoader's worker processes under a root node of their own.

Placement rules:
- an op's frames are its Python call path (backward ops: the forward op's path);
- a scope sits in that path where it was entered (the frame that ran `with tenprof.scope(...)`, or the
  call of a decorated function), when the op's path passes through that point; otherwise (e.g. a
  `backward` scope around autograd work whose path is the forward one) it sits just above the op;
- backward ops are shown under their forward line with the autograd node name, e.g. `AddmmBackward0`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import numpy.typing as npt

from tenprof.store.profile import Profile

NodeKind = Literal["root", "frame", "scope", "op", "kernel", "transfer", "sampled"]
OUTSIDE_OPS = "Python (not in a torch op)"  # the node of host time the sampler saw outside torch ops
WORKERS = "[DataLoader worker processes]"
METRICS = ("gpu_time", "cpu_time", "calls")


@dataclass
class Node:
    kind: NodeKind
    name: str
    file: str = ""
    line: int = 0
    children: dict[tuple[str, str, str], Node] = field(default_factory=dict)
    self_gpu_ns: int = 0
    self_cpu_ns: int = 0
    calls: int = 0
    gpu_ns: int = 0
    cpu_ns: int = 0
    calls_inc: int = 0

    def child(self, kind: NodeKind, name: str, file: str = "", line: int = 0) -> Node:
        key = (kind, name, file)  # same function:line in two files are two nodes
        found = self.children.get(key)
        if found is None:
            found = Node(kind, name, file, line)
            self.children[key] = found
        return found

    @property
    def label(self) -> str:
        if self.kind == "frame":
            return f"{self.name} ({self.file}:{self.line})"
        if self.kind == "scope":
            return f"[scope] {self.name}"
        return self.name

    def metric(self, name: str, inclusive: bool = True) -> int:
        if name == "gpu_time":
            return self.gpu_ns if inclusive else self.self_gpu_ns
        if name == "cpu_time":
            return self.cpu_ns if inclusive else self.self_cpu_ns
        if name == "calls":
            return self.calls_inc if inclusive else self.calls
        raise ValueError(f"unknown metric {name!r}; choose from {', '.join(METRICS)}")

    def walk(self) -> list[Node]:
        out, stack = [], [self]
        while stack:
            node = stack.pop()
            out.append(node)
            stack.extend(node.children.values())
        return out


def _finish(node: Node) -> Node:
    """Compute inclusive metrics bottom-up (iteratively: call paths can be deep)."""
    order = node.walk()
    for n in reversed(order):
        n.gpu_ns = n.self_gpu_ns + sum(c.gpu_ns for c in n.children.values())
        n.cpu_ns = n.self_cpu_ns + sum(c.cpu_ns for c in n.children.values())
        n.calls_inc = n.calls + sum(c.calls_inc for c in n.children.values())
    return node


def build_tree(profile: Profile) -> Node:
    frames = profile.table("frames")
    f_parent = frames.column("parent_frame_id").to_numpy()
    f_file = frames.column("file").to_pylist()
    f_line = frames.column("line").to_numpy()
    f_func = frames.column("function").to_pylist()

    scopes = profile.table("scopes")
    s_name = scopes.column("name").to_pylist()
    s_parent = scopes.column("parent_scope_id").to_numpy()
    s_frame = scopes.column("frame_id").to_numpy()
    s_insert = scopes.column("insert_depth").to_numpy()

    def frame_path(fid: int) -> list[int]:
        path = []
        while fid >= 0:
            path.append(fid)
            fid = int(f_parent[fid])
        path.reverse()
        return path

    def scope_chain(sid: int) -> list[int]:
        chain = []
        while sid >= 0:
            chain.append(sid)
            sid = int(s_parent[sid])
        chain.reverse()
        return chain

    root = Node("root", "all")
    context_cache: dict[tuple[int, int], Node] = {}
    frame_nodes: dict[int, Node] = {}

    def frame_node(fid: int) -> Node:
        """The node of a frame's path outside any scope: its parent frame's node's child, each made once
        (host samples bring thousands of leaf frames, and each path walked whole was most of a tree)."""
        missing = []
        while fid >= 0 and fid not in frame_nodes:
            missing.append(fid)
            fid = int(f_parent[fid])
        node = frame_nodes[fid] if fid >= 0 else root
        for fr in reversed(missing):
            node = node.child("frame", f"{f_func[fr]}:{f_line[fr]}", f_file[fr], int(f_line[fr]))
            frame_nodes[fr] = node
        return node

    def context(fid: int, sid: int) -> Node:
        key = (fid, sid)
        cached = context_cache.get(key)
        if cached is not None:
            return cached
        if sid < 0 and fid >= 0:
            context_cache[key] = frame_node(fid)
            return context_cache[key]
        path = frame_path(fid)
        chain = scope_chain(sid)
        # Scope s goes before path[k] (k = its insert depth) when the op's path agrees with the path
        # where s was entered up to k; otherwise just above the op (k = len(path)).
        placed: list[tuple[int, int]] = []
        for order, s in enumerate(chain):
            k = int(s_insert[s])
            entered = frame_path(int(s_frame[s])) if s_frame[s] >= 0 else []
            agrees = 0 <= k <= len(path) and len(entered) >= k and entered[:k] == path[:k]
            placed.append((k if agrees else len(path), order))
        placed.sort()
        node = root
        p = 0
        for position, fr in enumerate(path):
            while p < len(placed) and placed[p][0] <= position:
                node = node.child("scope", s_name[chain[placed[p][1]]])
                p += 1
            node = node.child("frame", f"{f_func[fr]}:{f_line[fr]}", f_file[fr], int(f_line[fr]))
        for _, order in placed[p:]:
            node = node.child("scope", s_name[chain[order]])
        if fid < 0 and sid < 0:
            node = root.child("frame", "[no Python frame]")
        context_cache[key] = node
        return node

    ops = profile.table("ops")
    names = ops.column("name").to_pylist()
    parent = ops.column("parent_op_id").to_numpy()
    frame_id = ops.column("frame_id").to_numpy()
    scope_id = ops.column("scope_id").to_numpy()
    self_cpu = ops.column("self_duration_ns").to_numpy()
    op_node: list[Node] = []
    for i in range(len(names)):
        p = int(parent[i])
        base = op_node[p] if p >= 0 else context(int(frame_id[i]), int(scope_id[i]))
        node = base.child("op", names[i])
        node.self_cpu_ns += int(self_cpu[i])
        node.calls += 1
        op_node.append(node)

    _add_sampled(profile, root, context, frame_path, f_func, f_line, f_file, set(ops.column("thread_id").to_pylist()))
    no_op = None
    for table, kind in (("kernels", "kernel"), ("transfers", "transfer")):
        t = profile.table(table)
        for name, op, dur in zip(
            t.column("name").to_pylist(),
            t.column("op_id").to_numpy(),
            t.column("duration_ns").to_numpy(),
            strict=True,
        ):
            if op >= 0:
                base = op_node[int(op)]
            else:
                no_op = no_op or root.child("frame", "[launched outside any op]")
                base = no_op
            node = base.child(kind, name)  # type: ignore[arg-type]
            node.self_gpu_ns += int(dur)
            node.calls += 1
    return _finish(root)


def _add_sampled(
    profile: Profile,
    root: Node,
    context: Callable[[int, int], Node],
    frame_path: Callable[[int], list[int]],
    f_func: list[str],
    f_line: npt.NDArray[np.int64],
    f_file: list[str],
    op_threads: set[int],
) -> None:
    """The sampled host time outside torch ops: of the script's threads that ran ops, and of its
    DataLoader workers (under their own root node)."""
    samples = profile.table("host_samples")
    if samples.num_rows == 0:
        return
    frame = samples.column("frame_id").to_numpy()
    op = samples.column("op_id").to_numpy()
    process = samples.column("process_id").to_numpy()
    thread = samples.column("thread_id").to_numpy()
    weight = samples.column("weight_ns").to_numpy()
    mine = (process == 0) & np.isin(thread, np.array(sorted(op_threads), dtype=np.int64))
    keep = (frame >= 0) & (op < 0) & (mine | ((process != 0) & (thread == process)))  # workers: main threads
    time_at: dict[tuple[int, bool], int] = {}
    for f, worker, w in zip(frame[keep].tolist(), (process[keep] != 0).tolist(), weight[keep].tolist(), strict=True):
        time_at[(f, worker)] = time_at.get((f, worker), 0) + w
    for (f, worker), ns in time_at.items():
        if worker:
            node = root.child("frame", WORKERS)
            for fr in frame_path(f):
                node = node.child("frame", f"{f_func[fr]}:{f_line[fr]}", f_file[fr], int(f_line[fr]))
        else:
            node = context(f, -1)
        node = node.child("sampled", OUTSIDE_OPS)
        node.self_cpu_ns += ns


def _copy_shallow(node: Node) -> Node:
    return Node(node.kind, node.name, node.file, node.line, {}, node.self_gpu_ns, node.self_cpu_ns, node.calls)


def hide_frames(tree: Node, exclude: str | None = None, include: str | None = None) -> Node:
    """A new tree without the frame nodes whose file matches `exclude` (or does not match `include`);
    their children are lifted into the parent and merged with equal siblings."""
    ex = re.compile(exclude) if exclude else None
    inc = re.compile(include) if include else None

    def hidden(node: Node) -> bool:
        if node.kind != "frame" or not node.file:
            return False
        return bool((ex and ex.search(node.file)) or (inc and not inc.search(node.file)))

    def rebuild(source: Node, target: Node) -> None:
        for child in source.children.values():
            if hidden(child):
                # Its own exclusive metrics (none for frames) and children move up to `target`.
                rebuild(child, target)
                continue
            key = (child.kind, child.name, child.file)
            existing = target.children.get(key)
            if existing is None:
                existing = _copy_shallow(child)
                target.children[key] = existing
            else:
                existing.self_gpu_ns += child.self_gpu_ns
                existing.self_cpu_ns += child.self_cpu_ns
                existing.calls += child.calls
            rebuild(child, existing)

    new_root = _copy_shallow(tree)
    rebuild(tree, new_root)
    return _finish(new_root)


def prune(tree: Node, metric: str, max_depth: int | None = None, threshold_percent: float = 0.0) -> Node:
    """A new tree cut below `max_depth` and without nodes under `threshold_percent` of the root's metric."""
    total = tree.metric(metric)
    cut = total * threshold_percent / 100.0

    def copy(node: Node, depth: int) -> Node:
        new = _copy_shallow(node)
        new.gpu_ns, new.cpu_ns, new.calls_inc = node.gpu_ns, node.cpu_ns, node.calls_inc
        if max_depth is not None and depth >= max_depth:
            return new
        for key, child in node.children.items():
            if child.metric(metric) >= cut and (child.metric(metric) > 0 or cut == 0):
                new.children[key] = copy(child, depth + 1)
        return new

    return copy(tree, 0)


@dataclass(frozen=True)
class FlatRow:
    kind: str
    name: str
    file: str
    self_value: int
    total_value: int


def flat(tree: Node, metric: str) -> list[FlatRow]:
    """The 'sorted' view: nodes with the same kind and label summed across the tree, by exclusive metric.

    Inclusive totals are summed only over outermost occurrences, so recursion does not double count."""
    self_sum: dict[tuple[str, str, str], int] = {}
    total_sum: dict[tuple[str, str, str], int] = {}
    stack: list[tuple[Node, frozenset[tuple[str, str, str]]]] = [(tree, frozenset())]
    while stack:
        node, above = stack.pop()
        key = (node.kind, node.label, node.file)
        self_sum[key] = self_sum.get(key, 0) + node.metric(metric, inclusive=False)
        if key not in above:
            total_sum[key] = total_sum.get(key, 0) + node.metric(metric)
        below = above | {key}
        stack.extend((c, below) for c in node.children.values())
    rows = [FlatRow(k[0], k[1], k[2], self_sum[k], total_sum.get(k, 0)) for k in self_sum if k[0] != "root"]
    rows.sort(key=lambda r: (-r.self_value, -r.total_value, r.name))
    return rows
