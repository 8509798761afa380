"""The performance model section: FLOPs, bytes, achieved rates and speed of light per op, line and step
(`analyses.perf_model`); None without kernels. Its JSON adds the rates the text computes from the fields."""

from __future__ import annotations

import dataclasses
from typing import Any

from rich.console import Console

from tenprof.analyses.perf_model import PerfModel, perf_model
from tenprof.renderers.perf_model_text import render_perf_model
from tenprof.report.sections.section import ReportOptions, Section
from tenprof.store.profile import Profile
from tenprof.store.schema import Pass


def analyse(profile: Profile, options: ReportOptions) -> PerfModel | None:
    return perf_model(profile)


def text(model: PerfModel, out: Console, options: ReportOptions) -> None:
    render_perf_model(model, out, options.limit)


def json(model: PerfModel) -> dict[str, Any]:
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


SECTION: Section[PerfModel] = Section("perf_model", (Pass.TIMELINE,), analyse, text, json, ("perf_model",))
