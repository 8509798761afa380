"""The line a multi-pass run ends with: where its time went, per pass (script's run and table build; a
pass built from another pass's run has only the build) and the drawings at the end."""

from __future__ import annotations

from tenprof.renderers.run_times import time_breakdown
from tenprof.store.meta import Meta, PassStatus


def test_each_pass_is_split_into_its_run_and_its_tables() -> None:
    meta = Meta(tenprof_version="0", created_at="", source="run")
    meta.passes["timeline"] = PassStatus(state="complete", duration_s=22.7, run_s=21.4, build_s=1.3)
    meta.passes["accesses"] = PassStatus(state="complete", duration_s=5.9, build_s=5.9)
    meta.passes["stalls"] = PassStatus(state="complete", duration_s=110.9, run_s=87.1, build_s=23.8)
    line = time_breakdown(meta, 21.5)
    assert line == (
        "where the time went: timeline 22.7 s (script 21.4, tables 1.3); accesses 5.9 s (tables, from an "
        "earlier pass's run); stalls 110.9 s (script under ncu 87.1, tables 23.8); drawings and joins 21.5 s"
    )
