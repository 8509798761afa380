"""The report as JSON: the summary and every tally, with times in nanoseconds."""

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
    return {
        "schema_version": profile.meta.schema_version,
        "findings": [f.model_dump() for f in find_all(profile, thresholds)],
        "not_judged": not_judged(profile),
        "summary": data,
        "steps": [dataclasses.asdict(b) for b in temporal_breakdown(profile)],
        "tallies": [dataclasses.asdict(t) for t in tallies],
        "memory": dataclasses.asdict(memory) if memory is not None else None,
    }


def report_json(profile: Profile, tallies: list[Tally], thresholds: Thresholds | None = None) -> str:
    return orjson.dumps(report_data(profile, tallies, thresholds), option=orjson.OPT_INDENT_2).decode()
