"""What every check needs, computed once: the analysed steps, event arrays, and op -> Python line."""

from __future__ import annotations

from collections import Counter
from functools import cached_property

import numpy as np
import numpy.typing as npt

from tenprof.analyses.findings.thresholds import Thresholds
from tenprof.analyses.op_kinds import CAPTURE_BEGIN, GRAPH_INSTANTIATES
from tenprof.analyses.perf_model import PerfModel, perf_model
from tenprof.analyses.timeline.compilations import frame_compilations
from tenprof.analyses.timeline.inferred_steps import InferredSteps, infer_steps
from tenprof.analyses.timeline.live_memory import Blocks, Holder, holders, step_numbers
from tenprof.analyses.timeline.overhead import (
    Overhead,
    kernel_launch_ns,
    measure,
    recorded_steps,
    resumed_steps,
    steps_marked,
)
from tenprof.analyses.timeline.step_time import (
    Intervals,
    idle_causes,
    length,
    own_step_ns,
    part_blocks,
    steady_steps,
    unmarked_span,
)
from tenprof.analyses.timeline.summary import stack_frames, user_frame_of
from tenprof.core.intervals import coverage, take
from tenprof.store.profile import Profile

I64 = npt.NDArray[np.int64]
_NO_OP = -2  # in place of a user frame: the event has no op


class Context:
    """The analysed window: the steady steps. That is the complete steps, less step 0 when it is the
    recording's first (it also holds everything before the first tenprof.step(), such as building the
    model; only the cold-start check looks at it), less the steps in which torch.compile compiled or CUDA
    graphs were recorded (only the torch-compile check looks at those, so one stall is not reported by
    every check), and less the slow steps: those taking `slow_step.min_ratio` times the median of the
    others and `slow_step.min_excess_ms` more, when they are few (`slow_step.max_share`): a one-off stall
    in the middle of a run: only the slow-step check looks at those, so a single stall is not read as a
    cost of every step. Where no
    steps were marked, the loop's iterations are inferred from the top-level ops
    (`analyses.timeline.inferred_steps`); failing that, the whole recording is one step. With fewer than two
    steps the whole profile is judged as one step."""

    def __init__(self, profile: Profile, thresholds: Thresholds, keep_compiling: bool = False) -> None:
        self.profile = profile
        self.t = thresholds
        self._keeping_compiling: Context | None = self if keep_compiling else None
        steps = profile.table("steps")
        complete = recorded_steps(profile)  # steps run with the capture off are judged through `overhead`
        self.step_numbers = steps.column("step").to_numpy()[complete]
        self.step_start = steps.column("start_ns").to_numpy()[complete]
        self.step_end = steps.column("end_ns").to_numpy()[complete]
        self.inferred: InferredSteps | None = None
        if len(self.step_start) == 0 and not steps_marked(profile):
            # No steps marked: the loop's iterations, when they can be told (see analyses.timeline.inferred_steps).
            self.inferred = infer_steps(profile)
            if self.inferred is not None:
                self.step_start, self.step_end = self.inferred.starts, self.inferred.ends
                self.step_numbers = np.arange(len(self.step_start), dtype=np.int64)
        if len(self.step_start) == 0:  # judged as one step, from the first GPU work (set-up left out)
            _, lo, hi = unmarked_span(profile)
            self.step_numbers = np.array([-1], dtype=np.int64)
            self.step_start = np.array([lo], dtype=np.int64)
            self.step_end = np.array([hi], dtype=np.int64)
        # All complete steps stay available (cold start compares the first with the rest).
        self.all_step_numbers, self.all_step_start, self.all_step_end = (
            self.step_numbers,
            self.step_start,
            self.step_end,
        )
        keep = np.ones(len(self.step_start), dtype=bool)
        if len(keep) >= 2 and self.step_numbers[0] == 0:
            keep[0] = False
        self.compiling_steps = 0
        if not keep_compiling and len(keep) >= 2:
            # Recording CUDA graphs (mode="reduce-overhead") is a one-off like compiling: its warm-up runs,
            # syncs and allocations are not the steady state.
            recording = profile.strings("api_calls", "name").where(lambda n: n.startswith(GRAPH_INSTANTIATES))
            compile_start = np.concatenate(
                [
                    frame_compilations(profile).start,
                    profile.column("api_calls", "start_ns")[recording],
                ]
            )
            pos = np.searchsorted(self.step_start, compile_start, side="right") - 1
            hit = np.zeros(len(keep), dtype=bool)
            valid = (pos >= 0) & (compile_start < take(self.step_end, pos, 0))
            hit[pos[valid]] = True
            self.compiling_steps = int((hit & keep).sum())
            if (keep & ~hit).any():
                keep &= ~hit
            else:
                self.compiling_steps = 0  # every step compiles: judge them anyway rather than judge nothing
        # The first step recorded after steps timed with the capture off pays the capture's restart (a new
        # GPU-activity session: CUPTI instruments the next launches again), measured at 2.6-3.7 ms on an H200
        # in steps of 0.2 ms: tenprof's cost, not the program's, so such a step is never a slow step. It stays
        # analysed: the other findings' costs were calibrated with it (docs/FINDINGS.md).
        self._resumed = resumed_steps(profile, complete)
        if self.inferred is not None or len(self._resumed) != len(keep):  # iterations or one span: no windows
            self._resumed = np.zeros(len(keep), dtype=bool)
        self.resumed_steps = int((self._resumed & keep).sum())
        self._own_ns = np.zeros(0, dtype=np.int64)  # each step's own time, where slow steps were judged
        self.slow = self._slow(keep)
        keep &= ~self.slow
        self._analysed = keep
        self.step_numbers, self.step_start, self.step_end = (
            self.step_numbers[keep],
            self.step_start[keep],
            self.step_end[keep],
        )
        self.step_count = len(self.step_start)
        self._named_ancestors: dict[tuple[frozenset[str], bool], I64] = {}
        self.analysed_ns = int((self.step_end - self.step_start).sum())

    def _slow(self, keep: npt.NDArray[np.bool_]) -> npt.NDArray[np.bool_]:
        """Which of the kept steps are one-off stalls (see the class docstring). Judged only with at
        least three steps; a step is slow against the median of all kept steps, so fewer than half
        can be."""
        slow = np.zeros(len(keep), dtype=bool)
        if keep.sum() < 3:
            return slow
        took = self._own_ns = own_step_ns(self.profile, self.step_start, self.step_end)
        median = float(np.median(took[keep]))
        slow[keep] = (took[keep] >= self.t.slow_step_min_ratio * median) & (
            took[keep] - median >= self.t.slow_step_min_excess_ms * 1e6
        )
        slow &= ~self._resumed
        if slow.sum() > self.t.slow_step_max_share * keep.sum():  # periodic, not one-off
            slow[:] = False
        return slow

    @property
    def slow_steps(self) -> tuple[I64, I64, I64]:
        """The slow steps' numbers, starts and ends."""
        return self.all_step_numbers[self.slow], self.all_step_start[self.slow], self.all_step_end[self.slow]

    @property
    def slow_steps_own_ns(self) -> tuple[float, I64]:
        """The analysed steps' median own time and each slow step's own time (step_time.own_step_ns), as
        the slow steps were judged by; only where there are slow steps."""
        return float(np.median(self._own_ns[self._analysed])), self._own_ns[self.slow]

    def step_index(self, times: I64) -> I64:
        """Index into the analysed steps of the step covering each time, -1 outside them."""
        pos = np.searchsorted(self.step_start, times, side="right") - 1
        ok = (pos >= 0) & (times < take(self.step_end, pos, 0))
        return np.where(ok, pos, -1)

    def in_steps(self, times: I64) -> npt.NDArray[np.bool_]:
        return self.step_index(times) >= 0

    @cached_property
    def overhead(self) -> Overhead:
        """The profiler's cost and the un-profiled step time, measured or estimated (see analyses.timeline.overhead)."""
        return measure(self.profile)

    @cached_property
    def parts(self) -> dict[str, Intervals]:
        """Where the analysed steps' time went (analyses.timeline.step_time): each part's blocks of time."""
        return part_blocks(self.profile, self.step_start, self.step_end)

    def part_ns(self, part: str) -> int:
        """A part's time over the analysed steps."""
        return length(self.parts[part])

    @cached_property
    def host_causes(self) -> dict[str, Intervals]:
        """Each cause's host intervals over the whole profile (analyses.timeline.step_time.idle_causes)."""
        return idle_causes(self.profile)

    def host_ns(self, part: str) -> int:
        """The host's time in a part's cause over the analysed steps (in the DataLoader, in allocator calls),
        whether the GPU was idle then or not: in a loop the host bounds, all of it delays the GPU's work."""
        starts, ends = self.host_causes[part]
        return int(coverage(starts, ends, self.step_start, self.step_end).sum())

    @cached_property
    def steady(self) -> npt.NDArray[np.bool_]:
        """Which analysed steps are steady as the step decomposition's summary takes them
        (analyses.timeline.step_time.steady_steps: past the cold ones and the capture's restarts)."""
        return steady_steps(self.step_numbers, self._resumed[self._analysed])

    def steady_per_step(self, starts: I64, ends: I64) -> float:
        """How much of the mean steady step (`steady`) the union of these intervals covers."""
        chosen = self.steady
        if not chosen.any():
            return 0.0
        return float(coverage(starts, ends, self.step_start[chosen], self.step_end[chosen]).sum()) / int(chosen.sum())

    def steady_step_ns(self) -> float:
        """The mean steady step's wall time."""
        chosen = self.steady
        return float((self.step_end[chosen] - self.step_start[chosen]).mean()) if chosen.any() else 0.0

    @property
    def analysed_end(self) -> int:
        return int(self.step_end[-1]) if len(self.step_end) else 0

    @cached_property
    def kernel_launch_ns(self) -> I64:
        """When each kernel was launched (its API call's start); GPU work of a busy queue runs long after,
        so kernels are assigned to the step that launched them, not the one their GPU time falls in."""
        return kernel_launch_ns(self.profile)

    @cached_property
    def graph_captures(self) -> int:
        """How many CUDA (or HIP) graph captures began in the analysed steps. Captured launches run only when
        the graph is replayed, so the GPU idles while they are captured: a recording of captures shows a
        one-off set-up (a server capturing its graphs at start), not the steps the graphs will run."""
        api = self.profile.table("api_calls")
        begins = self.profile.strings("api_calls", "name").where(lambda n: CAPTURE_BEGIN in n)
        return int((begins & self.in_steps(api.column("start_ns").to_numpy())).sum())

    @cached_property
    def kernels_in_steps(self) -> npt.NDArray[np.bool_]:
        """Which kernels were launched in the analysed steps (the step that launched them, not the one
        their GPU time falls in)."""
        return self.in_steps(self.kernel_launch_ns)

    @cached_property
    def steps_kernel_ns(self) -> int:
        """The kernel time launched in the analysed steps: what shares of GPU time are shares of."""
        return int(self.profile.column("kernels", "duration_ns")[self.kernels_in_steps].sum())

    @cached_property
    def perf(self) -> PerfModel | None:
        """The performance model of the kernels launched in the analysed steps (None without GPU work)."""
        return perf_model(self.profile, self.kernels_in_steps)

    @cached_property
    def transfer_issue_ns(self) -> I64:
        """When each copy was issued: the start of the op that issued it, else the copy's own start."""
        t = self.profile.table("transfers")
        issued = take(self.profile.column("ops", "start_ns"), t.column("op_id").to_numpy(), -1)
        return np.where(issued >= 0, issued, t.column("start_ns").to_numpy())

    @cached_property
    def gpu_window(self) -> tuple[int, int]:
        """From the first to the last kernel launched in the analysed steps, on the GPU's clock: where
        GPU idle is judged. Queued work runs after the CPU-side step that launched it, so the steps'
        own windows would misplace it."""
        k = self.profile.table("kernels")
        launched = self.kernels_in_steps
        if not launched.any():
            return 0, 0
        return int(k.column("start_ns").to_numpy()[launched].min()), int(k.column("end_ns").to_numpy()[launched].max())

    @cached_property
    def gpu_intervals(self) -> tuple[I64, I64]:
        k, t = self.profile.table("kernels"), self.profile.table("transfers")
        starts = np.concatenate([k.column("start_ns").to_numpy(), t.column("start_ns").to_numpy()])
        ends = np.concatenate([k.column("end_ns").to_numpy(), t.column("end_ns").to_numpy()])
        return starts, ends

    @cached_property
    def op_user_frame(self) -> I64:
        frame = self.profile.column("ops", "frame_id")
        return take(user_frame_of(self.profile), frame)

    @cached_property
    def frame_labels(self) -> list[str]:
        f = self.profile.table("frames")
        return [
            f"{file}:{line}"
            for file, line in zip(f.column("file").to_pylist(), f.column("line").to_pylist(), strict=True)
        ]

    @cached_property
    def _stack_frames(self) -> set[int]:
        return stack_frames(self.profile)

    def line_of_op(self, op: int) -> str:
        return self._line_of_frame(int(self.op_user_frame[op]) if op >= 0 else _NO_OP)

    def _line_of_frame(self, frame: int) -> str:
        """The line an op's user frame names (`_NO_OP` for no op, negative for none of the user's)."""
        if frame == _NO_OP:
            return "(no op)"
        if frame < 0:
            return "(no line of yours)"
        if frame in self._stack_frames:
            function = self.profile.table("frames").column("function")[frame].as_py()
            return f"{function}() starting at {self.frame_labels[frame]} (the trace names functions, not lines)"
        return self.frame_labels[frame]

    def where(self, ops: I64, weights: npt.NDArray[np.int64] | None = None, limit: int = 3) -> list[str]:
        """The user lines behind some ops, heaviest first (weights default to one per op)."""
        tally: Counter[str] = Counter()
        w = np.ones(len(ops), dtype=np.int64) if weights is None else weights
        # summed per user frame first: a finding's ops are often many thousands, on a few lines; the lines
        # counted in the order the ops first reach them, so equal weights rank as the ops came
        frames = np.where(ops >= 0, take(self.op_user_frame, ops, -1), _NO_OP)
        distinct, first, which = np.unique(frames, return_index=True, return_inverse=True)
        summed = np.bincount(which.reshape(-1), weights=w, minlength=len(distinct)).astype(np.int64)
        for k in np.argsort(first, kind="stable").tolist():
            tally[self._line_of_frame(int(distinct[k]))] += int(summed[k])
        return [line for line, _ in tally.most_common(limit)]

    @cached_property
    def _op_names(self) -> list[str]:
        return self.profile.strings("ops", "name").rows()

    def op_names(self) -> list[str]:
        """Every op's name, in op order (for a walk over most ops; `op_name` for a few)."""
        return self._op_names

    def op_name(self, op: int) -> str:
        return self.profile.strings("ops", "name").at(op)

    def holders(self, found: Blocks, chosen: npt.NDArray[np.bool_]) -> list[Holder]:
        """What holds the chosen allocator blocks, by line and op, with the steps (of every complete step,
        the first too) they were made in (analyses.timeline.live_memory)."""
        numbers = step_numbers(found, self.all_step_start, self.all_step_end, self.all_step_numbers)
        return holders(self.profile, found, chosen, numbers, self.line_of_op)

    def keeping_compiling(self) -> Context:
        """The same judgement with the compiling steps kept (the compile checks'), made once and shared."""
        if self._keeping_compiling is None:
            self._keeping_compiling = Context(self.profile, self.t, keep_compiling=True)
        return self._keeping_compiling

    def named_ancestors(self, names: frozenset[str], outermost: bool = False) -> I64:
        """Per op, the innermost (or outermost) op from it up to its top-level op whose name is in `names`,
        -1 where none is; computed for every op at once, level by level down the op tree, and kept.

        Outermost names the user's call: `.contiguous()` runs aten::contiguous -> aten::clone -> aten::copy_."""
        key = (names, outermost)
        if key not in self._named_ancestors:
            own = self.profile.strings("ops", "name").where(lambda n: n in names)
            parent = self.profile.column("ops", "parent_op_id")
            depth = self.profile.column("ops", "depth")
            found = np.where(own, np.arange(len(own), dtype=np.int64), -1)
            by_depth = np.argsort(depth, kind="stable")
            bounds = np.searchsorted(depth[by_depth], np.arange(int(depth.max(initial=0)) + 2))
            for d in range(1, len(bounds) - 1):
                level = by_depth[bounds[d] : bounds[d + 1]]
                up = parent[level]
                above = np.where(up >= 0, found[np.clip(up, 0, None)], -1)
                if outermost:
                    found[level] = np.where(above >= 0, above, found[level])
                else:
                    found[level] = np.where(found[level] >= 0, found[level], above)
            self._named_ancestors[key] = found
        return self._named_ancestors[key]


def host_cost(ctx: Context, gpu_idle_ns: int, host_ns: int) -> int:
    """What removing some of the host's time would save: at least the GPU's idle time seen while the host
    was in it, and up to all of that host time, as far as the steps' GPU idle time goes (un-profiled where
    known): a host-bound step is shortened by every microsecond the host stops spending, a GPU-bound one
    only by the GPU's idle time."""
    from tenprof.analyses.findings.causes import idle_budget_ns

    return max(gpu_idle_ns, min(host_ns, idle_budget_ns(ctx)))


def per_step(total: float, ctx: Context) -> float:
    return total / max(ctx.step_count, 1)
