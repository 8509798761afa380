"""Where each step went: its wall time split into exclusive parts along the host/GPU critical path, parts
that add up to the step exactly (pure; no I/O).

Each recorded, complete step [start, end) (or, where no step was marked, the profiled span as one) is cut
into instants, and each instant goes to one part:
- `gpu`: the GPU runs something (a kernel or a copy, any stream). The step waits on the GPU then,
  whatever the host does meanwhile: shortening it means less or faster GPU work.
Of the instants the GPU is idle, each goes to the first of these that holds then, from the main thread's
state (the thread that ran the most top-level ops; scopes and CUDA calls of that thread):
- `queued`: work was launched and has not started yet (launch latency, a stream waiting on an event or on
  another stream): the GPU's wait, not the host's;
- `sync`: the host is inside a synchronizing CUDA call (`cudaDeviceSynchronize`, `cudaStreamSynchronize`,
  `cudaEventSynchronize`, a blocking `cudaMemcpy`) while the GPU has nothing to run: the sync's latency;
- `allocator`: the host is inside cudaMalloc, cudaFree or another allocating call (the caching allocator
  missing, `torch.cuda.empty_cache()` giving memory back);
- `cuda_api`: the host is inside any other CUDA call that does not launch work (module loads, attribute
  queries, stream and event creation);
- `data_loading`: the host is inside a DataLoader's `__next__` (the range torch records around it),
  loading in its own process or waiting for its workers;
- `compile`: the host is compiling (`entire_frame_compile`) or checking compiled code's guards
  (`TorchDynamo Cache Lookup`);
- `dispatch`: the host is inside a top-level torch op (dispatching it, launching its kernels);
- `python`: anywhere else: the script's own Python between ops (the host sampler's lines say which).
The order puts the most specific cause first: a cudaMalloc runs inside an op, an op inside a DataLoader's
`__next__`. Every idle instant lands in exactly one part and `python` takes what is left, so the parts sum
to the step's wall time; `Step.parts` are in nanoseconds. The summary is the mean steady step (past the
first three), whose parts add up to it too.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from tenprof.analyses.op_kinds import SYNC_CALLS
from tenprof.analyses.overhead import COLD_STEPS, kernel_launch_ns, recorded_steps
from tenprof.analyses.summary import profiled_span
from tenprof.core.intervals import I64Array, coverage, merged, uncovered
from tenprof.store.profile import Profile

PARTS = ("gpu", "queued", "sync", "allocator", "cuda_api", "data_loading", "compile", "dispatch", "python")
IDLE_PARTS = PARTS[1:]

ALLOCATOR_CALLS = frozenset(
    {"cudaMalloc", "cudaFree", "cudaMallocHost", "cudaFreeHost", "cudaHostAlloc", "cudaMallocAsync", "cudaFreeAsync"}
    | {"cuMemAlloc_v2", "cuMemFree_v2", "cuMemCreate", "cuMemRelease", "cuMemMap", "cuMemUnmap"}
)
# calls that hand work to the GPU and return: the op that makes them is dispatching, not waiting
_WORK_WORDS = ("Launch", "MemcpyAsync", "MemsetAsync", "EventRecord", "StreamWaitEvent", "GraphLaunch")
DATA_LOADER_MARK = "enumerate(DataLoader)#"
COMPILE_OPS = frozenset({"entire_frame_compile", "TorchDynamo Cache Lookup"})


@dataclass(frozen=True)
class Step:
    step: int  # the step's number, -1 for the profiled span of a run without steps
    wall_ns: int
    parts: dict[str, int] = field(default_factory=dict)  # PARTS -> ns; they sum to wall_ns


@dataclass(frozen=True)
class StepTime:
    steps: list[Step]
    marked: bool  # False: no step was marked, the one "step" is the profiled span

    @property
    def steady(self) -> list[Step]:
        """The steps past the cold ones (building, compiling, tuning), or all where none is."""
        warm = [s for s in self.steps if s.step >= COLD_STEPS]
        return warm or self.steps

    def mean(self, part: str) -> float:
        """The part in the mean steady step: its time over the steady steps, per step. The means add up
        to the mean step, and a run whose steps are of two kinds (every other one waits for its data)
        keeps both kinds in them, where a median step would show one."""
        steady = self.steady
        return sum(s.parts[part] for s in steady) / len(steady) if steady else 0.0

    @property
    def mean_wall_ns(self) -> float:
        steady = self.steady
        return sum(s.wall_ns for s in steady) / len(steady) if steady else 0.0


Intervals = tuple[I64Array, I64Array]


def step_time(profile: Profile) -> StepTime:
    steps = profile.table("steps")
    recorded = recorded_steps(profile) if steps.num_rows else np.zeros(0, dtype=bool)
    lo = steps.column("start_ns").to_numpy()[recorded] if steps.num_rows else np.zeros(0, np.int64)
    hi = steps.column("end_ns").to_numpy()[recorded] if steps.num_rows else np.zeros(0, np.int64)
    numbers = steps.column("step").to_numpy()[recorded] if steps.num_rows else np.zeros(0, np.int64)
    marked = bool(len(lo))
    if not marked:
        span = profiled_span(profile, ("ops", "kernels", "transfers"))
        if span == (0, 0):  # nothing recorded
            return StepTime([], False)
        lo, hi, numbers = np.array([span[0]]), np.array([span[1]]), np.array([-1])
    lo, hi = np.asarray(lo, dtype=np.int64), np.asarray(hi, dtype=np.int64)
    gpu = _gpu_busy(profile)
    parts = {"gpu": coverage(*gpu, lo, hi)}
    idle = uncovered((lo, hi), gpu)
    for name, intervals in _idle_causes(profile).items():
        inside = _length_per_step(idle, lo, hi)
        idle = uncovered(idle, intervals)
        parts[name] = inside - _length_per_step(idle, lo, hi)
    parts["python"] = _length_per_step(idle, lo, hi)
    return StepTime(
        [
            Step(int(n), int(b - a), {name: int(parts[name][i]) for name in PARTS})
            for i, (n, a, b) in enumerate(zip(numbers, lo, hi, strict=True))
        ],
        marked,
    )


def _length_per_step(blocks: Intervals, lo: I64Array, hi: I64Array) -> I64Array:
    return coverage(*blocks, lo, hi)


def _gpu_busy(profile: Profile) -> Intervals:
    k, t = profile.table("kernels"), profile.table("transfers")
    starts = np.concatenate([k.column("start_ns").to_numpy(), t.column("start_ns").to_numpy()])
    ends = np.concatenate([k.column("end_ns").to_numpy(), t.column("end_ns").to_numpy()])
    return merged(starts.astype(np.int64), ends.astype(np.int64))


def _idle_causes(profile: Profile) -> dict[str, Intervals]:
    """Each idle part's intervals (the main thread's, where the part is the host's), in the order they
    claim the GPU's idle time."""
    thread = _main_thread(profile)
    api = profile.table("api_calls")
    api_thread = api.column("thread_id").to_numpy() == thread
    api_names = profile.strings("api_calls", "name")
    a_start, a_end = api.column("start_ns").to_numpy(), api.column("end_ns").to_numpy()

    def calls(test: Callable[[str], bool]) -> Intervals:
        chosen = api_names.where(test) & api_thread
        return a_start[chosen], a_end[chosen]

    scopes = profile.table("scopes")
    on_main = scopes.column("thread_id").to_numpy() == thread
    loading = np.array([str(n).startswith(DATA_LOADER_MARK) for n in scopes.column("name").to_pylist()], dtype=bool)
    loading &= on_main
    ops = profile.table("ops")
    top = (ops.column("depth").to_numpy() == 0) & (ops.column("thread_id").to_numpy() == thread)
    compiling = profile.strings("ops", "name").where(lambda n: n in COMPILE_OPS)
    o_start, o_end = ops.column("start_ns").to_numpy(), ops.column("end_ns").to_numpy()
    return {
        "queued": _queued(profile),
        "sync": calls(lambda n: n in SYNC_CALLS),
        "allocator": calls(lambda n: n in ALLOCATOR_CALLS),
        "cuda_api": calls(lambda n: n not in SYNC_CALLS and n not in ALLOCATOR_CALLS and not _hands_work(n)),
        "data_loading": (scopes.column("start_ns").to_numpy()[loading], scopes.column("end_ns").to_numpy()[loading]),
        "compile": (o_start[compiling], o_end[compiling]),
        "dispatch": (o_start[top], o_end[top]),
    }


def _hands_work(name: str) -> bool:
    return any(word in name for word in _WORK_WORDS)


def _queued(profile: Profile) -> Intervals:
    """From each kernel's launch (its API call's end) to its start: launched, not yet running."""
    k = profile.table("kernels")
    api = profile.table("api_calls")
    launched = kernel_launch_ns(profile)
    call = k.column("api_call_id").to_numpy()
    call_end = api.column("end_ns").to_numpy()
    ready = np.where(call >= 0, call_end[np.clip(call, 0, None)] if len(call_end) else launched, launched)
    start = k.column("start_ns").to_numpy()
    waiting = ready < start
    return ready[waiting].astype(np.int64), start[waiting].astype(np.int64)


def _main_thread(profile: Profile) -> int:
    """The thread that ran the most top-level ops (the script's main Python thread), -1 with no op."""
    ops = profile.table("ops")
    threads = ops.column("thread_id").to_numpy()[ops.column("depth").to_numpy() == 0]
    if not len(threads):
        return -1
    values, counts = np.unique(threads, return_counts=True)
    return int(values[counts.argmax()])


def shares(result: StepTime) -> dict[str, float]:
    """Each part's share of the mean steady step."""
    wall = result.mean_wall_ns
    return {part: (result.mean(part) / wall if wall else 0.0) for part in PARTS}
