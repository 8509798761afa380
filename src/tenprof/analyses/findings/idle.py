"""idle-gaps: per GPU stream, the gaps between its kernels and copies inside steps, and what the host
was doing meanwhile: blocked in a synchronization, moving data, or simply not launching work in time."""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from tenprof.analyses.findings.context import Context
from tenprof.analyses.findings.model import Finding
from tenprof.renderers.units import duration

SYNC_MARK = "Synchronize"


def check(ctx: Context) -> list[Finding]:
    k, t = ctx.profile.table("kernels"), ctx.profile.table("transfers")
    if k.num_rows + t.num_rows == 0:
        return []
    device = np.concatenate([k.column("device").to_numpy(), t.column("device").to_numpy()]).astype(np.int64)
    stream = np.concatenate([k.column("stream").to_numpy(), t.column("stream").to_numpy()])
    start = np.concatenate([k.column("start_ns").to_numpy(), t.column("start_ns").to_numpy()])
    end = np.concatenate([k.column("end_ns").to_numpy(), t.column("end_ns").to_numpy()])
    op = np.concatenate([k.column("op_id").to_numpy(), t.column("op_id").to_numpy()])
    is_transfer = np.concatenate([np.zeros(k.num_rows, bool), np.ones(t.num_rows, bool)])
    api = ctx.profile.table("api_calls")
    sync_end = api.column("end_ns").to_numpy()[
        np.array([SYNC_MARK in n for n in api.column("name").to_pylist()], dtype=bool)
    ]
    sync_end.sort()
    t_start, t_end = start[is_transfer], end[is_transfer]
    min_gap = int(ctx.t.idle_min_gap_us * 1000)

    worst: tuple[int, tuple[int, int], dict[str, int], list[tuple[int, str, int, int]]] | None = None
    for key in sorted(set(zip(device.tolist(), stream.tolist(), strict=True))):
        sel = np.flatnonzero((device == key[0]) & (stream == key[1]))
        sel = sel[np.argsort(start[sel], kind="stable")]
        s, e, o = start[sel], np.maximum.accumulate(end[sel]), op[sel]
        gap_start, gap_end = e[:-1], s[1:]
        step_of_start, step_of_end = ctx.step_index(gap_start), ctx.step_index(gap_end)
        real = (gap_end - gap_start >= min_gap) & (step_of_start >= 0) & (step_of_start == step_of_end)
        by_kind: dict[str, int] = defaultdict(int)
        gaps: list[tuple[int, str, int, int]] = []
        for i in np.flatnonzero(real):
            lo, hi = int(gap_start[i]), int(gap_end[i])
            j = np.searchsorted(sync_end, lo)
            if j < len(sync_end) and sync_end[j] <= hi:
                kind = "waiting on a synchronization"
            elif ((t_start < hi) & (t_end > lo)).any():
                kind = "waiting on a transfer"
            else:
                kind = "host not launching work"
            by_kind[kind] += hi - lo
            gaps.append((hi - lo, kind, int(o[i]), int(o[i + 1])))
        total = sum(by_kind.values())
        if worst is None or total > worst[0]:
            worst = (total, key, dict(by_kind), gaps)
    if worst is None or worst[0] < ctx.t.idle_min_share * ctx.analysed_ns or worst[0] == 0:
        return []
    total, (dev, strm), by_kind, gaps = worst
    gaps.sort(reverse=True)
    seen = [
        f"GPU {dev} stream {strm}: {len(gaps)} gaps of at least {ctx.t.idle_min_gap_us:.0f} us, "
        f"{duration(total)} = {100 * total / ctx.analysed_ns:.0f}% of {ctx.step_count} step(s)"
    ]
    seen += [f"{duration(v)} {kind}" for kind, v in sorted(by_kind.items(), key=lambda kv: -kv[1])]
    seen += [
        f"gap of {duration(d)} ({kind}) after {ctx.line_of_op(before)}, before {ctx.line_of_op(after)}"
        for d, kind, before, after in gaps[:3]
    ]
    main_kind = max(by_kind, key=lambda kind: by_kind[kind])
    fix = {
        "host not launching work": "Move the CPU work between these lines off the critical path: prepare the next "
        "batch in a DataLoader with workers and pin_memory, avoid Python work between GPU ops, or overlap it "
        "with GPU work by launching the GPU work first.",
        "waiting on a synchronization": "Remove the synchronization (see the sync-in-loop finding): keep values on "
        "the GPU and read them once, after the loop.",
        "waiting on a transfer": "Copy from pinned memory with non_blocking=True, on a side stream, ahead of use, "
        "so the copy overlaps compute.",
    }[main_kind]
    return [
        Finding(
            id="idle-gaps",
            title=f"GPU idle {100 * total / ctx.analysed_ns:.0f}% of the steps in gaps, mostly {main_kind}",
            cost_ns=int(total),
            seen=seen,
            where=list(dict.fromkeys(ctx.line_of_op(after) for _, _, _, after in gaps))[:3],
            why="While a stream has no work queued, the GPU does nothing; the time shows up in every step.",
            fix=fix,
            numbers={"idle_ns": float(total), **{k.replace(" ", "_") + "_ns": float(v) for k, v in by_kind.items()}},
        )
    ]
