"""Facts derived once at import (issue 18): the ops' `is_autotuning` column and meta.json's typed
`timeline` values, in new profiles and in the recordings made before either existed."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import numpy as np
import orjson
import pyarrow.parquet as pq
import pytest

from tenprof.analyses.timeline.selection import select_steps
from tenprof.core.inductor import inside_autotuning
from tenprof.core.rawfiles import TRACE_FILE
from tenprof.importers.timeline_builder import BuildReport
from tenprof.importers.timeline_import import import_trace
from tenprof.record.pass_builders import finish_timeline
from tenprof.store.meta import META_FILE, Meta, TimelineInfo, read_meta, write_meta
from tenprof.store.profile import Profile
from tenprof.store.schema import Pass
from tenprof.store.writer import PassWriter
from tests.helpers import recording

DATA = Path(__file__).resolve().parents[1] / "data"
# recordings of torch.compile runs whose autotuning benchmarks show in the trace
AUTOTUNED = ["finding_compile_tiny", "finding_graph_break"]


def _recomputed(profile: Profile) -> np.ndarray:
    ops = profile.table("ops")
    return inside_autotuning(ops.column("name").to_pylist(), ops.column("parent_op_id").to_numpy())


@pytest.mark.parametrize("case", AUTOTUNED)
def test_is_autotuning_is_stored_when_built_and_computed_for_older_recordings(
    rebuilt: dict[str, Profile], case: str
) -> None:
    fresh = rebuilt[case]
    assert "is_autotuning" in pq.read_schema(fresh.directory / "timeline" / "ops.parquet").names
    stored = fresh.column("ops", "is_autotuning")
    assert stored.dtype == bool and stored.any() and not stored.all()
    assert (stored == _recomputed(fresh)).all()
    # the recording as made: its ops file predates the column, which the loader computes, to the same answer
    old = recording(DATA / case)
    assert "is_autotuning" not in pq.read_schema(DATA / case / "timeline" / "ops.parquet").names
    assert (old.column("ops", "is_autotuning") == stored).all()


def test_a_step_selection_of_an_older_recording_keeps_each_ops_answer() -> None:
    profile = recording(DATA / "finding_compile_tiny")
    selected = select_steps(profile, "0")  # the step that compiled, and autotuned
    kept = profile.column("ops", "step") == 0
    assert selected.column("ops", "is_autotuning").any() and not kept.all()
    assert (selected.column("ops", "is_autotuning") == profile.column("ops", "is_autotuning")[kept]).all()


def test_an_old_meta_json_reads_its_string_options_into_typed_timeline_values() -> None:
    raw = orjson.loads((DATA / "matmul64" / META_FILE).read_bytes())
    assert "timeline" not in raw  # recorded before the typed values existed
    meta = read_meta(DATA / "matmul64")
    options = raw["options"]
    assert meta.timeline == TimelineInfo(
        trace_span_ns=int(options["trace_span_ns"]),
        clock_offset_ns=int(options["clock_offset_ns"]),
        clock_uncertainty_ns=int(options["clock_uncertainty_ns"]),
        trace_recorded=None,
        lines=True,
    )
    # the measurements leave options; the command line's own options (lines among them) stay, as strings
    assert meta.options == {k: v for k, v in options.items() if not k.endswith("_ns")}
    # "None" was written where the clocks were not matched; an import said no lines and its trace's keys
    imported = Meta.model_validate(
        {
            "source": "import",
            "options": {"trace_span_ns": "5", "clock_offset_ns": "None", "trace_recorded": "record_shapes,with_stack"},
        }
    )
    assert imported.timeline == TimelineInfo(
        trace_span_ns=5, trace_recorded=["record_shapes", "with_stack"], lines=False
    )
    assert imported.options == {}
    assert Meta.model_validate({"options": {"lines": "false"}}).timeline.lines is False
    assert Meta.model_validate({"source": "import", "options": {"trace_recorded": ""}}).timeline.trace_recorded == []


def test_a_recorded_run_writes_its_measurements_typed(tmp_path: Path) -> None:
    out = tmp_path / "prof"
    out.mkdir()
    writer = PassWriter(out, Pass.TIMELINE)
    raw = writer.tmp_dir / "raw"
    shutil.copytree(DATA / "matmul64" / "timeline" / "raw", raw)
    with gzip.open(raw / f"{TRACE_FILE}.gz", "rb") as src, (raw / TRACE_FILE).open("wb") as dst:
        shutil.copyfileobj(src, dst)
    (raw / f"{TRACE_FILE}.gz").unlink()
    meta = Meta(source="run", options={"lines": "true"}, timeline=TimelineInfo(lines=True))
    assert finish_timeline(writer, raw, meta, "", "").state == "complete"
    writer.commit()
    write_meta(out, meta)
    stored = orjson.loads((out / META_FILE).read_bytes())
    timeline = stored["timeline"]
    assert isinstance(timeline["trace_span_ns"], int) and timeline["trace_span_ns"] > 0
    assert isinstance(timeline["clock_offset_ns"], int) and isinstance(timeline["clock_uncertainty_ns"], int)
    assert timeline["trace_recorded"] is None and timeline["lines"] is True
    assert stored["options"] == {"lines": "true"}
    assert read_meta(out) == meta


def test_an_import_leaves_what_it_could_not_measure_none(tmp_path: Path) -> None:
    out = tmp_path / "imported"
    import_trace(DATA / "mlp" / "timeline" / "raw" / "kineto_trace.json.gz", out, force=False)
    timeline = orjson.loads((out / META_FILE).read_bytes())["timeline"]
    # no call-site log, so no clock to match: not measured, not 0
    assert timeline["clock_offset_ns"] is None and timeline["clock_uncertainty_ns"] is None
    assert isinstance(timeline["trace_span_ns"], int) and timeline["trace_span_ns"] > 0
    assert timeline["lines"] is False and isinstance(timeline["trace_recorded"], list)
    assert BuildReport().span_ns is None  # a trace without ranges has no window either
