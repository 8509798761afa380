"""The report as JSON: the summary and every tally, with times in nanoseconds."""

from __future__ import annotations

import dataclasses
from typing import Any

import orjson

from tenprof.analyses.summary import summarize
from tenprof.analyses.tally import Tally
from tenprof.store.profile import Profile


def report_data(profile: Profile, tallies: list[Tally]) -> dict[str, Any]:
    summary = summarize(profile)
    data = dataclasses.asdict(summary)
    data["gpu_busy_percent"] = summary.gpu_busy_percent
    data["attribution"]["op_percent"] = summary.attribution.op_percent
    data["attribution"]["user_line_percent"] = summary.attribution.user_line_percent
    return {
        "schema_version": profile.meta.schema_version,
        "summary": data,
        "tallies": [dataclasses.asdict(t) for t in tallies],
    }


def report_json(profile: Profile, tallies: list[Tally]) -> str:
    return orjson.dumps(report_data(profile, tallies), option=orjson.OPT_INDENT_2).decode()
