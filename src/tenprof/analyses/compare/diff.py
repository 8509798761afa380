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
The step change is tested against each run's step-to-step spread by the one rule of
`analyses.compare.significance`: a rank-sum test, beyond noise when p < 0.05 (four steps a side that do not
overlap: p = 0.029; two a side can never be, and the report says there are too few steps to tell).

The per-line rows are ranked by the larger of their GPU and CPU deltas. They add up to the step change
on one basis, with a remainder that is shown: by GPU time (the lines' kernel time; kernels with no line
of the user's; the rest is GPU idle and kernels overlapping) or by CPU time (the lines' top-level ops'
CPU time, which holds the host's waits on the GPU; ops with no line of the user's; the rest is host time
outside ops), whichever leaves the smaller remainder (a GPU-bound change is its kernels', a host-bound
one, a sync added or removed, its ops' CPU time); CPU time without GPU work; the other's remainder is
shown too. Findings are compared by check id. In the op table, an op
only one run has and the same op on the same inputs only the other has (compiled code's `out=` call)
are one row.
"""

from __future__ import annotations

import functools
import json
from collections import defaultdict
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from tenprof.analyses.compare.line_keys import LineKey, LineKeys, Place
from tenprof.analyses.compare.significance import can_tell, rank_sum_test, smallest_p
from tenprof.analyses.findings import Thresholds, find_all
from tenprof.analyses.findings.context import Context
from tenprof.analyses.kernels.compiled import in_compiled_region
from tenprof.core.intervals import coverage, take
from tenprof.store.profile import Profile

Signature = tuple[str, str]  # an op: its name and its input shapes as JSON


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
    lines: dict[LineKey, tuple[float, float, float, str]]  # key -> gpu, cpu, launches, label
    ops: dict[str, tuple[float, float]]  # op signature -> gpu time, launches
    kernel_names: dict[str, tuple[float, float]]  # kernel -> gpu time, launches
    no_line_kernel_ns: float
    findings: dict[str, str] = field(default_factory=dict)  # check id -> title
    # ops run inside compiled regions, per signature: gpu, launches, and the line they ran at (the call)
    region_ops: dict[Signature, tuple[float, float, LineKey, str]] = field(default_factory=dict)
    op_lines: dict[Signature, set[Place]] = field(default_factory=dict)  # signature -> lines
    no_line_cpu_ns: float = 0.0  # CPU time per step of top-level ops with no line of the user's
    op_signatures: dict[str, Signature] = field(default_factory=dict)  # `ops` key -> name, input shapes


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
    basis: str  # "GPU" or "CPU": which of the lines' times the step change is split into
    no_line_delta_ns: float  # GPU basis: kernels with no line of the user's; CPU: top-level ops with none
    remainder_ns: float  # step change less every line's delta and the no-line delta, on the basis
    other_remainder_ns: float | None  # the same on the other basis (None: no GPU work in either run)
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
    line_keys, fused = _fused_lines(profile)
    keys = [line_keys.of_frame(f) for f in range(len(line_keys.frame_places))]
    in_region = in_compiled_region(profile)
    region: dict[Signature, list[Any]] = {}
    op_lines: dict[Signature, set[Place]] = defaultdict(set)
    user = ctx.op_user_frame
    line_gpu: dict[LineKey, float] = defaultdict(float)
    line_launches: dict[LineKey, float] = defaultdict(float)
    labels: dict[LineKey, str] = {}
    op_time: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    op_signatures: dict[str, Signature] = {}
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
        shown = f"{op_names[op]} {shapes[op] or ''}".strip() if op >= 0 else "(no op)"
        if op >= 0 and shown not in op_signatures:
            op_signatures[shown] = _op_signature(op_names[op], shapes[op])
        op_time[shown][0] += ns
        op_time[shown][1] += 1
    by_kernel: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for ns, kernel in zip(duration.tolist(), kernel_name, strict=True):
        by_kernel[str(kernel)][0] += ns
        by_kernel[str(kernel)][1] += 1
    # CPU time of top-level ops, per line
    top = ops.column("depth").to_numpy() == 0
    starts = ops.column("start_ns").to_numpy()
    cpu = ops.column("duration_ns").to_numpy().astype(np.float64)
    chosen = top & ctx.in_steps(starts)
    line_cpu: dict[LineKey, float] = defaultdict(float)
    no_line_cpu = 0.0
    for op in np.flatnonzero(chosen).tolist():
        frame = int(user[op])
        if frame < 0:
            no_line_cpu += cpu[op]
        else:
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
        no_line_cpu_ns=no_line_cpu / steps,
        op_signatures=op_signatures,
    )


def diff(before: RunSide, after: RunSide) -> Diff:
    before, after = _placed(before, after), _placed(after, before)
    before, after = _by_number(before, after), _by_number(after, before)
    step = _step_change(before.step_ns, after.step_ns)
    none = (0.0, 0.0, 0.0, "")
    lines = []
    for key in before.lines.keys() | after.lines.keys():
        old, new = before.lines.get(key, none), after.lines.get(key, none)  # gpu, cpu, launches, label
        lines.append(Change(label_of(before, after, key), old[0], new[0], old[2], new[2], old[1], new[1]))
    lines.sort(key=lambda c: -max(abs(c.delta_ns), abs(c.cpu_delta_ns)))
    splits = {
        "GPU": _split(step.delta_ns, [c.delta_ns for c in lines], after.no_line_kernel_ns - before.no_line_kernel_ns),
        "CPU": _split(step.delta_ns, [c.cpu_delta_ns for c in lines], after.no_line_cpu_ns - before.no_line_cpu_ns),
    }
    on_gpu = bool(before.kernels or after.kernels)
    basis = "GPU" if on_gpu and abs(splits["GPU"][1]) <= abs(splits["CPU"][1]) else "CPU"
    no_line, remainder = splits[basis]
    return Diff(
        before=before,
        after=after,
        step=step,
        lines=lines,
        basis=basis,
        no_line_delta_ns=no_line,
        remainder_ns=remainder,
        other_remainder_ns=splits["CPU" if basis == "GPU" else "GPU"][1] if on_gpu else None,
        ops=_changes(*_paired_variants(before, after)),
        kernels=_changes(before.kernel_names, after.kernel_names),
        appeared=[f"{i}: {after.findings[i]}" for i in sorted(after.findings.keys() - before.findings.keys())],
        vanished=[f"{i}: {before.findings[i]}" for i in sorted(before.findings.keys() - after.findings.keys())],
    )


def _split(step_delta: float, line_deltas: list[float], no_line: float) -> tuple[float, float]:
    """The step change split into the lines' changes, what has no line, and a remainder: (no line,
    remainder)."""
    return no_line, step_delta - sum(line_deltas) - no_line


def _paired_variants(before: RunSide, after: RunSide) -> tuple[dict[str, tuple[float, float]], ...]:
    """The two runs' ops, an op only one run has merged into the one op only the other has that is the
    same op on the same inputs (an eager `aten::mm` and the compiled code's `out=` call of it), under
    the shorter name, so that the op table does not show it as gone and new."""
    gone = [k for k in before.ops.keys() - after.ops.keys() if k in before.op_signatures]
    new = [k for k in after.ops.keys() - before.ops.keys() if k in after.op_signatures]
    old_ops, new_ops = dict(before.ops), dict(after.ops)
    for key in gone:
        matches = [n for n in new if _same_op(before.op_signatures[key], after.op_signatures[n])]
        if len(matches) != 1 or matches[0] not in new_ops:
            continue
        shown = min(key, matches[0], key=len)
        old_ops[shown] = old_ops.pop(key)
        new_ops[shown] = new_ops.pop(matches[0])
    return old_ops, new_ops


def _by_number(side: RunSide, other: RunSide) -> RunSide:
    """`side` with each line known only by its number (no text: an older profile whose file changed
    since) keyed as `other`'s line at the same file name and number, where `other` knows that line by
    its text and `side` does not already have that key."""
    numbered = [key for key in side.lines if key[1] == f"line {_number(side.lines[key][3])}"]
    if not numbered:
        return side
    others = {(key[0], _number(value[3])): key for key, value in other.lines.items()}
    lines = dict(side.lines)
    for key in numbered:
        match = others.get((key[0], _number(side.lines[key][3])))
        if match is not None and match != key and match not in lines:
            lines[match] = lines.pop(key)
    return replace(side, lines=lines)


def _number(label: str) -> int:
    """The line number of a `file:line` label (0 when it has none)."""
    number = label.rpartition(":")[2]
    return int(number) if number.isdigit() else 0


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


@functools.lru_cache(maxsize=8192)  # called per kernel launch: a run repeats a few thousand signatures
def _op_signature(name: str, shapes: str | None) -> Signature:
    """An op by name and its input shapes (as JSON; `[]` where unreadable)."""
    try:
        parsed = json.loads(shapes or "[]")
    except ValueError:
        parsed = []
    return name, json.dumps(parsed if isinstance(parsed, list) else [])


def _same_op(one: Signature, other: Signature) -> bool:
    """The same op on the same inputs: the same name, and one's input shapes begin with all of the
    other's, at least two (compiled code calls the `out=` variants, one tensor more)."""
    if one[0] != other[0]:
        return False
    mine, theirs = json.loads(one[1]), json.loads(other[1])
    shorter = min(len(mine), len(theirs))
    return shorter >= 2 and mine[:shorter] == theirs[:shorter]


def _same_op_lines(signature: Signature, op_lines: dict[Signature, set[Place]]) -> set[Place]:
    """The lines of the ops in `op_lines` that are `signature`'s op."""
    found: set[Place] = set()
    for other, lines in op_lines.items():
        if _same_op(signature, other):
            found |= lines
    return found


def label_of(before: RunSide, after: RunSide, key: LineKey) -> str:
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
    """The steps' windows split as analyses.timeline.temporal splits a step: compute kernels, then NCCL kernels,
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


def _fused_lines(profile: Profile) -> tuple[LineKeys, dict[str, list[Place]]]:
    """The profile's line keys, and per generated kernel the keys and labels of the lines of the aten ops
    it fuses."""
    places: dict[str, list[tuple[str, int]]] = {}
    for row in profile.table("compiled_kernels").to_pylist():
        found = []
        for place in sorted({x for x in (row["lines"] or "").split(";") if x}):
            file, _, number = place.rpartition(":")
            if file and number.isdigit():
                found.append((file, int(number)))
        if found:
            places[str(row["kernel"])] = found
    keys = LineKeys(profile, (p for found in places.values() for p in found))
    return keys, {kernel: [keys.of(*p) for p in found] for kernel, found in places.items()}


def _step_change(before: list[int], after: list[int]) -> StepChange:
    b = np.asarray(before, dtype=np.float64)
    a = np.asarray(after, dtype=np.float64)
    before_ns = float(np.median(b)) if len(b) else 0.0
    after_ns = float(np.median(a)) if len(a) else 0.0
    if len(b) < 2 or len(a) < 2:
        return StepChange(before_ns, after_ns, float("nan"), False, "not tested: fewer than two steps in a run")
    tested = rank_sum_test(b, a)
    test = tested.describe((len(b), len(a)))
    if not can_tell(len(b), len(a)):
        test += f"; too few steps to tell (the smallest p they can give is {smallest_p(len(b), len(a)):.3f})"
    return StepChange(before_ns, after_ns, tested.p_value, tested.beyond_noise, test)
