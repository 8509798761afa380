"""What the host was doing in given windows of time (the GPU's idle gaps, a straggler's extra time),
from the host sampler's samples (`host_samples`): the sampled time per line of the user's code, the
innermost frame of the thread's call path that is the user's, with the function it was in and whether
a torch op was running. Profiles recorded without the sampler have no samples: then nothing is said.
DataLoader worker processes are sampled too (process_id != 0): their lines are asked for apart, as the
work the script's main thread waited for.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from tenprof.analyses.timeline.summary import user_frame_of
from tenprof.core.intervals import I64Array, coverage
from tenprof.store.profile import Profile


@dataclass(frozen=True)
class HostLine:
    line: str  # file:line of the user's code, or "(no line of yours)"
    function: str  # the function that line is in
    in_torch_op: bool  # a torch op was running (the time is the op's, seen from Python)
    ns: int  # sampled time in the windows
    waiting_for: str = ""  # what the line was waiting for, when it is known to wait (WORKERS)


WORKERS = "the DataLoader's worker processes"


# Library code whose time is a wait for work done in another process: (path part, functions, what).
# The DataLoader's own work in this process (num_workers=0: fetching, collating) is not a wait.
_WAITS = (("/torch/utils/data/dataloader.py", ("_get_data", "_try_get_data"), WORKERS),)


def sampled(profile: Profile) -> bool:
    return bool(profile.table("host_samples").num_rows > 0)


def host_lines(
    profile: Profile, lo: I64Array, hi: I64Array, thread: int | None = None, workers: bool = False
) -> list[HostLine]:
    """The sampled time in the windows [lo, hi) (of one thread, or all), by line, most first: of the
    script's own process, or (`workers`) of its DataLoader worker processes' main threads."""
    samples = profile.table("host_samples")
    if samples.num_rows == 0 or len(lo) == 0:
        return []
    ts = samples.column("ts_ns").to_numpy()
    inside = coverage(lo, hi, ts, ts + 1) > 0
    process = samples.column("process_id").to_numpy()
    # a worker's main thread (its thread id is its process id) does the loading; its other threads
    # (multiprocessing's queue feeder, the fd-sharing listener) wait for work or pass batches on
    inside &= (process == samples.column("thread_id").to_numpy()) if workers else (process == 0)
    if thread is not None:
        inside &= samples.column("thread_id").to_numpy() == thread
    frames = profile.table("frames")
    user = user_frame_of(profile)
    files, lines = frames.column("file").to_pylist(), frames.column("line").to_pylist()
    functions = frames.column("function").to_pylist()
    frame = samples.column("frame_id").to_numpy()
    op = samples.column("op_id").to_numpy()
    weight = samples.column("weight_ns").to_numpy()
    parents = frames.column("parent_frame_id").to_pylist()
    waits: dict[int, str] = {}

    def waiting_in(f: int, stop: int) -> str:
        """What the frames from `f` up to (not including) the user's frame `stop` wait in, if anything."""
        if f not in waits:
            found, node = "", f
            while node >= 0 and node != stop and not found:
                path = str(files[node]).replace("\\", "/")
                found = next((what for part, names, what in _WAITS if part in path and functions[node] in names), "")
                node = parents[node]
            waits[f] = found
        return waits[f]

    tally: dict[tuple[str, str, bool, str], int] = defaultdict(int)
    for i in np.flatnonzero(inside).tolist():
        u = int(user[frame[i]]) if frame[i] >= 0 else -1
        key = (f"{files[u]}:{lines[u]}", str(functions[u])) if u >= 0 else ("(no line of yours)", "")
        waiting = waiting_in(int(frame[i]), u) if frame[i] >= 0 else ""
        tally[(*key, bool(op[i] >= 0), waiting)] += int(weight[i])
    return [HostLine(k[0], k[1], k[2], v, k[3]) for k, v in sorted(tally.items(), key=lambda kv: -kv[1])]


def worker_processes(profile: Profile, lo: I64Array, hi: I64Array) -> int:
    """How many DataLoader worker processes were sampled in the windows [lo, hi)."""
    samples = profile.table("host_samples")
    if samples.num_rows == 0 or len(lo) == 0:
        return 0
    ts = samples.column("ts_ns").to_numpy()
    process = samples.column("process_id").to_numpy()
    return len(np.unique(process[(coverage(lo, hi, ts, ts + 1) > 0) & (process != 0)]))


def main_thread(profile: Profile) -> int | None:
    """The thread of the script's own process with the most samples: its main thread."""
    samples = profile.table("host_samples")
    thread = samples.column("thread_id").to_numpy()[samples.column("process_id").to_numpy() == 0]
    if len(thread) == 0:
        return None
    values, counts = np.unique(thread, return_counts=True)
    return int(values[np.argmax(counts)])


@dataclass(frozen=True)
class SampledSpan:
    start_ns: int
    end_ns: int
    label: str  # "function() at file:line", or "(no line of yours)"


def sampled_spans(profile: Profile, thread: int) -> list[SampledSpan]:
    """The thread's sampled time as spans: consecutive samples at one line of the user's code within one
    step merged, each sample covering the time since the one before it (see the host_samples table)."""
    samples = profile.table("host_samples")
    if samples.num_rows == 0:
        return []
    mine = np.flatnonzero(samples.column("thread_id").to_numpy() == thread)
    ts = samples.column("ts_ns").to_numpy()
    mine = mine[np.argsort(ts[mine], kind="stable")]
    frames = profile.table("frames")
    user = user_frame_of(profile)
    files, lines = frames.column("file").to_pylist(), frames.column("line").to_pylist()
    functions = frames.column("function").to_pylist()
    frame, weight = samples.column("frame_id").to_numpy(), samples.column("weight_ns").to_numpy()
    # a span never crosses a step's start: a line sampled at the end of one step and the start of the
    # next is two visits, whatever the sampler missed in between
    step_of = np.searchsorted(np.sort(profile.table("steps").column("start_ns").to_numpy()), ts, side="right")
    spans: list[SampledSpan] = []
    last_step = -1
    for i in mine.tolist():
        u = int(user[frame[i]]) if frame[i] >= 0 else -1
        label = f"{functions[u]}() at {files[u]}:{lines[u]}" if u >= 0 else "(no line of yours)"
        start, end = int(ts[i] - weight[i]), int(ts[i])
        if spans and spans[-1].label == label and spans[-1].end_ns >= start and step_of[i] == last_step:
            spans[-1] = SampledSpan(spans[-1].start_ns, end, label)
        else:
            spans.append(SampledSpan(max(start, spans[-1].end_ns if spans else start), end, label))
        last_step = int(step_of[i])
    return spans
