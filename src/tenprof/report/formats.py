"""The export formats, in one registry: for each, its default file name, how an -o name selects it, the
passes a profile needs for it (and how to record them), and its writer. `tenprof export` reads only this
table; adding a format is adding one entry here.

A format writes bytes to an open file, except `generated-code`, which writes a folder (`folder=True`).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import orjson

from tenprof.errors import UsageError
from tenprof.store.profile import Profile
from tenprof.store.schema import Pass


@dataclass(frozen=True)
class ExportOptions:
    table: str = "kernels"  # csv
    metric: str = "bytes"  # forest
    limit: int = 40  # forest: groups of trees (0: all)
    window: str = ""  # perfetto: START:END in ms since the trace's start
    max_events: int = 0  # perfetto: keep the longest N slices (0: all)


@dataclass(frozen=True)
class ExportFormat:
    name: str
    default_name: str  # "{table}" is replaced by the csv table's name
    write: Callable[[Profile, Any, ExportOptions], None]  # an IO[bytes], or the folder's Path when `folder`
    passes: tuple[str, ...] = ()
    selected_by: Callable[[str], bool] = lambda name: False  # an -o file name that picks this format
    folder: bool = False
    unavailable: Callable[[], str] = lambda: ""  # why this machine cannot write it ("" when it can)

    @property
    def record_with(self) -> str:
        """The `tenprof run --passes` that records what it needs: the timeline and its passes, in Pass order."""
        return ",".join(p for p in Pass if p == Pass.TIMELINE or p in self.passes)

    def check(self, profile: Profile) -> None:
        missing = [p for p in self.passes if not profile.has_pass(p)]
        if missing:
            raise UsageError(
                f"{profile.directory} has no {', '.join(missing)} pass; record one with tenprof run --passes "
                f"{self.record_with}"
            )
        why = self.unavailable()
        if why:
            raise UsageError(why)


def _perfetto(profile: Profile, out: IO[bytes], options: ExportOptions) -> None:
    from tenprof.renderers.perfetto import write_perfetto
    from tenprof.renderers.perfetto_cut import CutReport, TraceCut, parse_window

    try:
        start, end = parse_window(options.window) if options.window else (None, None)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    cut = TraceCut(start, end, options.max_events or None)
    report = CutReport()
    write_perfetto(profile, out, cut, report)
    if cut.active:
        print(f"tenprof: the trace holds {report.describe(cut)}", file=sys.stderr)


def _hatchet(profile: Profile, out: IO[bytes], options: ExportOptions) -> None:
    from tenprof.analyses.timeline.calltree import build_tree
    from tenprof.renderers.hatchet import to_literal

    literal = to_literal(build_tree(profile))
    try:
        out.write(orjson.dumps(literal))
    except TypeError:  # nested deeper than orjson writes (254 levels: a deep recursive model's backward)
        import json

        out.write(json.dumps(literal, separators=(",", ":")).encode())


def _report(profile: Profile, out: IO[bytes], options: ExportOptions) -> None:
    from tenprof.report.sections import report_json

    out.write(report_json(profile).encode())


def _html(profile: Profile, out: IO[bytes], options: ExportOptions) -> None:
    from tenprof.report.html_page import write_html

    write_html(profile, out)


def _csv(profile: Profile, out: IO[bytes], options: ExportOptions) -> None:
    import pyarrow.csv as pacsv

    table = profile.table(options.table)
    if options.table == "kernel_metrics":
        table = _with_verdicts(profile, table)
    if table.num_rows == 0:
        why = " (this profile recorded no GPU work)" if options.table == "kernels" and not profile.has_gpu else ""
        print(
            f"tenprof: note: the {options.table} table has no rows{why}: the CSV holds its header only", file=sys.stderr
        )
    pacsv.write_csv(_flat_columns(table), out)


def _flat_columns(table: Any) -> Any:
    """`table` with each list, struct or map column (shapes, strides, a tensor's uses) as JSON text: CSV
    has no nested values, and a JSON list reads back in any language."""
    import pyarrow as pa

    for index, field in enumerate(table.schema):
        if pa.types.is_nested(field.type):
            text = [None if v is None else orjson.dumps(v).decode() for v in table.column(index).to_pylist()]
            table = table.set_column(index, pa.field(field.name, pa.string()), pa.array(text, pa.string()))
    return table


def _with_verdicts(profile: Profile, table: Any) -> Any:
    """kernel_metrics with each replay's roofline verdict and occupancy limiter, judged now (the profile
    stores the metrics, not the verdicts, so they follow the current limits)."""
    import pyarrow as pa

    from tenprof.analyses.kernels.replays import judged_replays

    judged = judged_replays(profile)
    replay = table.column("replay_id").to_pylist()
    for column in ("verdict", "occupancy_limiter"):
        values = [str(judged[r][column]) if r in judged else None for r in replay]
        table = table.append_column(column, pa.array(values, type=pa.string()))
    return table


def _operators(profile: Profile, out: IO[bytes], options: ExportOptions) -> None:
    from tenprof.analyses.kernels.counters import operators_report

    report = operators_report(profile)
    out.write(report.model_dump_json(indent=2).encode() if report is not None else b"{}")


def _forest(kind: str) -> Callable[[Profile, IO[bytes], ExportOptions], None]:
    def write(profile: Profile, out: IO[bytes], options: ExportOptions) -> None:
        from tenprof.analyses.tensors.tensor_forest import Forest
        from tenprof.renderers.forest_dot import dot_to_svg, forest_dot
        from tenprof.renderers.forest_files import pass_notes
        from tenprof.renderers.forest_text import forest_text

        forest, limit = Forest(profile), options.limit or 10**9
        if kind == "text":
            out.write(forest_text(forest, options.metric, limit, pass_notes(profile)).encode())
            return
        dot = forest_dot(forest, options.metric, limit)
        out.write(dot.encode() if kind == "dot" else dot_to_svg(dot))

    return write


def _stall_cost(kind: str) -> Callable[[Profile, IO[bytes], ExportOptions], None]:
    def write(profile: Profile, out: IO[bytes], options: ExportOptions) -> None:
        from tenprof.analyses.tensors.access_patterns import load_patterns
        from tenprof.analyses.tensors.tensor_forest import Forest
        from tenprof.analyses.tensors.tensor_stall_cost import tensor_stall_cost
        from tenprof.renderers.stall_cost_files import blame_dot, cost_csv

        costs, forest, patterns = tensor_stall_cost(profile), Forest(profile), load_patterns(profile)
        text = cost_csv(costs, forest, patterns) if kind == "csv" else blame_dot(costs, forest, patterns=patterns)
        out.write(text.encode())

    return write


def _generated_code(profile: Profile, out_dir: Path, options: ExportOptions) -> None:
    """torch.compile's generated wrapper modules kept by the profile's runs, one .py file each under its own
    name, and each Triton kernel's source as `<kernel>.py`: the text of the file Triton compiled it from,
    so the line numbers the stalls report gives are that file's."""
    from tenprof.core.generated_code import embedded_kernels
    from tenprof.store.compiled_code import kept_code_files, read_compiled_code

    # the ncu run's wrappers first: their kernels are the ones the stalls report's line numbers refer to
    rows = [row for kept in kept_code_files(profile.directory) for row in read_compiled_code(kept, strict=True)]
    if not rows:
        raise UsageError(
            f"{profile.directory} keeps no torch.compile code (none ran under tenprof run; an imported trace "
            "only names the generated files)"
        )
    wrappers: set[str] = set()
    kernels: set[str] = set()
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        for row in rows:
            name, source = Path(str(row["path"])).name, str(row["source"])
            if name in wrappers:
                continue
            wrappers.add(name)
            (out_dir / name).write_text(source)
            for kernel, (start, end) in embedded_kernels(source).items():
                if kernel not in kernels:
                    kernels.add(kernel)
                    (out_dir / f"{kernel}.py").write_text(source[start:end])
    except OSError as exc:
        raise UsageError(f"cannot write the generated code to -o {out_dir}: {reason(exc)}") from exc
    print(
        f"wrote {len(wrappers)} generated wrappers and {len(kernels)} kernel sources (<kernel>.py) to {out_dir}/",
        file=sys.stderr,
    )


def reason(exc: OSError) -> str:
    """The system's words for an OSError ('Permission denied'), without the errno and the path."""
    if isinstance(exc, FileExistsError | NotADirectoryError):
        return "a part of the path is a file, not a folder"
    return exc.strerror or exc.__class__.__name__


def _no_graphviz() -> str:
    from tenprof.renderers.forest_dot import has_graphviz

    return "" if has_graphviz() else "graphviz `dot` is not installed (apt install graphviz); --format forest-dot works"


def _named(*, suffix: str, containing: str = "") -> Callable[[str], bool]:
    return lambda name: name.endswith(suffix) and containing in Path(name).name


_STALL_COST = (Pass.TENSORS, Pass.STALLS, Pass.ACCESSES)

# In the order an -o name is matched against `selected_by` (the first that matches wins; a .json name
# matching none is a Perfetto trace).
FORMATS: tuple[ExportFormat, ...] = (
    ExportFormat("forest-dot", "forest.dot", _forest("dot"), (Pass.TENSORS,), _named(suffix=".dot")),
    ExportFormat(
        "forest-svg",
        "forest.svg",
        _forest("svg"),
        (Pass.TENSORS,),
        _named(suffix=".svg"),
        unavailable=_no_graphviz,
    ),
    ExportFormat("forest", "forest.txt", _forest("text"), (Pass.TENSORS,), _named(suffix=".txt", containing="forest")),
    ExportFormat("csv", "{table}.csv", _csv, selected_by=_named(suffix=".csv")),
    ExportFormat("hatchet", "tree.hatchet.json", _hatchet, selected_by=lambda name: "hatchet" in name),
    ExportFormat("json", "report.json", _report, selected_by=_named(suffix=".json", containing="report")),
    ExportFormat("html", "report.html", _html, selected_by=_named(suffix=".html")),
    ExportFormat(
        "operators",
        "operators.json",
        _operators,
        (Pass.COUNTERS,),
        _named(suffix=".json", containing="operators"),
    ),
    ExportFormat("perfetto", "trace.json", _perfetto, selected_by=_named(suffix=".json")),
    ExportFormat("stall-cost", "tensor_stall_cost.csv", _stall_cost("csv"), _STALL_COST),
    ExportFormat("blame-dot", "blame.dot", _stall_cost("dot"), _STALL_COST),
    ExportFormat("generated-code", "generated-code", _generated_code, folder=True),
)
BY_NAME = {f.name: f for f in FORMATS}
NAMES = tuple(BY_NAME)


def format_from_name(name: str | None) -> ExportFormat:
    """The format an -o name asks for (no name, or '-': a Perfetto trace)."""
    if not name or name == "-":
        return BY_NAME["perfetto"]
    for fmt in FORMATS:
        if fmt.selected_by(name):
            return fmt
    raise UsageError(f"cannot tell the format from {name!r}; pass --format ({', '.join(NAMES)})")
