"""The report as one self-contained HTML page (`tenprof export --format html`, `tenprof run --html`).

The page holds the JSON report (`sections.report_data`: every section of the registry, as `--json` gives
it) and the data only pictures need: the call tree (pruned to the nodes holding at least 0.05% of the
GPU or CPU time, so that a large run's page stays small), the allocated memory over time (at most 2000
points: the peaks of each bucket kept; the peak marked is the summary's, the one the text report prints),
and the tensor and blame forests as SVG when Graphviz's `dot` is installed (else the forest's text). Its
script and style are inlined from `html_assets/`: nothing is fetched, so the page opens from a scratch
disk or a CI artifact. The script draws every section from the data; a section it has no drawing for is
shown as its JSON, so a section added to the registry appears in the page too.
"""

from __future__ import annotations

from importlib import resources
from itertools import pairwise
from pathlib import Path
from typing import IO, Any

import numpy as np
import orjson

from tenprof.analyses.timeline.calltree import Node, build_tree
from tenprof.analyses.timeline.summary import allocated_totals, recording_start
from tenprof.errors import UsageError
from tenprof.report.sections import ReportOptions, report_data
from tenprof.store.profile import Profile
from tenprof.store.schema import Pass

TREE_MIN_SHARE = 0.0005  # of the root's GPU or CPU time: smaller nodes are folded into their parent
MEMORY_POINTS = 2000


def page_data(
    profile: Profile, options: ReportOptions | None = None, extra: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Everything the page draws: the JSON report, the pictures' data, and `extra` sections the caller
    made (`ranks`: the merged report of a directory of ranks; `diff`: a comparison with another run)."""
    data = report_data(profile, options or ReportOptions())
    data["title"] = " ".join(profile.meta.command) or str(profile.directory)
    data["profile"] = str(profile.directory)
    has_timeline = profile.has_pass(Pass.TIMELINE)
    data["calltree"] = _tree(build_tree(profile)) if has_timeline else None
    summary = data.get("summary") or {}
    data["memory_timeline"] = _memory_timeline(profile, summary.get("memory_peak")) if has_timeline else None
    data["drawings"] = _drawings(profile.directory)
    data.update(extra or {})
    return data


def write_html(
    profile: Profile, out: IO[bytes], options: ReportOptions | None = None, extra: dict[str, Any] | None = None
) -> None:
    out.write(page_bytes(profile, options, extra))


def page_bytes(profile: Profile, options: ReportOptions | None = None, extra: dict[str, Any] | None = None) -> bytes:
    """The whole page, made before any file is opened: a failure leaves no empty or truncated page."""
    return render_page(page_data(profile, options, extra)).encode()


def render_page(data: dict[str, Any]) -> str:
    assets = resources.files("tenprof.renderers") / "html_assets"
    style = (assets / "page.css").read_text()
    script = (assets / "page.js").read_text()
    # inside <script>, "</script" ends the element and "<!--" then "<script" changes how the parser looks
    # for its end: every "<" is escaped (it can only be inside a JSON string, where \u003c means the same)
    payload = orjson.dumps(data, option=orjson.OPT_SERIALIZE_NUMPY).decode().replace("<", "\\u003c")
    title = _escape(str(data.get("title") or "tenprof report"))
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<title>tenprof · {title}</title><style>{style}</style></head>\n<body><div id="app"></div>\n'
        f'<script type="application/json" id="tenprof-data">{payload}</script>\n<script>{script}</script>\n'
        "</body></html>\n"
    )


def embedded_data(page: str) -> dict[str, Any]:
    """The data a page made by `render_page` holds (to draw it again with another version's script)."""
    opening = '<script type="application/json" id="tenprof-data">'
    start = page.index(opening) + len(opening)
    return orjson.loads(page[start : page.index("</script>", start)])  # type: ignore[no-any-return]


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def _tree(root: Node) -> dict[str, Any]:
    """The call tree as a flat list of nodes [label, kind, file:line, gpu_ns, cpu_ns, calls, parent index]
    in depth-first order (flat: a deep tree, a recursive model's backward, would be too deeply nested for
    JSON writers), small nodes left out (their time stays in the parent's inclusive totals)."""
    gpu_floor = root.gpu_ns * TREE_MIN_SHARE
    cpu_floor = root.cpu_ns * TREE_MIN_SHARE
    nodes: list[list[Any]] = []
    stack: list[tuple[Node, int]] = [(root, -1)]
    while stack:
        node, parent = stack.pop()
        index = len(nodes)
        place = f"{node.file}:{node.line}" if node.file else ""
        nodes.append([node.label, node.kind, place, node.gpu_ns, node.cpu_ns, node.calls_inc, parent])
        kept = [
            c
            for c in node.children.values()
            if (c.gpu_ns and c.gpu_ns >= gpu_floor) or (c.cpu_ns and c.cpu_ns >= cpu_floor)
        ]
        kept.sort(key=lambda c: (-c.gpu_ns, -c.cpu_ns, c.label))
        stack.extend((c, index) for c in reversed(kept))  # popped in the sorted order
    return {"nodes": nodes, "min_share": TREE_MIN_SHARE}


def _memory_timeline(profile: Profile, peak: dict[str, Any] | None) -> dict[str, Any] | None:
    """Allocated bytes over the run on the device of the summary's memory peak (`peak`, the JSON report's
    `summary.memory_peak`): each bucket's highest value, at the time it was reached. The times count from
    the same start as the peak's (`recording_start`) and the peak is the summary's, not found again here:
    the page's peak is the text report's to the nanosecond, and the line's highest point sits under it."""
    memory = profile.table("memory")
    if not memory.num_rows or peak is None:
        return None
    kind, _, index = str(peak["device"]).partition(":")  # 'cuda:0'; the CPU is 'cpu' (index -1)
    kinds = np.array(memory.column("device_type").to_pylist())
    # one device: each GPU has its own total, so their events interleaved would draw neither
    chosen = (kinds == kind) & (memory.column("device").to_numpy() == (int(index) if index else -1))
    ts = memory.column("ts_ns").to_numpy()[chosen]
    allocated = allocated_totals(profile)[0][chosen]
    order = np.argsort(ts, kind="stable")
    ts, allocated = ts[order], allocated[order]
    start = recording_start(profile)
    # allocated at each complete step's end (the last report before it): the line a leak climbs by
    steps = profile.table("steps")
    ends = (
        steps.column("end_ns").to_numpy()[steps.column("complete").to_numpy(zero_copy_only=False)]
        if steps.num_rows
        else []
    )
    last = np.searchsorted(ts, ends, side="right") - 1
    step_ends = [
        [int(e - start), int(allocated[i])]
        for e, i in zip(np.asarray(ends).tolist(), last.tolist(), strict=True)
        if i >= 0
    ]
    if len(ts) > MEMORY_POINTS:
        edges = np.linspace(0, len(ts), MEMORY_POINTS + 1).astype(np.int64)
        # each bucket's highest value at the time it was reached (not at the bucket's first event, which
        # drew the peak up to a bucket's width early)
        highest = [int(a + np.argmax(allocated[a:b])) for a, b in pairwise(edges)]
        ts, allocated = ts[highest], allocated[highest]
    return {
        "device": str(peak["device"]),
        "t_ns": (ts - start).tolist(),
        "allocated": allocated.tolist(),
        "peak_bytes": int(peak["allocated_bytes"]),
        "peak_t_ns": int(peak["at_ns"]),
        "step_ends": step_ends,
    }


def _drawings(directory: Path) -> dict[str, str]:
    """The forests the run drew: SVG where `dot` made one (or can make one now), else their text."""
    from tenprof.renderers.forest_dot import dot_to_svg, has_graphviz

    out: dict[str, str] = {}
    for stem in ("forest", "blame"):
        svg, dot = directory / f"{stem}.svg", directory / f"{stem}.dot"
        if svg.is_file():
            out[f"{stem}_svg"] = svg.read_text(errors="replace")
        elif dot.is_file() and has_graphviz():
            try:
                out[f"{stem}_svg"] = dot_to_svg(dot.read_text(errors="replace")).decode(errors="replace")
            except UsageError:  # dot refused the file: the page shows the forest's text instead
                continue
    text = directory / "forest.txt"
    if text.is_file():
        out["forest_text"] = text.read_text(errors="replace")
    return out
