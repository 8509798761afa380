"""'Where each step went' as text: each part of the mean steady step (time, share, a bar), then the parts of
each step when there are few enough to read."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from tenprof.analyses.timeline.step_time import PARTS, StepTime
from tenprof.core.units import duration

LABELS = {
    "gpu": "GPU running",
    "collective": "in collectives only (communication, waiting for ranks)",
    "queued": "GPU waiting for launched work",
    "sync": "host in a sync, GPU idle",
    "allocator": "host allocating or freeing (cudaMalloc/cudaFree)",
    "cuda_api": "host in other CUDA calls",
    "data_loading": "host in the DataLoader",
    "compile": "host compiling or checking guards",
    "dispatch": "host in torch ops (dispatch, launch)",
    "python": "host in Python outside torch ops",
    "capture": "the profiler's own work",
}
# a trace recorded with the GPU's activity alone has no ops: the host's time outside CUDA calls is not known
# to be Python
UNRECORDED_HOST = "host, its work not recorded (no CPU ops in the trace)"
BAR_WIDTH = 30
STEPS_SHOWN = 12  # a table of every step's parts for runs of up to this many analysed steps


def render_step_time(result: StepTime, console: Console) -> None:
    if not result.steps:
        return
    wall = result.mean_wall_ns
    count = len(result.steady)
    what = f"the mean of {count} step{'s' if count != 1 else ''}" if result.marked else "the profiled span"
    if result.inferred:
        what = f"the mean of {count} of {len(result.steps)} iterations told from the loop's repeated calls"
    console.print(f"[bold]Where each step went[/bold] ({what}: {duration(int(wall))}; the parts add up to it)")
    left_out = [s.step for s in result.steps if s.resumed and s not in result.steady]
    if len(left_out) == 1:
        console.print(
            f"  step {left_out[0]}, the first recorded after steps run with the capture off, is left out: it pays "
            "the capture's restart"
        )
    elif left_out:
        console.print(
            f"  steps {', '.join(map(str, left_out))}, each the first recorded after steps run with the capture off, "
            "are left out: they pay the capture's restart"
        )
    if result.setup_ns:
        held = "imports, building the model, copying it to the GPU"
        if result.setup_loading_ns:  # a DataLoader's start in the set-up: more than the model's
            held = (
                f"{duration(result.setup_loading_ns)} of it in a DataLoader starting its workers or making its first "
                f"batch, the rest {held}"
            )
        console.print(
            f"  set-up before the loop ({duration(result.setup_ns)}: {held}) is left out: no steps were marked"
        )
    if not result.host_ops_recorded:
        console.print(
            "  the trace holds no CPU ops (recorded without ProfilerActivity.CPU): the host's time outside CUDA calls "
            "is one part, what it did then unknown"
        )
    grid = Table.grid(padding=(0, 2))
    for justify in ("left", "right", "right", "left"):
        grid.add_column(justify=justify)
    for part in PARTS:
        ns = result.mean(part)
        if ns <= 0:
            continue
        share = ns / wall if wall else 0.0
        label = UNRECORDED_HOST if part == "python" and not result.host_ops_recorded else LABELS[part]
        label += f" ({result.capture_method})" if part == "capture" else ""
        grid.add_row(label, duration(int(ns)), f"{share:.0%}", "#" * max(1, round(share * BAR_WIDTH)))
    console.print(grid)
    if (result.marked or result.inferred) and 1 < len(result.steps) <= STEPS_SHOWN:
        used = [p for p in PARTS if any(s.parts[p] for s in result.steps)]  # as recorded: no capture part
        table = Table(title="Per step", title_justify="left")
        table.add_column("Step", justify="right")
        table.add_column("Wall", justify="right")
        for part in used:
            table.add_column(part, justify="right")
        for s in result.steps:
            table.add_row(str(s.step), duration(s.wall_ns), *(duration(s.parts[p]) for p in used))
        console.print(table)
