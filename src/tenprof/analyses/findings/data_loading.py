"""data-loading: the steps wait for their batches. The host is inside a DataLoader's `__next__` (the
range torch records around it) while the GPU has nothing to run: the step decomposition's data_loading
part (analyses.timeline.step_time), judged over the steady steps the decomposition's summary averages
(`Context.steady`: past the first three and the capture's restarts), so that the wait quoted is the one
"Where each step went" shows. A DataLoader with workers makes its first batches ahead, before the loop
(prefetch_factor per worker): the first steps take them without waiting, a transient the loop's later
steps never see. Its cost is the host's whole time in the loader, as far as the GPU has idle time to give
(`host_cost`), per steady step over the analysed steps.

What the fix is depends on where the loading runs: in the script's own process (num_workers=0) every
batch is made while the GPU waits, so worker processes are the fix; with workers, they cannot keep up,
so their per-item work (which the host sampler saw in them) or their number is. The lines come from the
host sampler: the Dataset's and collate's lines in the main process, or the workers' lines."""

from __future__ import annotations

import numpy as np

from tenprof.analyses.findings.context import Context, host_cost
from tenprof.analyses.findings.meanwhile import Meanwhile, host_meanwhile
from tenprof.analyses.findings.model import Finding
from tenprof.analyses.timeline.step_time import DATA_LOADER_MARK
from tenprof.core.quantities import duration

SINGLE_PROCESS = "_SingleProcessDataLoaderIter"


def check(ctx: Context) -> list[Finding]:
    blocks = ctx.parts["data_loading"]
    idle_per_step = ctx.steady_per_step(*blocks)
    step_ns = ctx.steady_step_ns()
    if not step_ns or idle_per_step < ctx.t.data_loading_min_share * step_ns:
        return []
    count = ctx.step_count
    waited = host_cost(
        ctx, round(idle_per_step * count), round(ctx.steady_per_step(*ctx.host_causes["data_loading"]) * count)
    )
    single = _single_process(ctx)
    host = host_meanwhile(ctx, *blocks)
    share = idle_per_step / step_ns
    steady = int(ctx.steady.sum())
    seen = [
        f"each step waits {duration(idle_per_step)} for its batch with the GPU idle: {100 * share:.0f}% of "
        f"the mean of {steady} steady step(s), inside "
        + ("a DataLoader running in this process (num_workers=0)" if single else "a DataLoader with worker processes"),
        *host.seen,
    ]
    pinned = _pinned_share(ctx)
    if pinned is not None and pinned < 1:
        seen.append(f"{100 * (1 - pinned):.0f}% of the bytes copied to the GPU in the steps came from pageable memory")
    return [
        Finding(
            id="data-loading",
            title=f"Data loading: the steps wait {100 * share:.0f}% of their time for the DataLoader"
            + (" (num_workers=0)" if single else " (its workers cannot keep up)"),
            cost_ns=waited,
            seen=seen,
            where=host.where[:3] or _line_after_loading(ctx),
            why="While the host makes or waits for the next batch, no GPU work is queued; the GPU idles for that "
            "long in every step.",
            fix=_fix(single, host, pinned),
            numbers={"waited_ns": float(waited), "share": share, "single_process": float(single)},
        )
    ]


def _single_process(ctx: Context) -> bool:
    loaders = [n for n in ctx.profile.strings("scopes", "name").values if n.startswith(DATA_LOADER_MARK)]
    return bool(loaders) and all(SINGLE_PROCESS in n for n in loaders)


def _pinned_share(ctx: Context) -> float | None:
    """The share of the bytes copied host-to-device in the steps that came from pinned memory."""
    t = ctx.profile.table("transfers")
    if t.num_rows == 0:
        return None
    to_gpu = ctx.profile.strings("transfers", "direction").equals("HtoD") & ctx.in_steps(ctx.transfer_issue_ns)
    size = t.column("bytes").to_numpy()
    total = int(size[to_gpu].sum())
    if not total:
        return None
    pinned = ctx.profile.strings("transfers", "src_memory").equals("Pinned")
    return int(size[to_gpu & pinned].sum()) / total


def _line_after_loading(ctx: Context) -> list[str]:
    """Without samples: the line of the first op after the loader's ranges (the step's use of the batch)."""
    scopes = ctx.profile.table("scopes")
    loading = ctx.profile.strings("scopes", "name").where(lambda n: n.startswith(DATA_LOADER_MARK))
    ends = scopes.column("end_ns").to_numpy()[loading]
    ops = ctx.profile.table("ops")
    top = np.flatnonzero(ops.column("depth").to_numpy() == 0)
    starts = ops.column("start_ns").to_numpy()[top]
    order = np.argsort(starts, kind="stable")
    nxt = np.searchsorted(starts[order], ends[ctx.in_steps(ends)], side="left")
    nxt = nxt[nxt < len(order)]
    return ctx.where(top[order][nxt], limit=1) if len(nxt) else []


def _fix(single: bool, host: Meanwhile, pinned: float | None) -> str:
    busiest = host.worker_line or (host.where[0] if host.where else "")
    top = f" (most of it in {busiest})" if busiest else ""
    pageable = pinned is not None and pinned < 1
    pin = " Pass pin_memory=True and copy with .to(device, non_blocking=True)." if pageable else ""
    if single:
        return (
            f"Load in worker processes: DataLoader(num_workers=N) makes the next batches while the GPU works on this "
            f"one; the loading runs in the training process now{top}.{pin}"
        )
    return (
        f"The workers make batches slower than the steps use them{top}: make the per-item work cheaper (decode, "
        f"transform or cache less per item), or start more workers (num_workers), so batches are ready ahead.{pin}"
    )
