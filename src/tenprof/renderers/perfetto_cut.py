"""A window of a Perfetto trace, and a cap on its events, so that a multi-GB profile yields a trace a
browser opens (`tenprof export --format perfetto --window START:END --max-events N`).

Given the trace's events as a re-callable stream (`renderers.perfetto.perfetto_events`):
- the window (milliseconds since the trace's start, either end open) keeps the slices that overlap it and
  the counter samples inside it; track names are always kept;
- the cap keeps the N longest slices in the window (ties at the cut in the order they come); a launch's
  flow arrow goes with the slice it follows; counter samples are thinned to at most N/4 in all, each
  track keeping the highest sample of each of its time buckets (so a memory peak survives);
- what the cap left out is summarised on a counter track per process, "tenprof: slices left out",
  over 200 buckets of the window: how many slices and how much of their time.
The first pass (only with a cap) reads durations and counter times and values into typed arrays: memory
grows with the event count (8 bytes a slice, 16 and a track a counter sample), not with the events' text.
"""

from __future__ import annotations

from array import array
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

SUMMARY_BUCKETS = 200
COUNTER_SHARE = 4  # counters get at most max_events / COUNTER_SHARE samples
FLOW_PHASES = ("s", "t", "f")


@dataclass(frozen=True)
class TraceCut:
    start_us: float | None = None  # since the trace's start
    end_us: float | None = None
    max_events: int | None = None

    @property
    def active(self) -> bool:
        return self.start_us is not None or self.end_us is not None or self.max_events is not None


@dataclass
class CutReport:
    slices: int = 0  # in the window
    kept_slices: int = 0
    counters: int = 0  # in the window
    kept_counters: int = 0
    left_out_by_pid: dict[int, int] = field(default_factory=dict)

    def describe(self, cut: TraceCut) -> str:
        window = ""
        if cut.start_us is not None or cut.end_us is not None:
            lo = "" if cut.start_us is None else f"{cut.start_us / 1000:g}"
            hi = "" if cut.end_us is None else f"{cut.end_us / 1000:g}"
            window = f" in the window {lo}:{hi} ms"
        text = f"{self.kept_slices} of {self.slices} slices{window}"
        if self.kept_slices < self.slices:
            text += " (the longest; the rest summarised on the 'tenprof: slices left out' tracks)"
        if self.kept_counters < self.counters:
            text += f", {self.kept_counters} of {self.counters} counter samples (each bucket's highest)"
        return text


def parse_window(text: str) -> tuple[float | None, float | None]:
    """'START:END' in milliseconds since the trace's start (either may be left out) -> microseconds."""
    lo_text, sep, hi_text = text.partition(":")
    if not sep:
        raise ValueError(f"--window {text!r}: give START:END in milliseconds since the trace's start, e.g. 120:300")
    try:
        lo = float(lo_text) * 1000 if lo_text.strip() else None
        hi = float(hi_text) * 1000 if hi_text.strip() else None
    except ValueError as exc:
        raise ValueError(f"--window {text!r}: START and END must be numbers of milliseconds") from exc
    if lo is not None and hi is not None and hi <= lo:
        raise ValueError(f"--window {text!r}: END must come after START")
    return lo, hi


def _overlaps(event: dict[str, Any], cut: TraceCut) -> bool:
    ts = float(event.get("ts", 0.0))
    end = ts + float(event.get("dur", 0.0))
    return (cut.start_us is None or end >= cut.start_us) and (cut.end_us is None or ts <= cut.end_us)


def _inside(event: dict[str, Any], cut: TraceCut) -> bool:
    ts = float(event.get("ts", 0.0))
    return (cut.start_us is None or ts >= cut.start_us) and (cut.end_us is None or ts <= cut.end_us)


@dataclass
class _Plan:
    """What the first pass decided: the shortest duration kept and how many of it, the counter samples kept."""

    threshold: float = -1.0
    at_threshold: int = 0  # slices of exactly `threshold` that still fit
    counters_kept: set[int] | None = None  # ordinals among the window's counter samples; None: all
    span: tuple[float, float] = (0.0, 1.0)


def _plan(events: Iterator[dict[str, Any]], cut: TraceCut) -> _Plan:
    durations = array("d")
    counter_track: list[tuple[str, int]] = []
    counter_ts = array("d")
    counter_value = array("d")
    lo, hi = float("inf"), float("-inf")
    for event in events:
        phase = event.get("ph")
        if phase == "X" and _overlaps(event, cut):
            durations.append(float(event.get("dur", 0.0)))
            lo, hi = min(lo, float(event["ts"])), max(hi, float(event["ts"]) + float(event.get("dur", 0.0)))
        elif phase == "C" and _inside(event, cut):
            counter_track.append((str(event.get("name")), int(event.get("pid", 0))))
            counter_ts.append(float(event["ts"]))
            args = event.get("args") or {}
            counter_value.append(float(next(iter(args.values()), 0.0)) if args else 0.0)
    plan = _Plan(span=(cut.start_us if cut.start_us is not None else lo, cut.end_us if cut.end_us is not None else hi))
    limit = cut.max_events or 0
    if len(durations) > limit:
        ranked = np.sort(np.asarray(durations))[::-1]
        plan.threshold = float(ranked[limit - 1]) if limit else float("inf")
        plan.at_threshold = int(np.count_nonzero(ranked[:limit] == plan.threshold)) if limit else 0
    counter_limit = max(limit // COUNTER_SHARE, 1)
    if len(counter_ts) > counter_limit:
        plan.counters_kept = _bucket_peaks(
            counter_track, np.asarray(counter_ts), np.asarray(counter_value), counter_limit
        )
    return plan


def _bucket_peaks(tracks: list[tuple[str, int]], ts: np.ndarray, value: np.ndarray, limit: int) -> set[int]:
    """Ordinals of the samples to keep: per track, the highest of each of its time buckets, the buckets
    shared out so that at most `limit` samples are kept in all."""
    by_track: dict[tuple[str, int], list[int]] = defaultdict(list)
    for i, track in enumerate(tracks):
        by_track[track].append(i)
    per_track = max(limit // len(by_track), 1)
    kept: set[int] = set()
    for members in by_track.values():
        index = np.asarray(members)
        if len(index) <= per_track:
            kept.update(index.tolist())
            continue
        t = ts[index]
        bucket = np.minimum(
            ((t - t.min()) / max(float(t.max() - t.min()), 1e-9) * per_track).astype(np.int64), per_track - 1
        )
        order = np.lexsort((-value[index], bucket))  # by bucket, highest value first
        first = np.ones(len(order), dtype=bool)
        first[1:] = bucket[order][1:] != bucket[order][:-1]
        kept.update(index[order[first]].tolist())
    return kept


def cut_events(
    make_events: Callable[[], Iterator[dict[str, Any]]], cut: TraceCut, report: CutReport
) -> Iterator[dict[str, Any]]:
    """The events of `make_events()` inside the cut, then the summary tracks; counts into `report`."""
    plan = _plan(make_events(), cut) if cut.max_events is not None else _Plan()
    at_threshold = plan.at_threshold
    lo, hi = plan.span
    width = max(hi - lo, 1e-9) / SUMMARY_BUCKETS
    left_out: dict[int, np.ndarray] = {}
    left_out_us: dict[int, np.ndarray] = {}
    previous_kept = True
    counter = -1
    for event in make_events():
        phase = event.get("ph")
        if phase == "M":
            yield event
        elif phase == "X":
            if not _overlaps(event, cut):
                previous_kept = False
                continue
            report.slices += 1
            duration = float(event.get("dur", 0.0))
            keep = duration > plan.threshold
            if not keep and duration == plan.threshold and at_threshold > 0:
                at_threshold -= 1
                keep = True
            previous_kept = keep
            if keep:
                report.kept_slices += 1
                yield event
            else:
                pid = int(event.get("pid", 0))
                if pid not in left_out:
                    left_out[pid] = np.zeros(SUMMARY_BUCKETS, dtype=np.int64)
                    left_out_us[pid] = np.zeros(SUMMARY_BUCKETS)
                b = min(max(int((float(event["ts"]) - lo) / width), 0), SUMMARY_BUCKETS - 1)
                left_out[pid][b] += 1
                left_out_us[pid][b] += duration
        elif phase in FLOW_PHASES:
            if previous_kept and _inside(event, cut):
                yield event
        elif phase == "C":
            if not _inside(event, cut):
                continue
            counter += 1
            report.counters += 1
            if plan.counters_kept is None or counter in plan.counters_kept:
                report.kept_counters += 1
                yield event
        elif _inside(event, cut):
            yield event
    for pid, counts in sorted(left_out.items()):
        report.left_out_by_pid[pid] = int(counts.sum())
        for b in range(SUMMARY_BUCKETS):
            yield {
                "ph": "C",
                "name": "tenprof: slices left out",
                "pid": pid,
                "ts": lo + b * width,
                "args": {"count": int(counts[b]), "ms": round(float(left_out_us[pid][b]) / 1000, 3)},
            }
