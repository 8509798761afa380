"""`meta.json`: what was run, where, with which software, and the status of each pass.

Written atomically (temp file + rename) so an interrupted writer never leaves a torn file.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, model_validator

from tenprof.store.schema import SCHEMA_VERSION

PassState = Literal["complete", "partial", "failed", "running"]


class GpuInfo(BaseModel):
    index: int
    name: str
    total_memory_bytes: int = 0
    compute_capability: str = ""
    sm_count: int = 0


class PassStatus(BaseModel):
    state: PassState
    reason: str = Field("", description="why the pass is partial or failed, in words a user can act on")
    started_at: str = ""
    duration_s: float = 0.0
    run_s: float = Field(0.0, description="of duration_s, the script's run in this pass (under ncu: with its replays)")
    build_s: float = Field(0.0, description="of duration_s, turning what was recorded into the pass's tables")
    rows: dict[str, int] = Field(default_factory=dict)


class OutOfMemory(BaseModel):
    """The out-of-memory error that ended the script, and the caching allocator's state then
    (capture.out_of_memory); -1: not known (a CPU allocator's error, or CUDA not read)."""

    message: str = Field("", description="the error's own words")
    where: str = Field("", description="the line of the user's code that raised it, file:line")
    device: int = Field(-1, description="the CUDA device that ran out")
    device_type: str = Field("", description="the allocator that failed: cuda, cpu, or '' when not known")
    requested_bytes: int = Field(-1, description="what the failed allocation asked for")
    allocated_bytes: int = Field(-1, description="allocated by the caching allocator then")
    reserved_bytes: int = Field(-1, description="reserved by the caching allocator then (allocated + its free blocks)")
    largest_free_block_bytes: int = Field(-1, description="the largest free block inside the reserved segments")
    free_in_reserved_bytes: int = Field(-1, description="all free bytes inside the reserved segments")
    device_free_bytes: int = Field(-1, description="the card's free memory as the driver saw it")
    device_total_bytes: int = Field(-1, description="the card's memory")
    snapshot: str = Field("", description="the allocator's snapshot, relative to the pass's raw folder, for memory_viz")
    at_ns: int = Field(-1, description="when the allocation failed, on the trace's clock (its [OutOfMemory] event)")
    allocator_error: str = Field("", description="why the allocator's state could not be read")


class RunInfo(BaseModel):
    exit_code: int | None = None
    cut_short: bool = False
    cut_short_reason: str = ""
    out_of_memory: OutOfMemory | None = Field(None, description="set when an out-of-memory error ended the script")
    wall_time_s: float = 0.0
    cuda_device: int = Field(-1, description="the CUDA device the script used (current device at its end), -1 if none")


class TimelineInfo(BaseModel):
    """What the timeline's capture recorded and what building its tables measured, as values (None: not
    measured or not said). Profiles from before this model kept these in `options`, as strings."""

    trace_span_ns: int | None = Field(None, description="the profiled window: first start to last end in the trace")
    clock_offset_ns: int | None = Field(
        None, description="trace time minus tenprof's perf-clock time, from the clock-sync markers"
    )
    clock_uncertainty_ns: int | None = Field(None, description="half the width of clock_offset_ns's bounds")
    trace_recorded: list[str] | None = Field(
        None,
        description="an imported trace's own top-level option keys (record_shapes, profile_memory, with_stack); "
        "None where tenprof made the trace",
    )
    lines: bool = Field(True, description="tenprof recorded the Python line of each torch call")
    timed_steps_gpu: bool | None = Field(
        None,
        description="the GPU activity of the steps run with the capture off is in the trace (False: it went off "
        "with the rest; None: not said, as for imports and older runs, where it is)",
    )
    input_sampling: dict[str, Any] | None = Field(
        None,
        description="the native captures' input shapes asked in sampled steps alone (capture.input_sampling): "
        "steps, asked_steps, every_step, asked (the numbers of the steps that asked, the first 1000), why (a reason "
        "-> the steps that asked for it, the first step aside), memory_false_alarms (asks that allocator sizes made "
        "where the inputs were the same), not_asked "
        "(ops), filled, filled_without_scalars, left; None where every op's were asked for",
    )
    op_copy: dict[str, Any] | None = Field(
        None,
        description="TENPROF_OPS=sampled (experimental): the steps run without op records, their ops copied from a "
        "recorded step that launched the same work (capture.op_copy): steps_without_ops, copied_steps, "
        "unmatched (steps left without ops), ops, calls, launches_changed (steps run without op records whose "
        "launches were not their kind's: the next step recorded; None where no launch was seen); None otherwise",
    )


class Meta(BaseModel):
    schema_version: int = SCHEMA_VERSION
    tenprof_version: str = ""
    created_at: str = ""
    source: str = Field("run", description="run | import | in-process")
    command: list[str] = Field(default_factory=list)
    cwd: str = ""
    host: str = ""
    pid: int = 0
    rank: int = Field(-1, description="rank in a multi-process job (torchrun, mpirun, srun), -1 when alone")
    local_rank: int = -1
    world_size: int = 1
    launcher: str = Field("", description="the launcher whose variables named the rank")
    python_version: str = ""
    torch_version: str = ""
    cuda_version: str = ""
    driver_version: str = ""
    gpus: list[GpuInfo] = Field(default_factory=list)
    options: dict[str, str] = Field(
        default_factory=dict, description="the run's command-line options, as given (passes, lines, shapes, ...)"
    )
    timeline: TimelineInfo = Field(default_factory=TimelineInfo)
    run: RunInfo = Field(default_factory=RunInfo)
    passes: dict[str, PassStatus] = Field(default_factory=dict)
    checks: dict[str, dict[str, float]] = Field(
        default_factory=dict,
        description="cross-checks recorded at capture: torch.profiler's self device time (us) per key",
    )

    @model_validator(mode="before")
    @classmethod
    def _timeline_from_options(cls, data: Any) -> Any:
        """A meta.json from before `timeline` kept its values in `options` as strings ("None" where not
        measured): they move to `timeline`, typed. `lines` is also a command-line option, so it stays in
        `options` too; where none was given, lines were recorded unless the trace was imported."""
        if not isinstance(data, dict) or "timeline" in data:
            return data
        options = dict(data.get("options") or {})
        timeline: dict[str, Any] = {
            key: _int_or_none(options.pop(key, None))
            for key in ("trace_span_ns", "clock_offset_ns", "clock_uncertainty_ns")
        }
        if "trace_recorded" in options:
            timeline["trace_recorded"] = [key for key in options.pop("trace_recorded").split(",") if key]
        timeline["lines"] = options["lines"] == "true" if "lines" in options else data.get("source") != "import"
        return {**data, "options": options, "timeline": timeline}


def _int_or_none(text: str | None) -> int | None:
    """An old option's number: "None" or "" (or no option) where it was not measured."""
    return int(text) if text not in (None, "", "None") else None


META_FILE = "meta.json"


def read_meta(directory: Path) -> Meta:
    return Meta.model_validate_json((directory / META_FILE).read_bytes())


def write_meta(directory: Path, meta: Meta) -> None:
    fd, tmp = tempfile.mkstemp(prefix=".meta-", dir=directory)
    with os.fdopen(fd, "w") as handle:
        handle.write(meta.model_dump_json(indent=2))
    os.replace(tmp, directory / META_FILE)
