"""Steps for a recording in which none were marked (no tenprof.step(), no torch.profiler schedule): the
iterations of the loop, found in the top-level ops. Without them the whole recording, start-up
included, would be judged as one step, and one-off costs (building the model, the first launches, lazy
loading) would read as costs paid every iteration.

The loop's top-level calls each run once per iteration: for an iteration count N >= 3 and a marker key
(op name, call path) that occurs N times, the keys of that count that fall once between each two of the
marker's occurrences (and once after the last) are the loop body. Start-up has such loops too (one
`.to()` per parameter); the loop is the candidate whose iterations span the most time (of those within
10% of it, the one with the fewest iterations: a call made twice per iteration spans it in halves).
A call made k times per iteration (two matmuls on one line, or two calls of one op without stacks)
is a marker too, of k*N occurrences: where a key of count N falls once in each group of k of them, the
groups are the iterations (without this, a loop whose only once-per-iteration call comes last would be
read in k-th parts, its first part swelled by the first, cold, call). Each iteration starts at an
occurrence of the marker (the first of its group); the last ends with the last call of the body after
it. Only the main thread's ops are read (`op_threads.main_op_thread`; autograd runs the
backward ops elsewhere, inside the calls that launch them), and, where the GPU ran anything, only from
the first kernel's launch on: before it lies set-up (initialising the weights, one `.to()` per parameter),
whose loops can span more time than the work's own. A single pass's repeated calls, such as one
forward pass's view or norm per layer, are no iterations, and the pass is judged whole. They are told apart
by what a loop does and a pass's layers do not:
- a loop's iterations launch most of the GPU's work launched from their start on (`MIN_WORK_SHARE`;
  candidates launching less are dropped; set-up before them is not weighed) and span at least a quarter of
  the GPU's working period (`MIN_SPAN_SHARE`);
- a training loop runs a backward in every iteration (`_layers_of_one_training_pass`: "iterations" none
  of which but the last holds any backward op are one forward's layers, its backward after them);
- a loop runs the same calls in each iteration after the first (`_blocks_unlike`: where most consecutive
  pairs differ, the blocks between one op's calls are layers: a Llama's attention and MLP blocks after
  each of its norms, a ResNet's blocks with and without a downsample); with two whole iterations only, its
  warm first one holds most of the second's calls (`CONTAINED`);
- a loop's iterations are not one module call's parts (`_one_module_calls_parts`: the call path all of
  them share, read from tenprof's call-site records, lies in a constructor, or in a forward that runs
  other calls on both sides of them). Identical layers pass the rules above; their loop (`for block in
  self.blocks`) lies in a forward, between its embedding and its head, a training or decoding loop does not.
Torch-free.
"""

from __future__ import annotations

import re
import weakref
from collections import Counter
from dataclasses import dataclass
from itertools import pairwise

import numpy as np

from tenprof.analyses.timeline.op_threads import main_op_thread
from tenprof.analyses.timeline.overhead import kernel_launch_ns
from tenprof.store.profile import Profile

MIN_ITERATIONS = 3
MAX_COUNTS = 8  # iteration counts tried, those most keys share first
MAX_MARKERS = 8  # marker keys tried per count, earliest first
NEAR_SPAN = 0.9  # candidates spanning this share of the longest one's time compete on iteration count
# A loop spans at least this share of the GPU's working period (the first kernel's launch to the last
# kernel's end): the repeated calls of one forward pass of a single-pass inference trace (a view per layer)
# spanned 0.03% and 2% of theirs on two public traces, and judged as the steps left the rest unjudged
MIN_SPAN_SHARE = 0.25
# A loop's iterations launch at least this share of the kernel time launched from their start on (up to the
# end of their body's last call). One forward pass's first blocks (a particle transformer's
# convolution blocks, between calls of batch_norm) passed MIN_SPAN_SHARE through one slow cuDNN call but
# launched 23% and 32% of that kernel time on two public traces; real loops' iterations launched 78% or more
MIN_WORK_SHARE = 0.5
# Two consecutive iterations are alike where their calls (counted by name) overlap this much. Iterations after
# the first that were a single pass's layers had most consecutive pairs unlike on seven public traces (Llama
# 6 of 6 pairs, overlapping 0.43; ResNet-18 14 of 14; ResNet-50 33 of 49; AlexNet 4 of 7; particle
# transformer 4 of 4; a LoRA model 13 of 13; a recommender 13 of 14); real loops at most 5 of 27
ALIKE = 0.9
# With two whole iterations only, the first holds at least this share of the second's calls: 92-100% in the
# real loops of 24 recordings and public traces (a warm-up iteration of 1771 calls holding all of the next's
# 883), 3% where a single ViT forward was read as three iterations (12 calls, then the 251 of its blocks)
CONTAINED = 0.5
# numbers in a call's name are ids, not another call: each recompilation names its region anew
# ("Torch-Compiled Region: 0/3"), and a loop that recompiles every iteration still runs alike calls
_NUMBERS = re.compile(r"\d+")

Key = tuple[str, int]


@dataclass(frozen=True)
class InferredSteps:
    starts: np.ndarray
    ends: np.ndarray
    marker: str  # the op (and line) each iteration starts with
    keys: int  # how many top-level calls run once per iteration


# Every analysis context of a report asks (the findings build several): the answer is kept per profile.
_FOUND: weakref.WeakKeyDictionary[Profile, InferredSteps | None] = weakref.WeakKeyDictionary()


def infer_steps(profile: Profile) -> InferredSteps | None:
    if profile not in _FOUND:
        _FOUND[profile] = _infer(profile)
    return _FOUND[profile]


def _infer(profile: Profile) -> InferredSteps | None:
    ops = profile.table("ops")
    if ops.num_rows == 0:
        return None
    depth = ops.column("depth").to_numpy()
    thread = ops.column("thread_id").to_numpy()
    top = np.flatnonzero(depth == 0)
    if len(top) == 0:
        return None
    main = main_op_thread(profile)
    top = top[thread[top] == main]
    launches = kernel_launch_ns(profile)
    if len(launches):  # set-up before the GPU's first work is no iteration of the loop
        top = top[ops.column("end_ns").to_numpy()[top] > int(launches.min())]
        if len(top) == 0:
            return None
    names = ops.column("name").to_pylist()
    frames = ops.column("frame_id").to_numpy()
    starts = ops.column("start_ns").to_numpy()[top]
    ends = ops.column("end_ns").to_numpy()[top]
    where: dict[Key, list[int]] = {}
    for position, i in enumerate(top.tolist()):
        where.setdefault((str(names[i]), int(frames[i])), []).append(position)
    by_count: dict[int, list[Key]] = {}
    for key, positions in where.items():  # insertion order: by first occurrence
        if len(positions) >= MIN_ITERATIONS:
            by_count.setdefault(len(positions), []).append(key)
    found: list[_Candidate] = []
    for count in sorted(by_count, key=lambda c: -len(by_count[c]))[:MAX_COUNTS]:
        for marker in by_count[count][:MAX_MARKERS]:
            for per_step in _divisors(count):
                bounds = starts[where[marker]][::per_step]
                once = by_count.get(count // per_step, [])
                body = [key for key in once if _once_between(bounds, starts[where[key]])]
                if per_step > 1:
                    if not body:  # nothing runs once per group: the groups are not iterations
                        continue
                    body.append(marker)
                last = max(int(ends[where[key][-1]]) for key in body)
                found.append(_Candidate(last - int(bounds[0]), bounds, marker, len(body), last))
    if len(launches):
        k = profile.table("kernels")
        work = k.column("duration_ns").to_numpy()
        found = [c for c in found if _gpu_work_share(launches, work, c) >= MIN_WORK_SHARE]
    parts_of_one_call = _one_module_calls_parts(profile, top, starts, found)
    found = [c for index, c in enumerate(found) if index not in parts_of_one_call]
    if not found:
        return None
    # The loop spans the most time; a call made twice per iteration spans it too, in half-iterations:
    # of the candidates spanning nearly as much as the longest, the fewest iterations are the loop's.
    longest = max(c.span for c in found)
    if len(launches):
        working = int(k.column("end_ns").to_numpy().max()) - int(launches.min())
        if longest < MIN_SPAN_SHARE * working:  # no loop: a single pass, judged as one span
            return None
    best = min((c for c in found if c.span >= NEAR_SPAN * longest), key=lambda c: (len(c.bounds), -c.span))
    if _layers_of_one_training_pass(profile, best.bounds):
        return None
    iteration_names = [
        [_NUMBERS.sub("#", str(names[i])) for i in top[(starts >= lo) & (starts < hi)]]
        for lo, hi in pairwise(best.bounds)
    ]
    if _blocks_unlike(iteration_names):
        return None
    marker = best.marker
    step_start = best.bounds.astype(np.int64)
    step_end = np.append(step_start[1:], best.last_end).astype(np.int64)
    label = marker[0]
    if marker[1] >= 0:
        f = profile.table("frames")
        file, line = f.column("file")[marker[1]].as_py(), f.column("line")[marker[1]].as_py()
        if file:  # frames of C++ callers have neither file nor line
            label += f" at {file}:{line}"
    return InferredSteps(step_start, step_end, label, best.body_keys)


@dataclass(frozen=True)
class _Candidate:
    span: int  # from the first iteration's start to the end of the last call of the body
    bounds: np.ndarray  # each iteration's start
    marker: Key
    body_keys: int
    last_end: int


def _layers_of_one_training_pass(profile: Profile, bounds: np.ndarray) -> bool:
    """Whether the recording runs a backward and no iteration but the last holds any of it: a training loop
    runs one in every iteration, so these "iterations" are the layers of one forward pass whose backward
    follows them (a ResNet-50's one forward and backward on a T4, a public trace without stacks, read as 52
    iterations starting at its convolutions)."""
    backward = profile.column("ops", "is_backward").astype(bool)
    if not backward.any():
        return False
    begins = profile.column("ops", "start_ns")[backward]
    return not bool(((begins >= bounds[0]) & (begins < bounds[-1])).any())


# Functions whose one call runs a module's parts: a forward over its layers, a constructor building them.
_MODULE_CALLS = frozenset({"forward", "__init__"})
# Frames the walk up from the shared call path passes through: a comprehension building the layers is part
# of the constructor that runs it
_COMPREHENSIONS = frozenset({"<genexpr>", "<listcomp>", "<dictcomp>", "<setcomp>", "<lambda>"})


@dataclass(frozen=True)
class _ModuleCall:
    frame: int  # the `forward` or `__init__` frame the candidate's iterations lie in
    function: str
    first: int  # the candidate's first and last top-level op (positions in `top`)
    last: int


def _one_module_calls_parts(profile: Profile, top: np.ndarray, starts: np.ndarray, found: list[_Candidate]) -> set[int]:
    """Which candidates' iterations are one call's parts (their indices in `found`). The deepest call path all
    of a candidate's top-level ops share (from tenprof's call-site records) is walked up through library frames
    and comprehensions to the first user function:
    - inside an `__init__`, they are a constructor building its layers;
    - inside a `forward`, they are its layers where that forward's call runs other lines just before and just
      after them (an embedding before its blocks, a head after them). A loop whose every iteration only calls
      one `nn.Sequential` shares a path inside its forward too, but what flanks its iterations is more of the
      same line's calls or the loop's own; a loop whose model builds something lazily on its first call has
      another line of the forward before its iterations, none after them.
    The candidates of one loop (one forward, one iteration count: each starting at another of its calls) get
    one verdict, from the span they cover together: one pass's blocks read from their second op on have a
    block's first op before them, not the embedding.
    A training or decoding loop lies in a script's function, a trainer's or `generate()`, never inside a
    module's forward. Ops whose path came from elsewhere (a trace's with_stack ranges, named by their
    function's first line) are not read: there one call and many of the same function share a frame."""
    frame_of = profile.column("ops", "frame_id")
    recorded = profile.strings("ops", "frame_source").equals("callsite")
    if not recorded.any():
        return set()
    frames = _Frames(
        profile.column("frames", "parent_frame_id"),
        profile.table("frames").column("function").to_pylist(),
        profile.column("frames", "is_user"),
    )
    parents = frames.parents
    dropped: set[int] = set()
    loops: dict[tuple[int, int], list[_ModuleCall]] = {}
    members: dict[tuple[int, int], list[int]] = {}
    for index, candidate in enumerate(found):
        call = _module_call_of(top, starts, candidate, frame_of, recorded, frames)
        if call is None:
            continue
        if call.function == "__init__":
            dropped.add(index)
            continue
        loops.setdefault((call.frame, len(candidate.bounds)), []).append(call)
        members.setdefault((call.frame, len(candidate.bounds)), []).append(index)

    def other_line_of(forward: int, position: int) -> bool:
        if not 0 <= position < len(top) or not recorded[top[position]] or frame_of[top[position]] < 0:
            return False
        path = frames.path(int(frame_of[top[position]]))
        return int(parents[forward]) in path and forward not in path

    for key, calls in loops.items():
        first, last = min(c.first for c in calls), max(c.last for c in calls)
        if other_line_of(key[0], first - 1) and other_line_of(key[0], last + 1):
            dropped.update(members[key])
    return dropped


def _module_call_of(
    top: np.ndarray,
    starts: np.ndarray,
    candidate: _Candidate,
    frame_of: np.ndarray,
    recorded: np.ndarray,
    frames: _Frames,
) -> _ModuleCall | None:
    """The `forward` or `__init__` the candidate's iterations lie in (`_one_module_calls_parts`), if any."""
    inside = np.flatnonzero((starts >= candidate.bounds[0]) & (starts <= candidate.last_end))
    chosen = top[inside]
    frame_ids = np.unique(frame_of[chosen[recorded[chosen]]])
    frame_ids = frame_ids[frame_ids >= 0]
    if len(frame_ids) == 0:
        return None
    shared = list(frames.path(int(frame_ids[0])))
    for frame in frame_ids[1:].tolist():
        on_path = set(frames.path(frame))
        shared = [f for f in shared if f in on_path]  # keeps the deepest-first order
        if not shared:
            return None
    call = _enclosing_module_call(frames, shared)
    if call is None:
        return None
    return _ModuleCall(call[0], call[1], int(inside[0]), int(inside[-1]))


def _enclosing_module_call(frames: _Frames, shared: list[int]) -> tuple[int, str] | None:
    """The `forward` or `__init__` frame on the shared path (deepest first), walking up through library
    frames and comprehensions; None where a user function of another name comes first (the user's loop)."""
    for frame in shared:
        function = str(frames.functions[frame])
        if function in _MODULE_CALLS:
            return frame, function
        if bool(frames.is_user[frame]) and function not in _COMPREHENSIONS:
            return None
    return None


class _Frames:
    """The frames table as the layers rule reads it: each frame's caller, function and whether it is the
    user's; each frame's path (it and its callers, deepest first) walked once."""

    def __init__(self, parents: np.ndarray, functions: list[str], is_user: np.ndarray) -> None:
        self.parents, self.functions, self.is_user = parents, functions, is_user
        self._paths: dict[int, tuple[int, ...]] = {}

    def path(self, frame: int) -> tuple[int, ...]:
        if frame not in self._paths:
            walked = []
            at = frame
            while at >= 0:
                walked.append(at)
                at = int(self.parents[at])
            self._paths[frame] = tuple(walked)
        return self._paths[frame]


def _gpu_work_share(launches: np.ndarray, work: np.ndarray, candidate: _Candidate) -> float:
    """Of the kernel time launched from the candidate loop's first iteration on (`work`: each kernel's
    duration, `launches`: when each was launched), the share launched by the end of its body's last call: a
    loop's iterations launch most of it (all but the rest of the last iteration and what follows the loop),
    a single pass's repeated first blocks only what they wrap. Set-up before the loop (weights initialised
    or data made on the GPU) is not weighed."""
    if int(work.sum()) <= 0:
        return 1.0  # no kernel time to weigh
    after = launches >= candidate.bounds[0]
    total = int(work[after].sum())
    if total <= 0:
        return 0.0  # the GPU's work all came before: calls that launch none of it are not the loop
    return int(work[after & (launches <= candidate.last_end)].sum()) / total


def _blocks_unlike(iteration_names: list[list[str]]) -> bool:
    """Whether the "iterations" (each one's top-level calls, by name) are the unlike blocks of one pass rather
    than a loop's iterations, which run the same calls each time. The first may differ (warm-up, a first
    batch, a prefill) and the last, which ends with its body's last call, is not among them; the blocks
    between one call repeated per layer differ (a Llama's attention, then MLP blocks after each of its norms;
    a ResNet's blocks with and without a downsample). Unlike where most consecutive pairs after the first
    overlap less than ALIKE; with two whole iterations only, unlike where the first holds less than CONTAINED
    of the second's calls."""
    later = [Counter(names) for names in iteration_names[1:]]
    if len(later) == 1:
        # two whole iterations: a warm first one runs the second's calls and more (lazy set-up), so it holds
        # most of them; one pass's first blocks and the rest of it do not
        first, second = Counter(iteration_names[0]), later[0]
        return sum((first & second).values()) < CONTAINED * max(sum(second.values()), 1)
    if len(later) < 2:
        return False  # nothing to compare: taken as a loop
    overlaps = [sum((a & b).values()) / max(sum(a.values()), sum(b.values()), 1) for a, b in pairwise(later)]
    return sum(o < ALIKE for o in overlaps) * 2 > len(overlaps)


def _divisors(count: int) -> list[int]:
    """How many times per iteration a key occurring `count` times may run: 1, and each k leaving at
    least MIN_ITERATIONS iterations (found in pairs up to the square root: counts run to the thousands)."""
    found: set[int] = set()
    for k in range(1, int(count**0.5) + 1):
        if count % k == 0:
            found.update((k, count // k))
    return sorted(k for k in found if count // k >= MIN_ITERATIONS)


def _once_between(bounds: np.ndarray, times: np.ndarray) -> bool:
    """Whether exactly one of `times` falls in each [bounds[i], bounds[i+1]) and one after the last."""
    slot = np.searchsorted(bounds, times, side="right") - 1
    return bool(np.array_equal(slot, np.arange(len(bounds))))
