"""What changed between two runs, and which line of code it comes from (`tenprof diff BEFORE AFTER`).

Each run is read over its steady steps, the window the findings judge (analyses.findings.context: the
complete recorded steps less the first, compiling and one-off slow ones; inferred iterations where no
steps were marked). A step's time is when it is done, host and GPU, less when the step before was done:
the host returns from an asynchronous step long before the GPU has run it, so the host's step alone
would hide every GPU change; a step is done when the host has left it and the kernels it launched have
ended. Per run:
- per step: the median step time, the share of the steps' time the GPU was busy (kernels and copies,
  overlaps counted once), the steps' time split as the per-step breakdown splits it (compute, then
  communication (NCCL kernels), then transfers, then idle; per step, averaged), the kernel time and
  kernel launches per step, the CPU time of top-level ops per step, and the un-profiled step time
  where the run measured it (the profiler's own cost is their difference);
- per Python line of the user's (the innermost user frame of each op; lines are matched between the runs
  by file name and the line's text where the source can be read, so an edit that moves a line still
  matches; else by file name and number): GPU time per step of the kernels its ops launched, and CPU
  time per step of its top-level ops. A kernel torch.compile generated goes to the lines of the aten
  ops it fuses, as the generated code lists them (`compiled_kernels`; split evenly among them), so a
  compiled run's lines meet an eager run's; an op the compiled code calls (a library GEMM) goes to the
  line where the other run ran the same op on the same inputs (same name, and one run's input shapes
  begin with the other's: compiled code calls the `out=` variants, one tensor more), when there is one
  such line, else stays at the line that called the compiled function;
- per op (name and input shapes) and per kernel name: GPU time and launches per step.
The step change is tested against each run's step-to-step spread: a permutation test on the difference
of the medians (20000 relabelings, fixed seed), beyond noise when p < 0.05 or when no step of one run is
as slow as any step of the other (with four steps a side the test cannot go below p = 0.03, and ties
raise it: the ranges are then the stronger evidence, and the report says which held).

The per-line rows are ranked by the larger of their GPU and CPU deltas; the rows then add up to the step
change with a remainder that is shown: the GPU time of kernels with no line of the user's, and what no
line holds (GPU idle, kernels overlapping, host time outside ops). Findings are compared by check id.
"""

from __future__ import annotations

import json
import linecache
import os
from collections import defaultdict
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from tenprof.analyses.compiled import in_compiled_region
from tenprof.analyses.findings import Thresholds, find_all
from tenprof.analyses.findings.context import Context
from tenprof.core.intervals import coverage, take
from tenprof.store.profile import Profile

PERMUTATIONS = 20000
SIGNIFICANT = 0.05


@dataclass(frozen=True)
class RunSide:
    """One run, per steady step."""

    name: str
    device: str
    torch_version: str
    step_ns: list[int]  # each steady step's duration
    median_step_ns: float
    unprofiled_step_ns: float | None
    busy_share: float  # of the steady steps' time, the GPU busy (kernels and copies, overlaps once)
    breakdown: dict[str, float]  # compute, communication, transfers, idle: per step (mean), ns
    kernel_ns: float
    kernels: float
    op_cpu_ns: float
    lines: dict[tuple[str, str], tuple[float, float, float, str]]  # key -> gpu, cpu, launches, label
    ops: dict[str, tuple[float, float]]  # op signature -> gpu time, launches
    kernel_names: dict[str, tuple[float, float]]  # kernel -> gpu time, launches
    no_line_kernel_ns: float
    findings: dict[str, str] = field(default_factory=dict)  # check id -> title
    # ops run inside compiled regions, per signature: gpu, launches, and the line they ran at (the call)
    region_ops: dict[str, tuple[float, float, tuple[str, str], str]] = field(default_factory=dict)
    op_lines: dict[str, set[tuple[tuple[str, str], str]]] = field(default_factory=dict)  # signature -> lines


@dataclass(frozen=True)
class Change:
    what: str  # the line, op or kernel
    before_ns: float
    after_ns: float
    before_count: float  # launches per step
    after_count: float
    before_cpu_ns: float = 0.0  # lines: CPU time of their top-level ops per step
    after_cpu_ns: float = 0.0

    @property
    def delta_ns(self) -> float:
        return self.after_ns - self.before_ns

    @property
    def cpu_delta_ns(self) -> float:
        return self.after_cpu_ns - self.before_cpu_ns

    @property
    def status(self) -> str:
        if not self.before_count and self.after_count:
            return "new"
        if self.before_count and not self.after_count:
            return "gone"
        return ""


@dataclass(frozen=True)
class StepChange:
    before_ns: float
    after_ns: float
    p_value: float
    beyond_noise: bool
    test: str

    @property
    def delta_ns(self) -> float:
        return self.after_ns - self.before_ns


@dataclass(frozen=True)
class Diff:
    before: RunSide
    after: RunSide
    step: StepChange
    lines: list[Change]
    no_line_kernel_delta_ns: float  # kernels with no line of the user's
    remainder_ns: float  # step change less every line's GPU delta and the no-line kernels' delta
    ops: list[Change]
    kernels: list[Change]
    appeared: list[str]  # findings (id: title) only AFTER has
    vanished: list[str]  # findings only BEFORE has


def read_side(profile: Profile, name: str, thresholds: Thresholds | None = None) -> RunSide:
    t = thresholds or Thresholds()
    ctx = Context(profile, t)
    steps = max(ctx.step_count, 1)
    k = profile.table("kernels")
    in_steps = ctx.kernels_in_steps
    lo, hi = _step_windows(ctx, k.column("end_ns").to_numpy())
    durations = [int(x) for x in hi - lo]
    busy = _busy_share(ctx, lo, hi)
    breakdown = _breakdown(profile, lo, hi)
    duration = k.column("duration_ns").to_numpy()[in_steps].astype(np.float64)
    kernel_op = k.column("op_id").to_numpy()[in_steps]
    kernel_name = np.array(k.column("name").to_pylist(), dtype=object)[in_steps]
    ops = profile.table("ops")
    op_names = ops.column("name").to_pylist()
    shapes = ops.column("input_shapes").to_pylist()
    keys = _line_keys(profile)
    fused = _fused_lines(profile)
    in_region = in_compiled_region(profile)
    region: dict[str, list[Any]] = {}
    op_lines: dict[str, set[tuple[tuple[str, str], str]]] = defaultdict(set)
    user = ctx.op_user_frame
    line_gpu: dict[tuple[str, str], float] = defaultdict(float)
    line_launches: dict[tuple[str, str], float] = defaultdict(float)
    labels: dict[tuple[str, str], str] = {}
    op_time: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    no_line = 0.0
    frames = take(user, kernel_op, -1)
    for ns, op, frame, kernel in zip(duration.tolist(), kernel_op.tolist(), frames.tolist(), kernel_name, strict=True):
        places = fused.get(str(kernel))
        if places:
            for key, label in places:
                line_gpu[key] += ns / len(places)
                line_launches[key] += 1 / len(places)
                labels[key] = label
        elif op >= 0 and in_region[op] and frame >= 0:
            # an op the compiled code calls: placed against the other run in `diff`
            entry = region.setdefault(_op_signature(op_names[op], shapes[op]), [0.0, 0.0, *keys[frame]])
            entry[0] += ns
            entry[1] += 1
        elif frame >= 0:
            key, label = keys[frame]
            line_gpu[key] += ns
            line_launches[key] += 1
            labels[key] = label
            if op >= 0:
                op_lines[_op_signature(op_names[op], shapes[op])].add((key, label))
        else:
            no_line += ns
        signature = f"{op_names[op]} {shapes[op] or ''}".strip() if op >= 0 else "(no op)"
        op_time[signature][0] += ns
        op_time[signature][1] += 1
    by_kernel: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for ns, kernel in zip(duration.tolist(), kernel_name, strict=True):
        by_kernel[str(kernel)][0] += ns
        by_kernel[str(kernel)][1] += 1
    # CPU time of top-level ops, per line
    top = ops.column("depth").to_numpy() == 0
    starts = ops.column("start_ns").to_numpy()
    cpu = ops.column("duration_ns").to_numpy().astype(np.float64)
    chosen = top & ctx.in_steps(starts)
    line_cpu: dict[tuple[str, str], float] = defaultdict(float)
    for op in np.flatnonzero(chosen).tolist():
        frame = int(user[op])
        if frame >= 0:
            key, label = keys[frame]
            line_cpu[key] += cpu[op]
            labels.setdefault(key, label)
    lines = {
        key: (
            line_gpu.get(key, 0.0) / steps,
            line_cpu.get(key, 0.0) / steps,
            line_launches.get(key, 0.0) / steps,
            label,
        )
        for key, label in labels.items()
    }
    overhead = ctx.overhead
    gpus = profile.meta.gpus
    return RunSide(
        name=name,
        device=gpus[0].name if gpus else "cpu",
        torch_version=profile.meta.torch_version,
        step_ns=durations,
        median_step_ns=float(np.median(durations)) if durations else 0.0,
        unprofiled_step_ns=overhead.unprofiled_step_ns if overhead.known else None,
        busy_share=busy,
        breakdown=breakdown,
        kernel_ns=float(duration.sum()) / steps,
        kernels=len(duration) / steps,
        op_cpu_ns=float(cpu[chosen].sum()) / steps,
        lines=lines,
        ops={s: (v[0] / steps, v[1] / steps) for s, v in op_time.items()},
        kernel_names={s: (v[0] / steps, v[1] / steps) for s, v in by_kernel.items()},
        no_line_kernel_ns=no_line / steps,
        findings={f.id: f.title for f in find_all(profile, t)},
        region_ops={sig: (v[0] / steps, v[1] / steps, v[2], v[3]) for sig, v in region.items()},
        op_lines=dict(op_lines),
    )


def diff(before: RunSide, after: RunSide) -> Diff:
    before, after = _placed(before, after), _placed(after, before)
    step = _step_change(before.step_ns, after.step_ns)
    none = (0.0, 0.0, 0.0, "")
    lines = []
    for key in before.lines.keys() | after.lines.keys():
        old, new = before.lines.get(key, none), after.lines.get(key, none)  # gpu, cpu, launches, label
        lines.append(Change(label_of(before, after, key), old[0], new[0], old[2], new[2], old[1], new[1]))
    lines.sort(key=lambda c: -max(abs(c.delta_ns), abs(c.cpu_delta_ns)))
    no_line = after.no_line_kernel_ns - before.no_line_kernel_ns
    remainder = step.delta_ns - sum(c.delta_ns for c in lines) - no_line
    return Diff(
        before=before,
        after=after,
        step=step,
        lines=lines,
        no_line_kernel_delta_ns=no_line,
        remainder_ns=remainder,
        ops=_changes(before.ops, after.ops),
        kernels=_changes(before.kernel_names, after.kernel_names),
        appeared=[f"{i}: {after.findings[i]}" for i in sorted(after.findings.keys() - before.findings.keys())],
        vanished=[f"{i}: {before.findings[i]}" for i in sorted(before.findings.keys() - after.findings.keys())],
    )


def _placed(side: RunSide, other: RunSide) -> RunSide:
    """`side` with the ops its compiled code called added to lines: where `other` ran the same op at one
    line, there; else at the line that called the compiled function."""
    if not side.region_ops:
        return side
    lines = dict(side.lines)
    for signature, (gpu, launches, key, label) in side.region_ops.items():
        found = _same_op_lines(signature, other.op_lines)
        if len(found) == 1:
            key, label = next(iter(found))
        old = lines.get(key, (0.0, 0.0, 0.0, label))
        lines[key] = (old[0] + gpu, old[1], old[2] + launches, old[3])
    return replace(side, lines=lines, region_ops={})


def _op_signature(name: str, shapes: str | None) -> str:
    """An op by name and its input shapes, `name [[...], ...]`."""
    try:
        parsed = json.loads(shapes or "[]")
    except ValueError:
        parsed = []
    return f"{name} {json.dumps(parsed if isinstance(parsed, list) else [])}"


def _same_op_lines(
    signature: str, op_lines: dict[str, set[tuple[tuple[str, str], str]]]
) -> set[tuple[tuple[str, str], str]]:
    """The lines of the ops in `op_lines` that are `signature`'s op: the same name, and one's input
    shapes begin with all of the other's (at least two)."""
    name, _, shapes = signature.partition(" ")
    mine = json.loads(shapes or "[]")
    found: set[tuple[tuple[str, str], str]] = set()
    for other, lines in op_lines.items():
        other_name, _, other_shapes = other.partition(" ")
        if other_name != name:
            continue
        theirs = json.loads(other_shapes or "[]")
        shorter = min(len(mine), len(theirs))
        if shorter >= 2 and mine[:shorter] == theirs[:shorter]:
            found |= lines
    return found


def label_of(before: RunSide, after: RunSide, key: tuple[str, str]) -> str:
    """The line as `file:line` in each run (`a.py:12 -> a.py:14` when an edit moved it)."""
    old = before.lines.get(key, (0.0, 0.0, 0.0, ""))[3]
    new = after.lines.get(key, (0.0, 0.0, 0.0, ""))[3]
    if old and new and old != new:
        return f"{old} -> {new}"
    return new or old


def _changes(before: dict[str, tuple[float, float]], after: dict[str, tuple[float, float]]) -> list[Change]:
    out = [
        Change(
            key,
            before.get(key, (0.0, 0.0))[0],
            after.get(key, (0.0, 0.0))[0],
            before.get(key, (0.0, 0.0))[1],
            after.get(key, (0.0, 0.0))[1],
        )
        for key in before.keys() | after.keys()
    ]
    out.sort(key=lambda c: -abs(c.delta_ns))
    return out


def _step_windows(ctx: Context, kernel_end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each steady step's window: from when the one before it was done (the first: its start; never before
    its own start, as left-out steps may lie between) to when it was done (the host left it and its
    kernels ended)."""
    if not ctx.step_count:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty
    index = ctx.step_index(ctx.kernel_launch_ns)
    done = ctx.step_end.astype(np.int64).copy()
    inside = index >= 0
    np.maximum.at(done, index[inside], kernel_end[inside])
    done = np.maximum.accumulate(done)
    previous = np.concatenate([[int(ctx.step_start[0])], done[:-1]])
    return np.maximum(previous, ctx.step_start), done


def _breakdown(profile: Profile, lo: np.ndarray, hi: np.ndarray) -> dict[str, float]:
    """The steps' windows split as analyses.temporal splits a step: compute kernels, then NCCL kernels,
    then copies, then idle; per step, averaged."""
    names = ("compute", "communication", "transfers", "idle")
    if not len(lo):
        return dict.fromkeys(names, 0.0)
    k, t = profile.table("kernels"), profile.table("transfers")
    comm = np.array(["nccl" in n.lower() for n in k.column("name").to_pylist()], dtype=bool)
    ks, ke = k.column("start_ns").to_numpy(), k.column("end_ns").to_numpy()
    ts, te = t.column("start_ns").to_numpy(), t.column("end_ns").to_numpy()
    compute = float(coverage(ks[~comm], ke[~comm], lo, hi).sum())
    kernels = float(coverage(ks, ke, lo, hi).sum())
    everything = float(coverage(np.concatenate([ks, ts]), np.concatenate([ke, te]), lo, hi).sum())
    total = float((hi - lo).sum())
    parts = (compute, kernels - compute, everything - kernels, total - everything)
    return {name: part / len(lo) for name, part in zip(names, parts, strict=True)}


def _busy_share(ctx: Context, lo: np.ndarray, hi: np.ndarray) -> float:
    """Of the steps' windows, the share the GPU was busy (kernels and copies, overlaps once)."""
    total = float((hi - lo).sum())
    if not total:
        return 0.0
    starts, ends = ctx.gpu_intervals
    return float(coverage(starts, ends, lo, hi).sum()) / total


def _line_keys(profile: Profile) -> list[tuple[tuple[str, str], str]]:
    """Per frame: the key that matches it across runs and its label (`file:line`)."""
    frames = profile.table("frames")
    return [
        _line_key(str(file or ""), int(line or 0))
        for file, line in zip(frames.column("file").to_pylist(), frames.column("line").to_pylist(), strict=True)
    ]


def _line_key(file: str, line: int) -> tuple[tuple[str, str], str]:
    """(file name, the line's text, or its number where the source cannot be read), and `file:line`."""
    text = linecache.getline(file, line).strip() if file and os.path.isfile(file) else ""
    return (os.path.basename(file), text or f"line {line}"), f"{file}:{line}"


def _fused_lines(profile: Profile) -> dict[str, list[tuple[tuple[str, str], str]]]:
    """Generated kernel -> the keys and labels of the lines of the aten ops it fuses."""
    out: dict[str, list[tuple[tuple[str, str], str]]] = {}
    for row in profile.table("compiled_kernels").to_pylist():
        places = []
        for place in sorted({x for x in (row["lines"] or "").split(";") if x}):
            file, _, number = place.rpartition(":")
            if file and number.isdigit():
                places.append(_line_key(file, int(number)))
        if places:
            out[str(row["kernel"])] = places
    return out


def _step_change(before: list[int], after: list[int]) -> StepChange:
    b = np.asarray(before, dtype=np.float64)
    a = np.asarray(after, dtype=np.float64)
    before_ns = float(np.median(b)) if len(b) else 0.0
    after_ns = float(np.median(a)) if len(a) else 0.0
    if len(b) < 2 or len(a) < 2:
        return StepChange(before_ns, after_ns, float("nan"), False, "not tested: fewer than two steps in a run")
    observed = abs(after_ns - before_ns)
    pooled = np.concatenate([b, a])
    rng = np.random.default_rng(0)
    order = np.argsort(rng.random((PERMUTATIONS, len(pooled))), axis=1)
    shuffled = pooled[order]
    differences = np.abs(np.median(shuffled[:, len(b) :], axis=1) - np.median(shuffled[:, : len(b)], axis=1))
    p = float((np.count_nonzero(differences >= observed - 1e-9) + 1) / (PERMUTATIONS + 1))
    test = f"permutation test on the medians ({len(b)} vs {len(a)} steady steps, {PERMUTATIONS} relabelings)"
    apart = bool(a.max() < b.min() or a.min() > b.max())
    if apart:
        test += "; the two runs' steps do not overlap"
    return StepChange(before_ns, after_ns, p, p < SIGNIFICANT or apart, test)
