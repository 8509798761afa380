"""`meta.json`: what was run, where, with which software, and the status of each pass.

Written atomically (temp file + rename) so an interrupted writer never leaves a torn file.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

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
    rows: dict[str, int] = Field(default_factory=dict)


class RunInfo(BaseModel):
    exit_code: int | None = None
    cut_short: bool = False
    cut_short_reason: str = ""
    wall_time_s: float = 0.0
    cuda_device: int = Field(-1, description="the CUDA device the script used (current device at its end), -1 if none")


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
    options: dict[str, str] = Field(default_factory=dict)
    run: RunInfo = Field(default_factory=RunInfo)
    passes: dict[str, PassStatus] = Field(default_factory=dict)
    checks: dict[str, dict[str, float]] = Field(
        default_factory=dict,
        description="cross-checks recorded at capture: torch.profiler's self device time (us) per key",
    )


META_FILE = "meta.json"


def read_meta(directory: Path) -> Meta:
    return Meta.model_validate_json((directory / META_FILE).read_bytes())


def write_meta(directory: Path, meta: Meta) -> None:
    fd, tmp = tempfile.mkstemp(prefix=".meta-", dir=directory)
    with os.fdopen(fd, "w") as handle:
        handle.write(meta.model_dump_json(indent=2))
    os.replace(tmp, directory / META_FILE)
