"""Where a multi-pass run's time went, one line: each pass's total, split into the script's run (under ncu,
with its replays) and building its tables; passes built from another pass's run have only the latter;
then the files drawn at the end (forest, tensor stall cost: the joins of the passes)."""

from __future__ import annotations

from tenprof.store.meta import Meta


def time_breakdown(meta: Meta, drawings_s: float) -> str:
    parts = []
    for name, status in meta.passes.items():
        if status.run_s:
            what = "script under ncu" if name in ("counters", "stalls") else "script"
            parts.append(f"{name} {status.duration_s:.1f} s ({what} {status.run_s:.1f}, tables {status.build_s:.1f})")
        else:
            parts.append(f"{name} {status.duration_s:.1f} s (tables, from an earlier pass's run)")
    parts.append(f"drawings and joins {drawings_s:.1f} s")
    return "where the time went: " + "; ".join(parts)
