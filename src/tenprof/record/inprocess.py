"""`with tenprof.profile("out") as p:` profiles a block of code in the calling process.

Same recorder and same profile directory as `tenprof run`, for notebooks and for code that cannot be
run as a script. Call `p.step()` (or `tenprof.step()`) once per iteration to mark steps (`tokens=N`:
how many tokens the step held).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

from tenprof.capture import environment, profiler_guard
from tenprof.capture.out_of_memory import post_mortem
from tenprof.capture.overhead_plan import DEFAULT_COUNT as DEFAULT_OVERHEAD_STEPS
from tenprof.capture.ranks import rank_from_env
from tenprof.capture.runtime import checked_tokens
from tenprof.capture.schedule import Schedule
from tenprof.capture.timeline import TimelineOptions, TimelineSession
from tenprof.core.version import VERSION
from tenprof.importers.timeline_import import now_iso
from tenprof.record.pass_builders import finish_timeline
from tenprof.sourcefiles import raised_at
from tenprof.store.directory import OutputDirectory, open_output_dir
from tenprof.store.meta import GpuInfo, Meta, OutOfMemory, PassStatus, TimelineInfo, write_meta
from tenprof.store.profile import Profile, load_profile
from tenprof.store.schema import Pass
from tenprof.store.writer import PassWriter


class InProcessProfile:
    def __init__(
        self,
        output: str = "tenprof-out",
        force: bool = False,
        lines: bool = True,
        shapes: bool = True,
        memory: bool = True,
        schedule: str = "",
        overhead_steps: int = DEFAULT_OVERHEAD_STEPS,
    ) -> None:
        self.out_dir = Path(output)
        self.force = force
        self.options = TimelineOptions(
            lines=lines,
            shapes=shapes,
            memory=memory,
            schedule=Schedule.parse(schedule) if schedule else None,
            overhead_steps=overhead_steps,
            keep_profiler_lines_out=True,  # no launcher here to filter them
        )
        self._session: TimelineSession | None = None
        self._writer: PassWriter | None = None
        self._meta = Meta()
        self._started = 0.0
        self._output: OutputDirectory | None = None

    def __enter__(self) -> InProcessProfile:
        profiler_guard.refuse_if_recording()  # before anything is written
        # With force=True over an existing profile this writes into a staging directory; the old profile
        # is replaced only in __exit__, once the new one is complete.
        self._output = output = open_output_dir(self.out_dir, self.force)
        env = environment.describe()
        self._meta = Meta(
            tenprof_version=VERSION,
            created_at=now_iso(),
            source="in-process",
            command=[sys.argv[0]],
            cwd=os.getcwd(),
            pid=os.getpid(),
            host=env["host"],
            python_version=env["python_version"],
            torch_version=env["torch_version"],
            cuda_version=env["cuda_version"],
            driver_version=env["driver_version"],
            gpus=[GpuInfo(**g) for g in env["gpus"]],
            timeline=TimelineInfo(lines=self.options.lines),
        )
        rank = rank_from_env()  # a rank of a job (an on-demand capture of each rank): said as a run says it
        if rank is not None:
            self._meta.rank, self._meta.local_rank = rank.rank, rank.local_rank
            self._meta.world_size, self._meta.launcher = rank.world_size, rank.launcher
        self._meta.passes[Pass.TIMELINE] = PassStatus(state="running", started_at=self._meta.created_at)
        write_meta(output.path, self._meta)
        self._writer = PassWriter(output.path, Pass.TIMELINE)
        raw = self._writer.tmp_dir / "raw"
        raw.mkdir()
        self._session = TimelineSession(raw, self.options)
        self._started = time.perf_counter()
        self._session.start()
        return self

    def cut_short(self, reason: str) -> None:
        """Mark the recording as cut short (saved partial) before it is closed: the job ended during it."""
        self._meta.run.cut_short = True
        self._meta.run.cut_short_reason = reason

    def step(self, tokens: int | None = None) -> None:
        """The end of a step, as tenprof.step(); `tokens`: how many tokens the step held."""
        if self._session is None:
            return
        if tokens is not None:
            self._session.record_tokens(checked_tokens(tokens))
        self._session.step()

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        self.stop_recording(exc)
        self.save()

    def stop_recording(self, exc: BaseException | None = None) -> None:
        """The first half of the exit, on the thread that started the recording: stop it (after keeping an
        out-of-memory error's post-mortem, while the block's tensors are still held by the traceback)."""
        assert self._session is not None and self._writer is not None
        meta = self._meta
        if exc is not None:
            memory = post_mortem(exc, self._writer.tmp_dir / "raw")
            if memory is not None:
                meta.run.out_of_memory = OutOfMemory(**memory, where=raised_at(exc))
        self._session.stop()
        meta.run.wall_time_s = time.perf_counter() - self._started
        if exc is not None:
            meta.run.cut_short = True
            meta.run.cut_short_reason = f"the block raised {type(exc).__name__}: {str(exc)[:200]}"

    def save(self) -> None:
        """The second half: build the tables and put the profile in place; any thread (an on-demand
        capture's build runs beside the job, record.on_demand)."""
        assert self._writer is not None and self._output is not None
        meta = self._meta
        try:
            status = finish_timeline(self._writer, self._writer.tmp_dir / "raw", meta, "", "")
        except Exception as exc:  # keep the raw recording whatever goes wrong in building the tables
            status = PassStatus(state="failed", reason=f"building the profile failed: {exc.__class__.__name__}: {exc}")
        status.duration_s = time.perf_counter() - self._started
        status.rows = dict(self._writer.rows)
        self._writer.commit()
        meta.passes[Pass.TIMELINE] = status
        write_meta(self._output.path, meta)
        self._output.commit()

    @property
    def profile(self) -> Profile:
        return load_profile(self.out_dir)
