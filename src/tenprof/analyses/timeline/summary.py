"""The one-screen summary: device, wall time, GPU busy %, kernel count, time per step, attribution."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from tenprof.analyses.kernels.arch_from_names import family, newest_arch
from tenprof.analyses.timeline.critical_path import critical_path_windows
from tenprof.analyses.timeline.live_memory import Holder, blocks, device_name, holders, live_at, step_numbers
from tenprof.analyses.timeline.overhead import (
    Overhead,
    in_uncopied_steps,
    in_unrecorded_steps,
    kernel_launch_ns,
    measure,
    recorded_steps,
    steps_marked,
)
from tenprof.core.intervals import coverage, take, union_length
from tenprof.core.kernel_names import USER_KERNEL_PREFIX
from tenprof.store.meta import GpuInfo
from tenprof.store.profile import Profile


@dataclass(frozen=True)
class Attribution:
    """Share of GPU kernel time that reaches an aten op, and a line of the user's own code."""

    kernel_time_ns: int
    to_op_ns: int  # to a torch op, or to an op of its own for a kernel the script launched itself
    to_user_line_ns: int
    to_user_kernel_ns: int = 0  # of to_op_ns: kernels launched outside torch ops ("(user kernel) NAME")
    # of the rest: kernels of steps run without op records that no recorded step's could be copied into
    # (TENPROF_OPS=sampled: mostly the stretch after the last step mark)
    uncopied_ns: int = 0

    @property
    def uncopied_percent(self) -> float:
        return 100.0 * self.uncopied_ns / self.kernel_time_ns if self.kernel_time_ns else 0.0

    @property
    def user_kernel_percent(self) -> float:
        return 100.0 * self.to_user_kernel_ns / self.kernel_time_ns if self.kernel_time_ns else 0.0

    @property
    def op_percent(self) -> float:
        return 100.0 * self.to_op_ns / self.kernel_time_ns if self.kernel_time_ns else 100.0

    @property
    def user_line_percent(self) -> float:
        return 100.0 * self.to_user_line_ns / self.kernel_time_ns if self.kernel_time_ns else 100.0


@dataclass(frozen=True)
class Summary:
    source: str
    command: str
    host: str
    devices: list[str]
    versions: str
    wall_time_s: float
    window_ns: int
    gpu_busy_ns: int
    kernel_count: int
    kernel_time_ns: int
    transfer_count: int
    transfer_time_ns: int
    op_count: int
    step_count: int
    step_median_ns: int
    step_min_ns: int
    step_max_ns: int
    steps_window_ns: int
    steps_gpu_busy_ns: int
    attribution: Attribution
    cut_short: str
    overhead: Overhead
    memory_peak: MemoryPeak | None = None
    inferred_steps: int = 0  # iterations found in the top-level ops where no steps were marked (0: none)
    shapes_note: str = ""  # where input shapes were asked in sampled steps alone: how the others got theirs
    notes: list[str] = field(default_factory=list)

    @property
    def gpu_busy_percent(self) -> float:
        return 100.0 * self.gpu_busy_ns / self.window_ns if self.window_ns else 0.0

    @property
    def steps_gpu_busy_percent(self) -> float:
        return 100.0 * self.steps_gpu_busy_ns / self.steps_window_ns if self.steps_window_ns else 0.0


def user_frame_of(profile: Profile, table: str = "frames") -> np.ndarray:
    """For each frame node, the innermost node on its path (itself included) in user code, or -1."""
    f = profile.table(table)
    parent = f.column("parent_frame_id").to_pylist()
    is_user = f.column("is_user").to_pylist()
    out = [-1] * len(parent)  # a list while walking: a numpy element access costs several times a list's
    for i, (up, user) in enumerate(zip(parent, is_user, strict=True)):  # frames are numbered parents first
        out[i] = i if user else (out[up] if up >= 0 else -1)
    return np.array(out, dtype=np.int64)


class OpLines:
    """`op_lines(op)`: the user's source line (`file:line`) of an op, the innermost frame of its call path
    in user code; '' for no op (-1) or no such frame."""

    def __init__(self, profile: Profile) -> None:
        self._frame = profile.table("ops").column("frame_id").to_numpy()
        self._user = user_frame_of(profile)
        frames = profile.table("frames")
        self._files, self._lines = frames.column("file").to_pylist(), frames.column("line").to_pylist()

    def __call__(self, op: int) -> str:
        if not 0 <= op < len(self._frame) or self._frame[op] < 0:
            return ""
        u = int(self._user[self._frame[op]])
        return f"{self._files[u]}:{self._lines[u]}" if u >= 0 else ""


def attribution(profile: Profile) -> Attribution:
    """Over the kernels of the recorded steps: those launched in a step run with the capture off (to time
    the program un-profiled) have no op by design."""
    k = profile.table("kernels")
    launched = kernel_launch_ns(profile)
    recorded = ~in_unrecorded_steps(profile, launched)
    dur = k.column("duration_ns").to_numpy()[recorded]
    op = k.column("op_id").to_numpy()[recorded]
    op_frame = profile.table("ops").column("frame_id").to_numpy()
    user_of = user_frame_of(profile)
    frame = take(op_frame, op)
    has_user = np.zeros(len(dur), dtype=bool)
    ok = frame >= 0
    has_user[ok] = user_of[frame[ok]] >= 0
    own_op = profile.strings("ops", "name").where(lambda n: n.startswith(USER_KERNEL_PREFIX))
    own = np.zeros(len(op), dtype=bool)
    own[op >= 0] = own_op[op[op >= 0]]
    uncopied = in_uncopied_steps(profile, launched[recorded]) & (op < 0)
    return Attribution(
        int(dur.sum()), int(dur[op >= 0].sum()), int(dur[has_user].sum()), int(dur[own].sum()), int(dur[uncopied].sum())
    )


HELD_SHOWN = 8  # the lines that held the memory peak, in the summary


@dataclass(frozen=True)
class MemoryPeak:
    """The most memory the allocator held allocated, from the recording's memory events."""

    device: str  # e.g. cuda:0
    allocated_bytes: int
    reserved_bytes: int  # -1 where the trace does not say
    at_ns: int  # from the start of the recording
    op: str  # the op that allocated it ('' when none)
    line: str  # that op's line of the user's code ('' when unknown)
    held: list[Holder] = field(default_factory=list)  # what held it, by line and op, most first (HELD_SHOWN)
    # the trace records no allocator totals (Kineto's format of 2021: each event's bytes only): allocated_bytes
    # is summed from the events' bytes, a lower bound (allocated_totals)
    summed_from_events: bool = False


def allocated_totals(profile: Profile) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.bool_]]:
    """Allocated bytes after each memory event, and per event whether they were summed from the events (a
    lower bound) rather than recorded: the allocator's totals where the trace records them; on a device whose
    events record none (every total -1, as in Kineto's traces of 2021, whose events carry only their bytes),
    the running sum of its events' bytes, raised by what it would need not to go below zero (what was held
    before the recording is unknown, and at least that much was freed in it)."""
    m = profile.table("memory")
    total = m.column("total_allocated_bytes").to_numpy().astype(np.int64)
    summed = np.zeros(len(total), dtype=bool)
    if len(total) == 0 or (total >= 0).all():
        return total, summed
    kinds = m.column("device_type").to_numpy(zero_copy_only=False)
    devices = m.column("device").to_numpy()
    change = m.column("bytes").to_numpy()
    order = np.argsort(m.column("ts_ns").to_numpy(), kind="stable")
    for kind, device in set(zip(kinds.tolist(), devices.tolist(), strict=True)):
        mine = order[(kinds[order] == kind) & (devices[order] == device)]
        if (total[mine] >= 0).any():
            continue  # this device's totals were recorded
        running = np.cumsum(change[mine])
        total[mine] = running - min(0, int(running.min()))
        summed[mine] = True
    return total, summed


def memory_peak(profile: Profile) -> MemoryPeak | None:
    """The peak of allocated memory, on a GPU when the recording has GPU memory events, else the CPU's."""
    m = profile.table("memory")
    if m.num_rows == 0:
        return None
    rows = np.flatnonzero(profile.strings("memory", "device_type").equals("cuda"))
    if len(rows) == 0:
        rows = np.arange(m.num_rows)
    allocated, summed = allocated_totals(profile)
    i = int(rows[int(np.argmax(allocated[rows]))])
    op = int(m.column("op_id")[i].as_py())
    name, line = "", ""
    if op >= 0:
        name = str(profile.table("ops").column("name")[op].as_py())
        op_frame = int(profile.column("ops", "frame_id")[op])
        frame = int(user_frame_of(profile)[op_frame]) if op_frame >= 0 else -1
        if frame >= 0:
            f = profile.table("frames")
            line = f"{f.column('file')[frame].as_py()}:{f.column('line')[frame].as_py()}"
            if frame in stack_frames(profile):
                line = f"{f.column('function')[frame].as_py()}() starting at {line}"
    start = recording_start(profile)
    found = blocks(profile)
    device = device_name(str(m.column("device_type")[i].as_py()), int(m.column("device")[i].as_py()))
    steps = profile.table("steps")
    numbers = step_numbers(
        found, steps.column("start_ns").to_numpy(), steps.column("end_ns").to_numpy(), steps.column("step").to_numpy()
    )
    lines = OpLines(profile)
    at_peak = live_at(found, int(m.column("ts_ns")[i].as_py())) & found.on(device)
    held = holders(profile, found, at_peak, numbers, lambda op: lines(op) or "(no line of yours)")
    return MemoryPeak(
        device=device,
        allocated_bytes=int(allocated[i]),
        reserved_bytes=int(m.column("total_reserved_bytes")[i].as_py()),
        at_ns=int(m.column("ts_ns")[i].as_py()) - start,
        op=name,
        line=line,
        held=held[:HELD_SHOWN],
        summed_from_events=bool(summed[i]),
    )


def recording_start(profile: Profile) -> int:
    """Where times "into the recording" count from: the first op, kernel or copy. The memory peak's time and
    the report page's memory chart both count from here, so the page marks the peak where the text says."""
    return profiled_span(profile, ("ops", "kernels", "transfers"))[0]


def stack_frames(profile: Profile) -> set[int]:
    """The user frames that came from a trace's with_stack ranges: they carry the line of their function's
    `def`, not the line that ran."""
    ops = profile.table("ops")
    from_stack = profile.strings("ops", "frame_source").equals("stack")
    return set(take(user_frame_of(profile), ops.column("frame_id").to_numpy()[from_stack]).tolist())


@dataclass(frozen=True)
class StepStats:
    count: int
    median_ns: int
    min_ns: int
    max_ns: int
    window_ns: int  # total duration of the complete steps
    gpu_busy_ns: int  # GPU time (kernels and copies, overlaps counted once) inside those steps


def step_stats(profile: Profile, starts: np.ndarray, ends: np.ndarray) -> StepStats:
    """Statistics of the complete recorded steps (a step cut by the end of profiling is not complete; one
    run with the capture off is not recorded), each on the critical path (analyses.timeline.critical_path: a
    step the GPU bounds lasts until its kernels end, not until the host that ran ahead marked the next one),
    and how busy the GPU was inside them: the whole profiled window also holds set-up such as building the
    model."""
    steps = profile.table("steps")
    complete = recorded_steps(profile)
    if not complete.any():
        return StepStats(0, 0, 0, 0, 0, 0)
    lo, hi = steps.column("start_ns").to_numpy()[complete], steps.column("end_ns").to_numpy()[complete]
    s_start, s_end = critical_path_windows(profile, lo, hi, steps.column("step").to_numpy()[complete])
    # the host-bound step keeps its recorded duration (tenprof's own work at the boundary taken out); a step
    # the GPU bounds gains the time its kernels ran past the host's end of it, and loses what the step before
    # it ran into its window
    d = steps.column("duration_ns").to_numpy()[complete] + (s_end - hi) - (s_start - lo)
    busy = int(coverage(starts, ends, s_start, s_end).sum())
    return StepStats(len(d), int(np.median(d)), int(d.min()), int(d.max()), int(d.sum()), busy)


def device_labels(
    gpus: list[GpuInfo], kernel_devices: np.ndarray, transfer_devices: np.ndarray, arch: int | None = None
) -> list[str]:
    """The devices of the summary: the GPUs the profile names; where it names none (a trace without
    Kineto's deviceProperties) but GPU work was recorded, the devices that work ran on, with the newest
    architecture its library kernels were built for (`arch`, analyses.kernels.arch_from_names); else CPU
    only."""
    if gpus:
        return [f"GPU {g.index}: {g.name}" for g in gpus]
    ran_on = sorted({int(d) for d in np.concatenate([kernel_devices, transfer_devices]).tolist()})
    if not ran_on:
        return ["CPU only (no CUDA device recorded)"]
    built_for = f"; its newest library kernels are built for {family(arch)}, sm_{arch}" if arch else ""
    return [f"GPU {d} (the trace does not name it{built_for})" for d in ran_on]


def summarize(profile: Profile) -> Summary:
    meta = profile.meta
    k = profile.table("kernels")
    t = profile.table("transfers")
    starts = np.concatenate([k.column("start_ns").to_numpy(), t.column("start_ns").to_numpy()])
    ends = np.concatenate([k.column("end_ns").to_numpy(), t.column("end_ns").to_numpy()])
    window = meta.timeline.trace_span_ns
    if window is None or window <= 0:  # not measured (or, in old profiles, measured as 0)
        lo, hi = profiled_span(profile)
        window = hi - lo
    busy = union_length(starts, ends)
    steps = step_stats(profile, starts, ends)
    arch = None if meta.gpus else newest_arch(profile)
    devices = device_labels(meta.gpus, k.column("device").to_numpy(), t.column("device").to_numpy(), arch)
    versions = ", ".join(
        part
        for part in (
            f"torch {meta.torch_version}" if meta.torch_version else "",
            f"CUDA {meta.cuda_version}" if meta.cuda_version else "",
            f"driver {meta.driver_version}" if meta.driver_version else "",
        )
        if part
    )
    notes = profile.missing()
    return Summary(
        source=meta.source,
        command=" ".join(meta.command),
        host=meta.host,
        devices=devices,
        versions=versions,
        wall_time_s=meta.run.wall_time_s,
        window_ns=window,
        gpu_busy_ns=busy,
        kernel_count=k.num_rows,
        kernel_time_ns=int(k.column("duration_ns").to_numpy().sum()),
        transfer_count=t.num_rows,
        transfer_time_ns=int(t.column("duration_ns").to_numpy().sum()),
        op_count=profile.table("ops").num_rows,
        step_count=steps.count,
        step_median_ns=steps.median_ns,
        step_min_ns=steps.min_ns,
        step_max_ns=steps.max_ns,
        steps_window_ns=steps.window_ns,
        steps_gpu_busy_ns=steps.gpu_busy_ns,
        attribution=attribution(profile),
        cut_short=meta.run.cut_short_reason if meta.run.cut_short else "",
        overhead=measure(profile),
        memory_peak=memory_peak(profile),
        inferred_steps=_inferred_count(profile) if not steps_marked(profile) else 0,
        shapes_note=shapes_note(meta.timeline.input_sampling, meta.timeline.op_copy),
        notes=notes,
    )


def shapes_note(sampling: dict[str, Any] | None, copy: dict[str, Any] | None = None) -> str:
    """How the ops' input shapes were had where the capture asked for them in sampled steps alone
    (capture.input_sampling), and, where it recorded ops in those steps alone (TENPROF_OPS=sampled), how the
    other steps got theirs (capture.op_copy); '' where every op's were asked for."""
    ops = ""
    if copy and copy.get("steps_without_ops"):
        left = len(copy.get("unmatched") or [])
        ops = (
            f"ops recorded in sampled steps alone: {copy.get('copied_steps', 0)} of "
            f"{copy.get('steps_without_ops', 0)} steps without them given those of a step that launched the same "
            f"work ({copy.get('ops', 0)} ops)" + (f", {left} left without ops" if left else "")
        )
    if not sampling or not sampling.get("not_asked"):
        return ops
    left = int(sampling.get("left", 0))
    # (named filled_without_doubles before ints' values could be unknown too)
    blank = int(sampling.get("filled_without_scalars", sampling.get("filled_without_doubles", 0)))
    asked = [str(n) for n in sampling.get("asked") or []]
    why = ", ".join(f"{reason} {n}" for reason, n in sorted((sampling.get("why") or {}).items(), key=lambda x: -x[1]))
    which = f"step {', '.join(asked[:8])}{', ...' if len(asked) > 8 else ''}" if asked else ""
    which = f" ({'; '.join(x for x in (which, f'asked for: {why}' if why else '') if x)})" if which or why else ""
    shapes = (
        f"input shapes asked in {sampling.get('asked_steps', 0)} of {sampling.get('steps', 0)} recorded steps{which}, "
        f"copied to {int(sampling.get('filled', 0))} ops of the others from the same op of a step with the same ops"
        + (f" ({blank} without the scalar arguments' values that changed between steps)" if blank else "")
        + (f"; {left} ops without shapes (no step like theirs asked)" if left else "")
    )
    return f"{ops}; {shapes}" if ops else shapes


def _inferred_count(profile: Profile) -> int:
    from tenprof.analyses.timeline.inferred_steps import infer_steps

    found = infer_steps(profile)
    return len(found.starts) if found is not None else 0


def profiled_span(
    profile: Profile, tables: tuple[str, ...] = ("ops", "kernels", "transfers", "api_calls")
) -> tuple[int, int]:
    """(first start, last end) over the events of `tables`, (0, 0) when they are empty."""
    lows, highs = [], []
    for name in tables:
        tab = profile.table(name)
        if tab.num_rows:
            lows.append(int(tab.column("start_ns").to_numpy().min()))
            highs.append(int(tab.column("end_ns").to_numpy().max()))
    return (min(lows), max(highs)) if lows else (0, 0)
