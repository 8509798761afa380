"""The report as JSON: the summary, every tally, and the sections of the passes the profile has (memory,
torch.compile's kernels, hardware metrics per operator, warp stalls), with times in nanoseconds. A
section whose pass is missing is null."""

from __future__ import annotations

import dataclasses
from typing import Any

import orjson

from tenprof.analyses.findings import Thresholds, find_all, not_judged
from tenprof.analyses.memory import memory_report
from tenprof.analyses.summary import summarize
from tenprof.analyses.tally import Tally
from tenprof.analyses.temporal import temporal_breakdown
from tenprof.store.profile import Profile


def report_data(profile: Profile, tallies: list[Tally], thresholds: Thresholds | None = None) -> dict[str, Any]:
    summary = summarize(profile)
    memory = memory_report(profile)
    data = dataclasses.asdict(summary)
    data["gpu_busy_percent"] = summary.gpu_busy_percent
    data["attribution"]["op_percent"] = summary.attribution.op_percent
    data["attribution"]["user_line_percent"] = summary.attribution.user_line_percent
    data["overhead"]["ratio"] = summary.overhead.ratio
    data["overhead"]["profiler_share"] = summary.overhead.profiler_share
    return {
        "schema_version": profile.meta.schema_version,
        "findings": [f.model_dump() for f in find_all(profile, thresholds)],
        "not_judged": not_judged(profile),
        "summary": data,
        "steps": [dataclasses.asdict(b) for b in temporal_breakdown(profile)],
        "tallies": [dataclasses.asdict(t) for t in tallies],
        "memory": dataclasses.asdict(memory) if memory is not None else None,
        "compiled": _compiled(profile),
        "counters": _counters(profile),
        "stalls": _stalls(profile),
    }


def _compiled(profile: Profile) -> dict[str, Any] | None:
    from tenprof.analyses.compiled import compiled_report

    report = compiled_report(profile) if profile.has_pass("timeline") else None
    if report is None:
        return None
    data = dataclasses.asdict(report)
    data["ops_share"], data["lines_share"] = report.ops_share, report.lines_share
    return data


def _counters(profile: Profile) -> dict[str, Any] | None:
    from tenprof.analyses.counters import operators_report

    report = operators_report(profile) if profile.has_pass("counters") else None
    return report.model_dump() if report is not None else None


def _stalls(profile: Profile) -> dict[str, Any] | None:
    from tenprof.analyses.stalls import kernel_stalls, stall_rollup

    if not profile.has_pass("stalls"):
        return None
    return {
        "kernels": [dataclasses.asdict(k) for k in kernel_stalls(profile)],
        "by_op_and_line": [dataclasses.asdict(r) for r in stall_rollup(profile)],
    }


def report_json(profile: Profile, tallies: list[Tally], thresholds: Thresholds | None = None) -> str:
    return orjson.dumps(report_data(profile, tallies, thresholds), option=orjson.OPT_INDENT_2).decode()
