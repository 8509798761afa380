"""The report's sections exist everywhere or nowhere: each section the registry lists shows in the text
report and fills its JSON keys for a profile that supports it, and is null in JSON and absent from the
text for one that does not (an empty list where the passes ran and found nothing); the JSON has no key
outside the registry (issue 18); each name the registry lists is the module of that section."""

from __future__ import annotations

import io
from pathlib import Path

import orjson
import pytest
from rich.console import Console

import tenprof.report.sections
from tenprof.report.sections import (
    NAMES,
    ReportOptions,
    all_sections,
    render_text,
    report_data,
    report_json,
    section_values,
)
from tenprof.store.profile import Profile
from tests.conftest import DATA
from tests.helpers import recording

# Its tests share module fixtures that take seconds to make: one test worker makes them and runs them all
pytestmark = pytest.mark.xdist_group("report_sections")

# Between them these have every pass: timeline, tensors, stalls and accesses (the tensor stall cost), with
# and without the lanes compared (access patterns); timeline, counters and stalls on compiled code; a
# tensors pass alone; a plain eager timeline.
PROFILES = ["tensor_cost/transposed", "tensor_cost/patterns", "compiled/mlp_stalls", "tensors/conv", "conv"]


def _text(render: object, *args: object, **more: object) -> str:
    buffer = io.StringIO()
    console = Console(file=buffer, width=160, color_system=None, force_terminal=False)
    render(*args, console, ReportOptions(limit=8), **more)  # type: ignore[operator]
    return buffer.getvalue()


@pytest.fixture(scope="module")
def profiles() -> dict[str, Profile]:
    return {name: recording(DATA / name) for name in PROFILES}


@pytest.fixture(scope="module")
def values(profiles: dict[str, Profile]) -> dict[str, list[object]]:
    """Each profile's section data, computed once (the analyses are what take the time) and rendered by
    each test as it needs."""
    return {name: section_values(profile, ReportOptions(limit=8)) for name, profile in profiles.items()}


def test_each_name_in_the_registry_is_a_module_defining_that_section() -> None:
    # the registry loads each section by name: a module named otherwise, or one left out of NAMES, would
    # be a section no report shows
    package = Path(tenprof.report.sections.__file__).parent
    modules = {p.stem for p in package.glob("*.py")} - {"__init__", "section"}
    assert sorted(NAMES) == sorted(modules)
    assert [s.name for s in all_sections()] == list(NAMES)
    keys = [key for s in all_sections() for key in s.keys]
    assert len(keys) == len(set(keys)), keys  # two sections filling one key: the later would overwrite


def test_every_section_is_in_the_text_and_the_json_or_in_neither(
    profiles: dict[str, Profile], values: dict[str, list[object]]
) -> None:
    seen_somewhere = set()
    for name, profile in profiles.items():
        data = report_data(profile, ReportOptions(limit=8), values[name])
        full = _text(render_text, profile, values=values[name])
        for section, value in zip(all_sections(), values[name], strict=True):
            # null in JSON exactly where the profile lacks the section (its passes, or it does not apply)
            assert all((data[key] is None) == (value is None) for key in section.keys), (name, section.name)
            if value is not None and section.has_content(value):
                seen_somewhere.add(section.name)
                alone = _text(section.text, value)
                assert alone.strip() and alone in full, (name, section.name)
    # the profiles above exercise every section, so the assertions above are made for each of them
    assert seen_somewhere == {s.name for s in all_sections()}


def test_the_json_has_no_key_outside_the_registry(
    profiles: dict[str, Profile], values: dict[str, list[object]]
) -> None:
    expected = {"schema_version"} | {key for s in all_sections() for key in s.keys}
    for name, profile in profiles.items():
        assert set(report_data(profile, ReportOptions(limit=8), values[name])) == expected


def test_the_stall_cost_section_in_json_names_the_strided_operand(profiles: dict[str, Profile]) -> None:
    # `a.t() + b` (tests/data/tensor_cost/transposed): the text report's tensor stall cost is in the JSON
    # too, most costly first, with shares that add up to at most the whole.
    costs = orjson.loads(report_json(profiles["tensor_cost/transposed"]))["tensor_stall_cost"]
    assert costs and costs[0]["samples"] == max(c["samples"] for c in costs)
    assert sum(c["share"] for c in costs) <= 1.0 + 1e-9


def test_a_pass_that_found_nothing_is_an_empty_list_not_null(profiles: dict[str, Profile]) -> None:
    # conv: a timeline with GPU work, no torch.compile, no counters or stalls pass.
    data = orjson.loads(report_json(profiles["conv"]))
    assert isinstance(data["findings"], list) and isinstance(data["steps"], list) and data["steps"]
    assert data["compiled"] is None and data["counters"] is None and data["stalls"] is None
    # tensors/conv: a tensors pass alone, so the timeline's sections are null, not empty
    alone = orjson.loads(report_json(profiles["tensors/conv"]))
    assert alone["findings"] is None and alone["summary"] is None and alone["memory"] is not None
