"""Where each step went: its wall time split into exclusive parts along the host/GPU critical path, parts
that add up to the step exactly (pure; no I/O).

Each recorded, complete step [start, end) (or, where no step was marked, each iteration of the loop told
from its repeated calls (analyses.timeline.inferred_steps), else the profiled span from the first kernel's launch
as one; set-up before either is left out: `unmarked_span`), taken on the critical path (a step ends at the
later of the host's end of it and the end of the kernels it launched, the next one starts there:
`critical_path_windows`), is cut into instants, and each instant goes to one part:
- `gpu`: the GPU computes or copies (a kernel other than a collective, or a copy, on any stream). The
  step waits on the GPU then, whatever the host does meanwhile: shortening it means less or faster GPU
  work;
- `collective`: the GPU runs collectives only (NCCL's kernels) and nothing else: communication not
  overlapped with compute, or this rank waiting in a collective for the others to reach it. A CPU process
  group's collectives (gloo's, whose work runs on its own threads while the script waits for it outside
  any op) land here too, from the host's side: below, after `dispatch`.
Of the instants the GPU is idle, each goes to the first of these that holds then, from the host's state:
its ops and CUDA calls on the main thread (the one that ran the most top-level ops other than autograd's
nodes: `op_threads`) and on every thread
whose ops launched kernels (autograd's backward thread), its DataLoader ranges on the main thread:
- `queued`: work was launched and has not started yet (launch latency, a stream waiting on an event or on
  another stream): the GPU's wait, not the host's;
- `sync`: the host is inside a synchronizing CUDA call (`cudaDeviceSynchronize`, `cudaStreamSynchronize`,
  `cudaEventSynchronize`, a blocking `cudaMemcpy`) while the GPU has nothing to run: the sync's latency;
- `allocator`: the host is inside cudaMalloc, cudaFree or another allocating call (the caching allocator
  missing, `torch.cuda.empty_cache()` giving memory back), or in the caching allocator's own work around
  such a call in a top-level op (analyses.timeline.allocator_slow_path: the op's time beyond its name's
  calls that did not allocate, in the steps past the cold ones), placed just before the op's first call
  and, what does not fit, after its last;
- `cuda_api`: the host is inside any other CUDA call that does not launch work (module loads, attribute
  queries, stream and event creation), or inside a kernel launch of a millisecond or more (`slow_launch_calls`:
  the launch loads its kernel's module on first use, CUDA's lazy loading, or a library initialises);
- `data_loading`: the host is inside a DataLoader's `__next__` (the range torch records around it),
  loading in its own process or waiting for its workers;
- `compile`: the host is compiling (`timeline.compilations`: `entire_frame_compile`) or checking compiled code's guards
  (`TorchDynamo Cache Lookup`);
- `dispatch`: the host is inside a top-level torch op (dispatching it, launching its kernels);
- (`collective`) a CPU collective is in flight (a `gloo:` range, on any thread): the script waits for it;
- `python`: anywhere else: the script's own Python between ops (the host sampler's lines say which); in a
  trace recorded without the host's ops (`StepTime.host_ops_recorded`), whatever the host did outside CUDA
  calls;
- `capture`: the profiler's own work, in the mean steady step only: where the profiler's overhead was
  measured (steps run with the capture off, told from the steps' own variation) or estimated
  (analyses.timeline.overhead), that share of the step is taken out of `dispatch` and `python`, where the
  profiler's CPU work lands.
The order puts the most specific cause first: a cudaMalloc runs inside an op, an op inside a DataLoader's
`__next__`. Every idle instant lands in exactly one part and `python` takes what is left, so the parts sum
to the step's wall time; `Step.parts` are in nanoseconds. The summary is the mean steady step (past the
first three, and past each first step recorded after steps run with the capture off: `Step.resumed`, which
pays the capture's restart, tenprof's cost, not the program's), whose parts add up to it too.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from tenprof.analyses.op_kinds import SYNC_CALLS, is_collective
from tenprof.analyses.timeline.allocator_slow_path import slow_path
from tenprof.analyses.timeline.compilations import frame_compilations
from tenprof.analyses.timeline.critical_path import critical_path_windows, launching_step
from tenprof.analyses.timeline.inferred_steps import infer_steps
from tenprof.analyses.timeline.op_threads import host_ops_recorded, main_op_thread
from tenprof.analyses.timeline.overhead import (
    COLD_STEPS,
    inside,
    kernel_launch_ns,
    measure,
    recorded_steps,
    resumed_steps,
    steady_windows,
    steps_marked,
)
from tenprof.analyses.timeline.summary import profiled_span
from tenprof.core.intervals import I64Array, coverage, merged, uncovered
from tenprof.store.profile import Profile

PARTS = (
    "gpu",
    "collective",
    "queued",
    "sync",
    "allocator",
    "cuda_api",
    "data_loading",
    "compile",
    "dispatch",
    "python",
    "capture",
)
# the host's parts the profiler's own CPU work lands in (its records around each op, its Python per call)
CAPTURE_INFLATES = ("dispatch", "python")
# the parts in which the GPU idles while the host works (not waiting on the GPU or on queued work)
HOST_PARTS = ("allocator", "cuda_api", "data_loading", "compile", "dispatch", "python")

ALLOCATOR_CALLS = frozenset(
    {"cudaMalloc", "cudaFree", "cudaMallocHost", "cudaFreeHost", "cudaHostAlloc", "cudaMallocAsync", "cudaFreeAsync"}
    | {"cuMemAlloc_v2", "cuMemFree_v2", "cuMemCreate", "cuMemRelease", "cuMemMap", "cuMemUnmap"}
    # ROCm traces name HIP's (an MI300X ResNet-18 spent 3.35 s in 1360 hipFree calls, read as "other CUDA calls")
    | {"hipMalloc", "hipFree", "hipHostMalloc", "hipHostFree", "hipMallocAsync", "hipFreeAsync"}
    | {"hipExtMallocWithFlags"}
)
# calls that hand work to the GPU and return: the op that makes them is dispatching, not waiting
_WORK_WORDS = ("Launch", "MemcpyAsync", "MemsetAsync", "EventRecord", "StreamWaitEvent", "GraphLaunch")
# A launch takes microseconds; one of a millisecond or more while the GPU idles is loading the kernel's module
# on its first use (CUDA's lazy loading) or a library initialising: single launches of 323, 497 and 626 ms in
# three public traces of cold forward passes (the first convolution, the first embedding lookup).
SLOW_LAUNCH_NS = 1_000_000
DATA_LOADER_MARK = "enumerate(DataLoader)#"
CPU_COLLECTIVE_MARK = "gloo:"  # the range torch records around a gloo collective's work
HOST_COLLECTIVE = "host_collective"  # idle_causes' key for it; its time goes to the `collective` part
GUARD_OPS = frozenset({"TorchDynamo Cache Lookup"})  # checking compiled code's guards


@dataclass(frozen=True)
class Step:
    step: int  # the step's number, -1 for the profiled span of a run without steps
    wall_ns: int
    parts: dict[str, int] = field(default_factory=dict)  # PARTS -> ns, as recorded (capture 0); sum: wall_ns
    # the first step recorded after steps run with the capture off: it pays the capture's restart (a new
    # GPU-activity session instruments its launches again; on an H200 fp32 GPT-2's took 90-160 ms against
    # 70 ms), which the overhead's medians leave out, so the mean steady step leaves the step out too
    resumed: bool = False


@dataclass(frozen=True)
class StepTime:
    steps: list[Step]
    marked: bool  # False: no step was marked, the one "step" is the profiled span from the first GPU work
    setup_ns: int = 0  # unmarked: the profiled time before the loop (its first iteration, else the first
    # kernel's launch), left out
    capture_share: float = 0.0  # of the mean steady step, the profiler's own work (analyses.timeline.overhead)
    capture_method: str = ""  # how that was had: measured (steps run with the capture off), estimated
    inferred: bool = False  # unmarked: the steps are the loop's iterations told from its repeated calls
    # of the set-up, the decomposition's data-loading part (the host in a DataLoader, its workers starting or its
    # first batch, with the GPU idle): the set-up is then more than imports and the model (a public ViT
    # inference: 780 ms of its 2.68 s)
    setup_loading_ns: int = 0
    # the trace holds the host's torch ops; False where it was recorded with the GPU's activity alone: the host's
    # time outside CUDA calls is then `python` by elimination, its work unknown (op_threads.host_ops_recorded)
    host_ops_recorded: bool = True

    @property
    def steady(self) -> list[Step]:
        """The steps past the cold ones (building, compiling, tuning) and other than those that paid the
        capture's restart, or all past the cold ones where that leaves none, or all where none is."""
        chosen = steady_steps(np.array([s.step for s in self.steps]), np.array([s.resumed for s in self.steps]))
        return [s for s, keep in zip(self.steps, chosen, strict=True) if keep]

    def mean(self, part: str) -> float:
        """The part in the mean steady step: its time over the steady steps, per step. The means add up
        to the mean step, and a run whose steps are of two kinds (every other one waits for its data)
        keeps both kinds in them, where a median step would show one. The profiler's own work (`capture`)
        is taken out of the host's parts it lands in, in proportion to them: what is left of those is the
        program's, as far as the overhead is known."""
        if part == "capture":
            return self._capture_ns
        raw = self._recorded(part)
        if part in CAPTURE_INFLATES and self._capture_ns:
            host = sum(self._recorded(p) for p in CAPTURE_INFLATES)
            return raw - self._capture_ns * raw / host
        return raw

    def _recorded(self, part: str) -> float:
        steady = self.steady
        return sum(s.parts[part] for s in steady) / len(steady) if steady else 0.0

    @property
    def _capture_ns(self) -> float:
        """The profiler's own work in the mean steady step, no more than the host's parts it lands in."""
        host = sum(self._recorded(p) for p in CAPTURE_INFLATES)
        return min(self.capture_share * self.mean_wall_ns, host)

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
    setup = 0
    inferred = None
    if not marked:
        first, start, end = unmarked_span(profile)
        if end == 0:  # nothing recorded
            return StepTime([], False)
        inferred = infer_steps(profile) if not steps_marked(profile) else None
        if inferred is not None:  # the loop's iterations, told from its repeated calls
            lo, hi = inferred.starts, inferred.ends
            numbers, setup = np.arange(len(lo)), int(lo[0]) - first
        else:
            lo, hi, numbers, setup = np.array([start]), np.array([end]), np.array([-1]), start - first
    lo, hi = np.asarray(lo, dtype=np.int64), np.asarray(hi, dtype=np.int64)
    setup_loading = 0
    if setup > 0:
        before = part_blocks(profile, np.array([first]), np.array([first + setup]))["data_loading"]
        setup_loading = length(before)
    if marked or inferred is not None:
        lo, hi = critical_path_windows(profile, lo, hi, np.asarray(numbers, dtype=np.int64))
    blocks = part_blocks(profile, lo, hi)
    parts = {name: coverage(*blocks[name], lo, hi) for name in PARTS[:-1]}
    parts["capture"] = np.zeros(len(lo), dtype=np.int64)  # known per mean step only (see StepTime.mean)
    share, method = _capture_share(profile)
    resumed = resumed_steps(profile, recorded) if marked else np.zeros(len(lo), dtype=bool)
    return StepTime(
        [
            Step(int(n), int(b - a), {name: int(parts[name][i]) for name in PARTS}, bool(resumed[i]))
            for i, (n, a, b) in enumerate(zip(numbers, lo, hi, strict=True))
        ],
        marked,
        setup,
        share,
        method,
        inferred is not None,
        setup_loading,
        host_ops_recorded(profile),
    )


def _capture_share(profile: Profile) -> tuple[float, str]:
    """The profiler's share of each recorded step, and how it was had: estimated (an imported trace), or
    measured where the steps run with the capture off tell it from the steps' own variation (a measured
    difference within the noise, or from too few steps, is no overhead to take out: the step stays as
    recorded)."""
    overhead = measure(profile)
    share = overhead.profiler_share or 0.0
    if not share or (overhead.method == "measured" and overhead.verdict != "overhead"):
        return 0.0, ""
    return share, overhead.method


def steady_steps(numbers: I64Array, resumed: npt.NDArray[np.bool_]) -> npt.NDArray[np.bool_]:
    """Which of these steps (their numbers, and whether each paid the capture's restart) the mean steady step
    averages: past the first COLD_STEPS and not resumed; all past the cold ones where that leaves none, all
    where none is. The findings judging on the steady steps choose them here too (findings.Context.steady)."""
    warm = np.asarray(numbers >= COLD_STEPS, dtype=bool)
    for chosen in (warm & ~resumed, warm):
        if chosen.any():
            return chosen
    return np.ones(len(numbers), dtype=bool)


def unmarked_span(profile: Profile) -> tuple[int, int, int]:
    """A run without marked steps: (first event, start of its work, last event). Its work starts at the
    first kernel's launch: before it lies set-up (imports, building the model, copying its weights to the
    GPU, CUDA's own start), a one-off that is no part of the loop and is kept out of what is judged as
    its step. Without kernels (a CPU run) the work is the whole span. (0, 0, 0) when nothing was recorded."""
    first, last = profiled_span(profile, ("ops", "kernels", "transfers"))
    if (first, last) == (0, 0):
        return 0, 0, 0
    launches = kernel_launch_ns(profile)
    start = int(launches.min()) if len(launches) else first
    return first, min(max(start, first), last), last


def part_blocks(profile: Profile, lo: I64Array, hi: I64Array) -> dict[str, Intervals]:
    """Each part's time inside the windows [lo, hi) (disjoint ones: steps), as sorted, disjoint blocks;
    the parts' blocks do not overlap and together cover the windows. The findings read the blocks to ask
    what else went on then (the host sampler's lines during the data loading, say)."""
    windows = (np.asarray(lo, dtype=np.int64), np.asarray(hi, dtype=np.int64))
    computing, communicating = _gpu_busy(profile)
    not_computing = uncovered(windows, computing)
    idle = uncovered(not_computing, communicating)
    blocks = {"gpu": uncovered(windows, not_computing), "collective": uncovered(not_computing, idle)}
    for name, intervals in idle_causes(profile).items():
        left = uncovered(idle, intervals)
        blocks[name] = uncovered(idle, left)
        idle = left
    blocks["python"] = idle
    # the host waiting on a CPU collective is the collective part, as the GPU's waiting in NCCL's kernels is
    host_waiting = blocks.pop(HOST_COLLECTIVE)
    both = (
        np.concatenate([blocks["collective"][0], host_waiting[0]]),
        np.concatenate([blocks["collective"][1], host_waiting[1]]),
    )
    blocks["collective"] = merged(*both)
    return blocks


def own_step_ns(profile: Profile, lo: I64Array, hi: I64Array) -> I64Array:
    """Each step's own time, for telling a slow step from the others: its wall time [lo, hi) less the time
    the GPU spent in it on kernels launched before it, and never less than its own kernels' GPU time. A
    loop the GPU bounds runs its host ahead; the step that waits for the queue (a sync at the end of
    the run, an `.item()` every few steps) holds the earlier steps' GPU time, which is not its own cost."""
    lo, hi = np.asarray(lo, dtype=np.int64), np.asarray(hi, dtype=np.int64)
    k = profile.table("kernels")
    start, end = k.column("start_ns").to_numpy(), k.column("end_ns").to_numpy()
    step = launching_step(lo, hi, kernel_launch_ns(profile))
    mine = step >= 0
    # each kernel clipped to the step that launched it: what of a step's window its own kernels cover
    own_lo, own_hi = np.maximum(start[mine], lo[step[mine]]), np.minimum(end[mine], hi[step[mine]])
    kept = own_hi > own_lo
    in_window = coverage(start, end, lo, hi) - coverage(own_lo[kept], own_hi[kept], lo, hi)
    own_gpu = np.zeros(len(lo), dtype=np.int64)
    by_step = np.flatnonzero(mine)[np.argsort(step[mine], kind="stable")]
    for chunk in np.split(by_step, np.flatnonzero(np.diff(step[by_step])) + 1) if len(by_step) else []:
        blocks = merged(start[chunk], end[chunk])
        own_gpu[step[chunk[0]]] = int((blocks[1] - blocks[0]).sum())
    own: I64Array = np.maximum(hi - lo - np.maximum(in_window, 0), own_gpu)
    return own


def length(blocks: Intervals) -> int:
    """The time disjoint blocks cover."""
    return int((blocks[1] - blocks[0]).sum())


def _gpu_busy(profile: Profile) -> tuple[Intervals, Intervals]:
    """The GPU's compute and copies, and its collectives, each as merged blocks."""
    k, t = profile.table("kernels"), profile.table("transfers")
    collective = profile.strings("kernels", "name").where(is_collective)
    k_start, k_end = k.column("start_ns").to_numpy(), k.column("end_ns").to_numpy()
    starts = np.concatenate([k_start[~collective], t.column("start_ns").to_numpy()])
    ends = np.concatenate([k_end[~collective], t.column("end_ns").to_numpy()])
    return (
        merged(starts.astype(np.int64), ends.astype(np.int64)),
        merged(k_start[collective].astype(np.int64), k_end[collective].astype(np.int64)),
    )


def idle_causes(profile: Profile) -> dict[str, Intervals]:
    """Each idle part's intervals (the host's, where the part is the host's), in the order they claim the
    GPU's idle time. The host is the main thread and every thread whose ops launched GPU work (autograd's
    backward thread runs the backward ops while the main thread waits in `backward()`)."""
    main = main_op_thread(profile)
    threads = _launching_threads(profile) | {main}
    api = profile.table("api_calls")
    api_host = np.isin(api.column("thread_id").to_numpy(), list(threads))
    api_names = profile.strings("api_calls", "name")
    a_start, a_end = api.column("start_ns").to_numpy(), api.column("end_ns").to_numpy()

    def calls(test: Callable[[str], bool]) -> Intervals:
        chosen = api_names.where(test) & api_host
        return a_start[chosen], a_end[chosen]

    allocating = api_names.where(lambda n: n in ALLOCATOR_CALLS) & api_host
    other = calls(lambda n: n not in SYNC_CALLS and n not in ALLOCATOR_CALLS and not hands_work(n))
    first_uses = slow_launches(profile, api_host)

    scopes = profile.table("scopes")
    on_main = scopes.column("thread_id").to_numpy() == main
    loading = profile.strings("scopes", "name").where(lambda n: n.startswith(DATA_LOADER_MARK)) & on_main
    ops = profile.table("ops")
    top = (ops.column("depth").to_numpy() == 0) & np.isin(ops.column("thread_id").to_numpy(), list(threads))
    guards = profile.strings("ops", "name").where(lambda n: n in GUARD_OPS)
    o_start, o_end = ops.column("start_ns").to_numpy(), ops.column("end_ns").to_numpy()
    compiles = frame_compilations(profile)
    return {
        "queued": _queued(profile),
        "sync": calls(lambda n: n in SYNC_CALLS),
        "allocator": _allocator(profile, allocating, top),
        "cuda_api": merged(np.concatenate([other[0], first_uses[0]]), np.concatenate([other[1], first_uses[1]])),
        "data_loading": (scopes.column("start_ns").to_numpy()[loading], scopes.column("end_ns").to_numpy()[loading]),
        "compile": merged(
            np.concatenate([compiles.start, o_start[guards]]), np.concatenate([compiles.end, o_end[guards]])
        ),
        "dispatch": (o_start[top], o_end[top]),
        HOST_COLLECTIVE: host_collectives(profile),
    }


def _allocator(profile: Profile, chosen: npt.NDArray[np.bool_], top: npt.NDArray[np.bool_]) -> Intervals:
    """The allocator's intervals: its driver calls, and for each top-level op that called them its slow path
    beyond them (analyses.timeline.allocator_slow_path), placed within the op just before its first call
    (the caching allocator searches and frees its cache before it goes to the driver), and what does not fit
    there just after its last call (where it records the new block)."""
    api = profile.table("api_calls")
    driver = api.column("start_ns").to_numpy()[chosen], api.column("end_ns").to_numpy()[chosen]
    op = api.column("op_id").to_numpy()
    in_op = chosen & (op >= 0)
    if not in_op.any():
        return driver
    # compared within the steady steps only: in the first ones ops are slow for other reasons (first calls,
    # autotuning), and there only the driver calls count
    steady = top & inside(*steady_windows(profile), profile.column("ops", "start_ns"))
    in_op &= steady[np.clip(profile.column("ops", "top_op_id")[np.clip(op, 0, None)], 0, None)]
    if not in_op.any():
        return driver
    found = slow_path(profile, op[in_op], api.column("duration_ns").to_numpy()[in_op], np.flatnonzero(steady))
    extra = found.beyond_ns - found.in_calls_ns
    if not (extra > 0).any():
        return driver
    row = np.searchsorted(found.ops, profile.column("ops", "top_op_id")[op[in_op]])
    first_call = np.full(len(found.ops), np.iinfo(np.int64).max, dtype=np.int64)
    last_end = np.zeros(len(found.ops), dtype=np.int64)
    np.minimum.at(first_call, row, api.column("start_ns").to_numpy()[in_op])
    np.maximum.at(last_end, row, api.column("end_ns").to_numpy()[in_op])
    op_start, op_end = profile.column("ops", "start_ns")[found.ops], profile.column("ops", "end_ns")[found.ops]
    before = np.minimum(extra, first_call - op_start).clip(0)
    after = np.minimum(extra - before, op_end - last_end).clip(0)
    lo = np.concatenate([driver[0], first_call - before, last_end]).astype(np.int64)
    hi = np.concatenate([driver[1], first_call, last_end + after]).astype(np.int64)
    keep = hi > lo
    return merged(lo[keep], hi[keep])


def host_collectives(profile: Profile) -> Intervals:
    """A CPU process group's collectives in flight: gloo's ranges ('gloo:all_reduce'), on whichever thread
    ran them (its own, while the script waits in `work.wait()`)."""
    gloo = profile.strings("scopes", "name").where(lambda n: n.startswith(CPU_COLLECTIVE_MARK))
    return profile.column("scopes", "start_ns")[gloo], profile.column("scopes", "end_ns")[gloo]


def _launching_threads(profile: Profile) -> set[int]:
    """The threads whose ops launched kernels."""
    op = profile.column("kernels", "op_id")
    op = op[op >= 0]
    return set(np.unique(profile.column("ops", "thread_id")[op]).tolist()) if len(op) else set()


def slow_launch_calls(profile: Profile) -> npt.NDArray[np.bool_]:
    """Which API calls are kernel launches that took SLOW_LAUNCH_NS or more: a first use's module load or a
    library's start, not dispatch."""
    # kernel launches only: a graph's launch hands the GPU a whole graph, and its host time is its own (a
    # decode step's hipGraphLaunch of 1.57 ms on an MI300X, every step)
    slow = profile.strings("api_calls", "name").where(lambda n: "Launch" in n and "Graph" not in n)
    durations: npt.NDArray[np.int64] = profile.column("api_calls", "duration_ns")
    return slow & (durations >= SLOW_LAUNCH_NS)


def slow_launches(profile: Profile, on_host: npt.NDArray[np.bool_]) -> Intervals:
    """The slow kernel launches (`slow_launch_calls`) of the host's threads (`on_host`: which calls are
    theirs), as intervals."""
    slow = slow_launch_calls(profile) & on_host
    starts, ends = profile.column("api_calls", "start_ns")[slow], profile.column("api_calls", "end_ns")[slow]
    return starts.astype(np.int64), ends.astype(np.int64)


def hands_work(name: str) -> bool:
    """Whether a CUDA call hands the GPU work and returns (a launch, an async copy or set, an event)."""
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


def shares(result: StepTime) -> dict[str, float]:
    """Each part's share of the mean steady step."""
    wall = result.mean_wall_ns
    return {part: (result.mean(part) / wall if wall else 0.0) for part in PARTS}
