"""Golden files for every renderer, on real recordings, plus structural checks of the exports.

Regenerate after an intended change with TENPROF_UPDATE_GOLDEN=1 and review the diff.
"""

from __future__ import annotations

import io
import os
from pathlib import Path

import orjson
import pytest
from rich.console import Console

from tenprof.analyses.timeline.calltree import build_tree, flat, hide_frames, prune
from tenprof.cli.report_command import print_report
from tenprof.renderers.hatchet import to_literal
from tenprof.renderers.perfetto import write_perfetto
from tenprof.renderers.text import render_flat, render_tree
from tenprof.report.sections import report_json
from tenprof.store.profile import Profile

GOLDEN = Path(__file__).resolve().parents[1] / "golden"


def _console() -> tuple[Console, io.StringIO]:
    buffer = io.StringIO()
    return Console(file=buffer, width=150, color_system=None, force_terminal=False, highlight=False), buffer


def _check(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("TENPROF_UPDATE_GOLDEN"):
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
    assert path.exists(), f"missing golden file {path}; run with TENPROF_UPDATE_GOLDEN=1"
    assert text == path.read_text(), f"{name} differs from its golden file"


@pytest.mark.parametrize("case", ["conv", "gpt2"])
def test_report_text(rebuilt: dict[str, Profile], case: str) -> None:
    console, buffer = _console()
    print_report(rebuilt[case], console, 8)
    _check(f"{case}.report.txt", buffer.getvalue())


@pytest.mark.parametrize("case", ["conv", "gpt2"])
def test_tree_text(rebuilt: dict[str, Profile], case: str) -> None:
    console, buffer = _console()
    tree = hide_frames(build_tree(rebuilt[case]), exclude="torch/nn")
    render_tree(prune(tree, "gpu_time", max_depth=9, threshold_percent=2.0), console, "gpu_time")
    _check(f"{case}.tree.txt", buffer.getvalue())


def test_flat_text(rebuilt: dict[str, Profile]) -> None:
    console, buffer = _console()
    render_flat(flat(build_tree(rebuilt["conv"]), "gpu_time"), console, "gpu_time", 15)
    _check("conv.flat.txt", buffer.getvalue())


def test_report_json(rebuilt: dict[str, Profile]) -> None:
    _check("conv.report.json", report_json(rebuilt["conv"]))


def test_hatchet(rebuilt: dict[str, Profile]) -> None:
    literal = to_literal(build_tree(rebuilt["matmul64"]))
    _check("matmul64.hatchet.json", orjson.dumps(literal, option=orjson.OPT_INDENT_2).decode())
    # hatchet's literal format: a list of roots; inclusive >= exclusive everywhere; children sum up.
    stack = list(literal)
    while stack:
        node = stack.pop()
        assert set(node) == {"frame", "metrics", "children"} and {"name", "type"} <= set(node["frame"])
        m = node["metrics"]
        assert m["gpu_time_ns (inc)"] == m["gpu_time_ns"] + sum(
            c["metrics"]["gpu_time_ns (inc)"] for c in node["children"]
        )
        stack.extend(node["children"])


def test_perfetto(rebuilt: dict[str, Profile]) -> None:
    buffer = io.BytesIO()
    count = write_perfetto(rebuilt["matmul64"], buffer)
    text = buffer.getvalue().decode()
    _check("matmul64.perfetto.json", text)
    events = orjson.loads(text)["traceEvents"]
    assert len(events) == count
    profile = rebuilt["matmul64"]
    slices = [e for e in events if e["ph"] == "X"]
    assert sum(1 for e in slices if e["cat"] == "kernel") == profile.table("kernels").num_rows
    assert sum(1 for e in slices if e["cat"] == "op") == profile.table("ops").num_rows
    starts = {e["id"] for e in events if e["ph"] == "s"}
    finishes = {e["id"] for e in events if e["ph"] == "f"}
    assert starts == finishes and len(starts) == profile.table("kernels").num_rows + profile.table("transfers").num_rows
    assert any(e["ph"] == "C" for e in events)  # memory counter track
    gpu_tracks = {(e["pid"], e["tid"]) for e in slices if e["cat"] == "kernel"}
    assert all(pid >= 1_000_000 for pid, _ in gpu_tracks)
