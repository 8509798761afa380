"""The capture's sidecar: Python call paths recorded by tenprof's runtime, on the host's perf clock.

Written by `tenprof.capture.callsites` (torch side), read here (no torch). Format, one gzipped JSON object:
    version: 1
    frames:  [[frame_id, parent_frame_id, file, line, function, depth, is_user], ...]
    calls:   {thread_id: [...], start_ns: [...], end_ns: [...], frame_id: [...]}  one per torch API call
    scopes:  [[name, thread_id, start_ns, end_ns, frame_id, insert_depth], ...]
    syncs:   [[label, start_ns, end_ns], ...]   perf-clock brackets around `tenprof::clock_sync#<label>`
The sync brackets are matched to the same-named ranges in the Kineto trace to map perf-clock times to
trace times (`clock_offset`).
"""

from __future__ import annotations

import gzip
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from tenprof.errors import TraceFormatError
from tenprof.importers.intervals import I64Array

SYNC_PREFIX = "tenprof::clock_sync#"


@dataclass
class Callsites:
    frames: list[list[Any]] = field(default_factory=list)
    call_thread: I64Array = field(default_factory=lambda: np.zeros(0, np.int64))
    call_start: I64Array = field(default_factory=lambda: np.zeros(0, np.int64))
    call_end: I64Array = field(default_factory=lambda: np.zeros(0, np.int64))
    call_frame: I64Array = field(default_factory=lambda: np.zeros(0, np.int64))
    scopes: list[list[Any]] = field(default_factory=list)
    syncs: list[list[Any]] = field(default_factory=list)

    def shifted(self, offset_ns: int) -> Callsites:
        """The same records with perf-clock times moved onto the trace clock."""
        return Callsites(
            frames=self.frames,
            call_thread=self.call_thread,
            call_start=self.call_start + offset_ns,
            call_end=self.call_end + offset_ns,
            call_frame=self.call_frame,
            scopes=[[n, t, s + offset_ns, e + offset_ns, f, d] for n, t, s, e, f, d in self.scopes],
            syncs=[[label, s + offset_ns, e + offset_ns] for label, s, e in self.syncs],
        )


def read_callsites(path: Path) -> Callsites:
    try:
        data = orjson.loads(gzip.decompress(path.read_bytes()))
    except (OSError, EOFError, orjson.JSONDecodeError) as exc:
        raise TraceFormatError(f"{path}: unreadable call-site record ({exc.__class__.__name__})") from exc
    calls = data.get("calls", {})

    def arr(key: str) -> I64Array:
        return np.asarray(calls.get(key, []), dtype=np.int64)

    return Callsites(
        frames=data.get("frames", []),
        call_thread=arr("thread_id"),
        call_start=arr("start_ns"),
        call_end=arr("end_ns"),
        call_frame=arr("frame_id"),
        scopes=data.get("scopes", []),
        syncs=data.get("syncs", []),
    )


def clock_offset(syncs: list[list[Any]], trace_sync_starts: dict[str, int]) -> int | None:
    """Median of (trace time - perf time) over the sync markers found in both, None if none matched.

    The marker's trace start lies between the perf-clock bracket's ends, so the midpoint errs by at most
    half the bracket (about a microsecond).
    """
    deltas = []
    for label, start, end in syncs:
        trace_start = trace_sync_starts.get(f"{SYNC_PREFIX}{label}")
        if trace_start is not None:
            deltas.append(trace_start - (int(start) + int(end)) // 2)
    if not deltas:
        return None
    return int(np.median(np.asarray(deltas, dtype=np.int64)))
