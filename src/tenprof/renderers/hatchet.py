"""The call-path tree as hatchet's literal format (`GraphFrame.from_literal`), which Proton's viewer
and other hatchet-based tools read: a list of roots, each {"frame": {...}, "metrics": {...}, "children": [...]}."""

from __future__ import annotations

from typing import Any

from tenprof.analyses.timeline.calltree import Node


def to_literal(tree: Node) -> list[dict[str, Any]]:
    def convert(node: Node) -> dict[str, Any]:
        frame: dict[str, Any] = {"name": node.label, "type": node.kind}
        if node.file:
            frame["file"] = node.file
            frame["line"] = node.line
        return {
            "frame": frame,
            "metrics": {
                "gpu_time_ns (inc)": node.gpu_ns,
                "gpu_time_ns": node.self_gpu_ns,
                "cpu_time_ns (inc)": node.cpu_ns,
                "cpu_time_ns": node.self_cpu_ns,
                "count": node.calls,
            },
            "children": [
                convert(c) for c in sorted(node.children.values(), key=lambda c: (-c.gpu_ns, -c.cpu_ns, c.label))
            ],
        }

    return [convert(tree)]
