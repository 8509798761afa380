"""The report's sections, in one registry: the text report (`tenprof report`, and after `run` and
`import`), its JSON (`--json`, `export --format json`) and anything else that shows a whole report loop
over `SECTIONS`, so a section exists in every one of them or in none.

Each section declares the passes a profile needs for it, an `analyse(profile, options)` returning plain
data (None: nothing to show for this profile), its text rendering, and its JSON: the top-level keys it
fills (null when the passes are missing or there is nothing to show). Adding a section is adding one
entry here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson
from rich.console import Console

from tenprof.analyses import tally as tallies
from tenprof.analyses.findings import Finding, Thresholds, find_all, judging, not_judged
from tenprof.renderers.finding_text import rendered
from tenprof.store.profile import Profile
from tenprof.store.schema import Pass


@dataclass(frozen=True)
class ReportOptions:
    limit: int | None = None  # rows per table in text (None: all)
    thresholds: Thresholds | None = None  # the findings' (None: the defaults)


@dataclass(frozen=True)
class Section:
    name: str
    passes: tuple[str, ...]  # the profile must have all of these
    analyse: Callable[[Profile, ReportOptions], Any]  # None or empty: nothing to show
    text: Callable[[Any, Console, ReportOptions], None]
    json: Callable[[Any], dict[str, Any]]  # top-level keys of the JSON report
    keys: tuple[str, ...]  # the keys `json` fills: null when the profile lacks the section's passes
    spaced: bool = True  # a blank line before it in text
    has_content: Callable[[Any], bool] = lambda data: shown(data)  # whether the text shows it

    def data(self, profile: Profile, options: ReportOptions) -> Any:
        if not all(profile.has_pass(p) for p in self.passes):
            return None
        return self.analyse(profile, options)


@dataclass(frozen=True)
class FindingsData:
    found: list[Finding]
    not_judged: list[str]


def _findings(profile: Profile, options: ReportOptions) -> FindingsData:
    ctx = judging(profile, options.thresholds)
    return FindingsData(find_all(profile, ctx=ctx), not_judged(profile, ctx))


def _findings_text(data: FindingsData, out: Console, options: ReportOptions) -> None:
    from tenprof.renderers.text import render_findings

    render_findings(data.found, out, data.not_judged)


def _summary(profile: Profile, options: ReportOptions) -> Any:
    from tenprof.analyses.summary import summarize

    return summarize(profile)


def _summary_text(summary: Any, out: Console, options: ReportOptions) -> None:
    from tenprof.renderers.text import render_summary

    render_summary(summary, out)


def _summary_json(summary: Any) -> dict[str, Any]:
    data = dataclasses.asdict(summary)
    # properties the text shows, computed from the fields
    data["gpu_busy_percent"] = summary.gpu_busy_percent
    data["attribution"]["op_percent"] = summary.attribution.op_percent
    data["attribution"]["user_line_percent"] = summary.attribution.user_line_percent
    data["overhead"]["ratio"] = summary.overhead.ratio
    data["overhead"]["profiler_share"] = summary.overhead.profiler_share
    return {"summary": data}


def _steps(profile: Profile, options: ReportOptions) -> Any:
    from tenprof.analyses.temporal import temporal_breakdown

    return temporal_breakdown(profile) if profile.has_gpu else []


def _steps_text(rows: Any, out: Console, options: ReportOptions) -> None:
    from tenprof.renderers.text import render_breakdown

    render_breakdown(rows, out)


def _step_time(profile: Profile, options: ReportOptions) -> Any:
    from tenprof.analyses.step_time import step_time

    return step_time(profile)


def _step_time_text(result: Any, out: Console, options: ReportOptions) -> None:
    from tenprof.renderers.step_time_text import render_step_time

    render_step_time(result, out)


def _step_time_json(result: Any) -> dict[str, Any]:
    from tenprof.analyses.step_time import PARTS

    mean = {
        "steps": [s.step for s in result.steady],
        "wall_ns": result.mean_wall_ns,
        # the profiler's own work where it was measured or estimated; not known is null, not 0
        "parts": {
            part: (None if part == "capture" and not result.capture_method else result.mean(part)) for part in PARTS
        },
    }
    return {"step_time": {**dataclasses.asdict(result), "mean_step": mean}}


def all_tallies(profile: Profile) -> list[tallies.Tally]:
    """The tallies a profile supports: kernels, GPU time per op, copies and CUDA calls when it has GPU
    work, and CPU time per op always."""
    found = [tallies.op_cpu_tally(profile)]
    if profile.has_gpu:
        found = [
            tallies.kernel_tally(profile),
            tallies.op_gpu_tally(profile),
            tallies.transfer_tally(profile),
            tallies.api_tally(profile),
            *found,
        ]
    return found


def _tallies(profile: Profile, options: ReportOptions) -> list[tallies.Tally]:
    return all_tallies(profile)


def _tallies_text(found: list[tallies.Tally], out: Console, options: ReportOptions) -> None:
    from tenprof.renderers.text import render_tally

    shown = [t for t in found if t.rows]
    for i, t in enumerate(shown):
        if i:
            out.print()
        render_tally(t, out, options.limit)


def _compiled(profile: Profile, options: ReportOptions) -> Any:
    from tenprof.analyses.compiled import compiled_report

    return compiled_report(profile)


def _compiled_text(report: Any, out: Console, options: ReportOptions) -> None:
    from tenprof.renderers.compiled_text import render_compiled

    render_compiled(report, out, options.limit)


def _compiled_json(report: Any) -> dict[str, Any]:
    data = dataclasses.asdict(report)
    data["ops_share"], data["lines_share"] = report.ops_share, report.lines_share
    return {"compiled": data}


def _counters(profile: Profile, options: ReportOptions) -> Any:
    from tenprof.analyses.counters import operators_report

    return operators_report(profile, (options.thresholds or Thresholds()).roofline())


def _counters_text(report: Any, out: Console, options: ReportOptions) -> None:
    from tenprof.renderers.counters_text import render_counters

    render_counters(report, out, options.limit)


def _perf_model(profile: Profile, options: ReportOptions) -> Any:
    from tenprof.analyses.perf_model import perf_model

    return perf_model(profile)


def _perf_model_text(model: Any, out: Console, options: ReportOptions) -> None:
    from tenprof.renderers.perf_model_text import render_perf_model

    render_perf_model(model, out, options.limit)


def _perf_model_json(model: Any) -> dict[str, Any]:
    from tenprof.analyses.perf_model import PerfModel

    if not isinstance(model, PerfModel):
        return {"perf_model": None}
    data = dataclasses.asdict(model)
    data["modelled_percent"] = model.modelled_percent
    # the rates the text shows, computed from the fields
    for row, speed in [(data["total"], model.total)] + [
        (d["speed"], x.speed) for key in ("ops", "lines") for d, x in zip(data[key], getattr(model, key), strict=True)
    ]:
        row.update(tflops_per_s=speed.tflops_per_s, gbytes_per_s=speed.gbytes_per_s, sol_percent=speed.sol_percent)
    for d, step in zip(data["steps"], model.steps, strict=True):
        d["tokens_per_s"] = step.tokens_per_s
    for d, user in zip(data["user"], model.user, strict=True):
        d.update(tflops_per_s=user.tflops_per_s, gbytes_per_s=user.gbytes_per_s)
    return {"perf_model": data}


@dataclass(frozen=True)
class StallsData:
    kernels: list[Any]
    by_op_and_line: list[Any]
    load_patterns: list[Any] = dataclasses.field(default_factory=list)  # LoadAt: how each sampled load read


@dataclass(frozen=True)
class LoadAt:
    replay_id: int
    pc: int
    pattern: Any  # AccessPattern


def _stalls(profile: Profile, options: ReportOptions) -> StallsData:
    from tenprof.analyses.access_patterns import stalled_load_patterns
    from tenprof.analyses.stalls import kernel_stalls, stall_rollup

    kernels = kernel_stalls(profile)
    if not kernels:
        return StallsData([], [])
    loads = [LoadAt(rid, pc, p) for (rid, pc), p in stalled_load_patterns(profile).items()]
    return StallsData(kernels, stall_rollup(profile), loads)


def _stalls_text(data: StallsData, out: Console, options: ReportOptions) -> None:
    from tenprof.renderers.stalls_text import render_rollup, render_stalls

    patterns = {(load.replay_id, load.pc): load.pattern for load in data.load_patterns}
    render_stalls(data.kernels, out, options.limit, patterns)
    render_rollup(data.by_op_and_line, out, options.limit)


def _memory(profile: Profile, options: ReportOptions) -> Any:
    from tenprof.analyses.memory import memory_report

    return memory_report(profile, options.limit or 10)


def _memory_text(report: Any, out: Console, options: ReportOptions) -> None:
    from tenprof.renderers.memory_text import render_memory

    render_memory(report, out)


@dataclass(frozen=True)
class StallCostData:
    costs: list[Any]
    forest: Any  # the tensor forest the costs are drawn on
    patterns: Any = None  # LoadPatterns: how the charged kernels read each tensor


def _stall_cost(profile: Profile, options: ReportOptions) -> StallCostData:
    from tenprof.analyses.access_patterns import load_patterns
    from tenprof.analyses.tensor_forest import Forest
    from tenprof.analyses.tensor_stall_cost import tensor_stall_cost

    costs = tensor_stall_cost(profile)
    return StallCostData(costs, Forest(profile) if costs else None, load_patterns(profile) if costs else None)


def _stall_cost_text(data: StallCostData, out: Console, options: ReportOptions) -> None:
    from tenprof.renderers.stall_cost_text import render_stall_cost

    render_stall_cost(data.costs, data.forest, out, options.limit, data.patterns)


def _stall_cost_json(data: StallCostData) -> dict[str, Any]:
    from tenprof.analyses.access_patterns import describe
    from tenprof.analyses.tensor_advice import advice
    from tenprof.renderers.stall_cost_files import BUCKETS, telling_read
    from tenprof.renderers.stall_cost_text import tensor_label

    rows = []
    for cost in data.costs:
        row = dataclasses.asdict(cost)
        read = telling_read(cost, data.patterns)
        row["read_pattern"] = None if read is None else {**dataclasses.asdict(read), "op_seqs": list(read.op_seqs[:8])}
        # the names and words the text report prints, for readers of the JSON and the page
        if cost.tensor_id >= 0:
            row["tensor"], row["made_by"] = tensor_label(data.forest, cost.tensor_id)
            row["read_as"] = describe(read) if read is not None else ""
            row["advice"] = advice(cost, data.forest, data.patterns)
        else:
            row["tensor"], row["made_by"], row["read_as"], row["advice"] = BUCKETS[cost.tensor_id], "", "", ""
        rows.append(row)
    return {"tensor_stall_cost": rows}


@dataclass(frozen=True)
class UncoalescedRead:
    pattern: Any  # AccessPattern
    tensor: str  # its type, e.g. float32[4096, 4096]
    made_at: str  # the line that made it (its base tensor's, for a view)


def _access_patterns(profile: Profile, options: ReportOptions) -> list[UncoalescedRead] | None:
    """The reads that waste the most sectors (strided, gathered, scattered), most first; None for accesses
    recorded before the lanes were compared (nothing to say either way)."""
    from tenprof.analyses.access_patterns import WASTEFUL, load_patterns
    from tenprof.analyses.tensor_forest import Forest

    patterns = load_patterns(profile)
    if not patterns.recorded:
        return None
    found = [p for p in patterns.patterns if p.kind in WASTEFUL and not p.is_write]
    if not found:
        return []
    forest = Forest(profile)
    return [
        UncoalescedRead(p, forest.describe(p.tensor_id), forest.creator_line(forest.path_to_root(p.tensor_id)[-1]))
        for p in found[: options.limit or 10]
    ]


def _access_patterns_text(rows: list[UncoalescedRead], out: Console, options: ReportOptions) -> None:
    from tenprof.renderers.access_patterns_text import render_access_patterns

    render_access_patterns(rows, out)


def _access_patterns_json(rows: list[UncoalescedRead]) -> dict[str, Any]:
    return {
        "access_patterns": [
            {
                **dataclasses.asdict(r.pattern),
                "op_seqs": list(r.pattern.op_seqs[:8]),
                "tensor": r.tensor,
                "made_at": r.made_at,
            }
            for r in rows
        ]
    }


def _as_dicts(key: str) -> Callable[[Any], dict[str, Any]]:
    """JSON of a dataclass or a list of them, under one key."""

    def convert(data: Any) -> dict[str, Any]:
        if isinstance(data, list):
            return {key: [dataclasses.asdict(x) for x in data]}
        if hasattr(data, "model_dump"):  # pydantic
            return {key: data.model_dump()}
        return {key: dataclasses.asdict(data)}

    return convert


SECTIONS: tuple[Section, ...] = (
    Section(
        "findings",
        (Pass.TIMELINE,),
        _findings,
        _findings_text,
        lambda d: {"findings": [rendered(f).model_dump() for f in d.found], "not_judged": d.not_judged},
        ("findings", "not_judged"),
        spaced=False,
    ),
    Section("summary", (Pass.TIMELINE,), _summary, _summary_text, _summary_json, ("summary",), spaced=False),
    Section(
        "step_time",
        (Pass.TIMELINE,),
        _step_time,
        _step_time_text,
        _step_time_json,
        ("step_time",),
        has_content=lambda d: bool(d.steps),
    ),
    Section("steps", (Pass.TIMELINE,), _steps, _steps_text, _as_dicts("steps"), ("steps",)),
    Section("tallies", (Pass.TIMELINE,), _tallies, _tallies_text, _as_dicts("tallies"), ("tallies",)),
    Section("compiled", (Pass.TIMELINE,), _compiled, _compiled_text, _compiled_json, ("compiled",)),
    Section("perf_model", (Pass.TIMELINE,), _perf_model, _perf_model_text, _perf_model_json, ("perf_model",)),
    Section("counters", (Pass.COUNTERS,), _counters, _counters_text, _as_dicts("counters"), ("counters",)),
    Section(
        "stalls",
        (Pass.STALLS,),
        _stalls,
        _stalls_text,
        _as_dicts("stalls"),
        ("stalls",),
        has_content=lambda d: bool(d.kernels),
    ),
    Section("memory", (Pass.TENSORS,), _memory, _memory_text, _as_dicts("memory"), ("memory",)),
    Section(
        "access_patterns",
        (Pass.TENSORS, Pass.ACCESSES),
        _access_patterns,
        _access_patterns_text,
        _access_patterns_json,
        ("access_patterns",),
    ),
    Section(
        "tensor_stall_cost",
        (Pass.TENSORS, Pass.STALLS, Pass.ACCESSES),
        _stall_cost,
        _stall_cost_text,
        _stall_cost_json,
        ("tensor_stall_cost",),
        has_content=lambda d: bool(d.costs),
    ),
)


def shown(data: Any) -> bool:
    """Whether a section's data has anything to show (None and empty lists do not)."""
    return data is not None and not (isinstance(data, list) and not data)


def section_values(profile: Profile, options: ReportOptions) -> list[Any]:
    """Each section's data (`Section.data`), in `SECTIONS` order: computed once, rendered as text, JSON or both."""
    return [section.data(profile, options) for section in SECTIONS]


def render_text(profile: Profile, out: Console, options: ReportOptions, values: list[Any] | None = None) -> None:
    """Every section the profile supports, in order (from `values`, `section_values`'s, when given)."""
    if profile.meta.run.cut_short:  # first: every section after it stands on a partial run
        from tenprof.renderers.text import render_cut_short

        render_cut_short(profile.meta.run.cut_short_reason, out)
    if not profile.has_pass(Pass.TIMELINE):
        out.print(f"[bold]tenprof[/bold] · {' '.join(profile.meta.command)}: no timeline pass in this profile")
        for line in profile.missing():
            out.print(f"[yellow]Incomplete:[/yellow] {line}")
    for section, data in zip(SECTIONS, values or section_values(profile, options), strict=True):
        if data is None or not section.has_content(data):
            continue
        if section.spaced:
            out.print()
        section.text(data, out, options)


def report_data(profile: Profile, options: ReportOptions, values: list[Any] | None = None) -> dict[str, Any]:
    """The JSON report: the schema version, then every section's keys: null where the profile lacks the
    section's passes (or the section does not apply, as compiled code to an eager run), an empty list
    where it has them and found nothing. From `values` (`section_values`'s) when given."""
    data: dict[str, Any] = {"schema_version": profile.meta.schema_version}
    for section, value in zip(SECTIONS, values or section_values(profile, options), strict=True):
        data.update(dict.fromkeys(section.keys) if value is None else section.json(value))
    return data


def report_json(profile: Profile, options: ReportOptions | None = None) -> str:
    return orjson.dumps(
        report_data(profile, options or ReportOptions()), option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY
    ).decode()
