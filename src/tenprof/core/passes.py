"""The passes a profile can hold, by name: here, apart from the tables' schema (tenprof.store.schema, which
re-exports it), so that the capture's child process can name its pass without importing pyarrow (133 ms of
the child's imports on the 2-core development machine, 2026-12-02; a `tenprof run` of a 3-step CPU script
2.20 s against 2.28 s, medians of four each, alternated)."""

from __future__ import annotations

from enum import StrEnum


class Pass(StrEnum):
    """The passes a profile can hold, each a folder of the profile directory (their tables in store.schema)."""

    TIMELINE = "timeline"
    TENSORS = "tensors"
    COUNTERS = "counters"
    STALLS = "stalls"
    ACCESSES = "accesses"
