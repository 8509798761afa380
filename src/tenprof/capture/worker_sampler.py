"""The host sampler inside DataLoader worker processes: where each worker's Python was while the script
waited for the loader, so "waiting for the DataLoader" comes with the worker's own hot lines.

While the timeline pass runs, torch's worker entry point (`torch.utils.data._utils.worker._worker_loop`,
which the DataLoader looks up each time it starts workers) is replaced by `sampled_worker_loop`, which
runs a `HostSampler` in the worker around the original loop. The settings travel in the environment, so
workers started by fork and by spawn (which imports this module afresh) both find them. Each worker
appends what it sampled since its last write to `worker-<pid>.jsonl` in the given directory, about four
times a second and when it ends, one JSON line each: a worker still running when the capture stops, or
killed at shutdown, has left what it had. `collect` reads those files back into the script's own frame
tree at the end of the capture. Times are on the same perf clock (CLOCK_MONOTONIC on Linux) in every
process. Workers are sampled throughout (they do not know the script's capture-off steps); analyses use
their samples only inside the windows they look at.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from tenprof.capture.frames import FrameInterner, new_interner
from tenprof.capture.host_sampler import HostSampler

DIRECTORY_VARIABLE = "TENPROF_WORKER_SAMPLES_DIR"
INTERVAL_VARIABLE = "TENPROF_WORKER_SAMPLE_INTERVAL_NS"
FLUSH_EVERY_S = 0.25

_original_loop: Callable[..., Any] | None = None


def install(directory: Path, interval_ns: int) -> None:
    """Sample the workers of every DataLoader started from now on, into `directory`."""
    global _original_loop
    from torch.utils.data._utils import worker

    directory.mkdir(parents=True, exist_ok=True)
    os.environ[DIRECTORY_VARIABLE] = str(directory)
    os.environ[INTERVAL_VARIABLE] = str(interval_ns)
    if _original_loop is None:
        _original_loop = worker._worker_loop
        worker._worker_loop = sampled_worker_loop


def uninstall() -> None:
    global _original_loop
    from torch.utils.data._utils import worker

    os.environ.pop(DIRECTORY_VARIABLE, None)
    os.environ.pop(INTERVAL_VARIABLE, None)
    if _original_loop is not None:
        worker._worker_loop = _original_loop
        _original_loop = None


def sampled_worker_loop(*args: Any, **kwargs: Any) -> Any:
    """torch's worker loop, sampled when the environment says where to; in a spawned worker this module
    was imported afresh, so torch's own loop is the one still in its module."""
    from torch.utils.data._utils import worker

    loop = _original_loop if _original_loop is not None else worker._worker_loop
    directory = os.environ.get(DIRECTORY_VARIABLE)
    if not directory:
        return loop(*args, **kwargs)
    writer = _WorkerWriter(Path(directory) / f"worker-{os.getpid()}.jsonl", int(os.environ[INTERVAL_VARIABLE]))
    writer.start()
    try:
        return loop(*args, **kwargs)
    finally:
        writer.stop()


class _WorkerWriter:
    """A HostSampler in this worker, and a thread that appends its new frames and samples to a file."""

    def __init__(self, path: Path, interval_ns: int) -> None:
        self.path = path
        # A forked worker's stack still holds the script's frames up to the fork (the line that started the
        # DataLoader): cut at the worker's entry point, so an idle worker is not at the script's line.
        self.interner = new_interner(sampled_worker_loop.__code__)
        self.sampler = HostSampler(self.interner, interval_ns)
        self._stop = threading.Event()
        self._frames_written = 0
        self._samples_written = 0
        self._thread = threading.Thread(target=self._run, name="tenprof-worker-writer", daemon=True)

    def start(self) -> None:
        self.sampler.start()
        self._thread.start()

    def stop(self) -> None:
        self.sampler.stop()
        self._stop.set()
        self._thread.join(timeout=1.0)
        self._flush()

    def _run(self) -> None:
        while not self._stop.wait(FLUSH_EVERY_S):
            self._flush()

    def _flush(self) -> None:
        # Frames first: every sample written names a frame already in the file (rows are appended under
        # the interner's lock before a sample can name them, and whole triples at a time).
        frames = self.interner.rows[self._frames_written :]
        samples = self.sampler.samples[self._samples_written :]
        samples = samples[: len(samples) - len(samples) % 3]
        if not frames and not samples:
            return
        line = orjson.dumps({"frames": frames, "samples": samples.tolist()}) + b"\n"
        try:
            with self.path.open("ab") as out:
                out.write(line)
        except OSError:  # the capture has ended and its directory is gone: nothing left to report to
            return
        self._frames_written += len(frames)
        self._samples_written += len(samples)


def collect(directory: Path, interner: FrameInterner) -> list[int]:
    """The workers' samples as (process id, thread id, time, frame id) quadruples, flattened, their call
    paths interned into the script's own frame tree; an unfinished last line (a worker stopped while
    writing) is left out."""
    out: list[int] = []
    for path in sorted(directory.glob("worker-*.jsonl")):
        try:
            process = int(path.stem.removeprefix("worker-"))
            lines = path.read_bytes().splitlines()
        except (OSError, ValueError):
            continue
        mapped: list[int] = []  # the worker's frame id -> the script's
        for raw in lines:
            try:
                chunk = orjson.loads(raw)
            except orjson.JSONDecodeError:
                break
            for _node, parent, file, line, function, *_ in chunk["frames"]:
                mapped.append(interner.intern_row(mapped[parent] if parent >= 0 else -1, file, line, function))
            samples = chunk["samples"]
            for i in range(0, len(samples), 3):
                frame = samples[i + 2]
                out.extend((process, samples[i], samples[i + 1], mapped[frame] if frame >= 0 else -1))
    return out
