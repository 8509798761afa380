"""Where warps waited, after the blame shift: per sampled kernel, the instructions that took the most
blame, each with its stall-reason mix and the share of the kernel's samples it holds.

A torch.compile generated kernel ran in no aten op: it is placed at the aten ops it fuses and their
source lines (`compiled_kernels`, or its name when the profile has no timeline), and each hot
instruction also gets the text of its line in the generated kernel file (GeneratedSource)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from tenprof.store.profile import Profile
from tenprof.store.schema import Pass

MEMORY_REASONS = ("long_scoreboard", "short_scoreboard")


@dataclass(frozen=True)
class HotInstruction:
    pc: int
    text: str
    space: str
    samples: float  # blame that landed here, all reasons
    share: float  # of the kernel's samples
    reasons: dict[str, float]
    shifted_in: float  # of which moved here from the instructions that waited for it
    source: str = ""  # file:line of the instruction when the kernel has line info (Triton)
    source_text: str = ""  # that line of the generated code, when the profile keeps it (torch.compile)


@dataclass(frozen=True)
class KernelStalls:
    replay_id: int
    name: str
    where: str  # op or scope
    samples: float
    memory_share: float  # long + short scoreboard samples / all samples
    hot: list[HotInstruction] = field(default_factory=list)


@dataclass(frozen=True)
class CompiledPlace:
    aten_ops: str  # comma-separated
    lines: tuple[str, ...]  # file:line of those ops


def compiled_places(profile: Profile) -> dict[str, CompiledPlace]:
    """Generated kernel name -> the aten ops it fuses and their lines, from the timeline's
    compiled_kernels; the names of sampled Triton kernels fill in when the profile has no timeline."""
    from tenprof.core.inductor import from_kernel_name

    out = {
        r["kernel"]: CompiledPlace(r["aten_ops"], tuple(x for x in (r["lines"] or "").split(";") if x))
        for r in profile.table("compiled_kernels").to_pylist()
    }
    for name in profile.table("stall_kernels").column("name").to_pylist():
        guess = from_kernel_name(name) if name not in out else None
        if guess is not None:
            out[name] = CompiledPlace(",".join(guess.aten_ops), ())
    return out


def _where(kernel: dict[str, object], places: dict[str, CompiledPlace]) -> str:
    if kernel["op"]:
        return str(kernel["op"])
    if kernel["scope"]:
        return f"scope {kernel['scope']}"
    place = places.get(str(kernel["name"]))
    return f"compiled: {place.aten_ops}" if place is not None else ""


def kernel_stalls(profile: Profile, limit: int = 5) -> list[KernelStalls]:
    from tenprof.analyses.kernels.generated_source import GeneratedSource

    kernels = profile.table("stall_kernels").to_pylist()
    if not kernels:
        return []
    places = compiled_places(profile)
    generated = GeneratedSource(profile)
    names = {k["replay_id"]: str(k["name"]) for k in kernels}
    text: dict[tuple[int, int], tuple[str, str]] = {}
    source: dict[tuple[int, int], str] = {}
    source_text: dict[tuple[int, int], str] = {}
    for r in profile.table("sass").to_pylist():
        text[(r["replay_id"], r["pc"])] = (r["text"], r["space"])
        if r["file"]:
            source[(r["replay_id"], r["pc"])] = f"{r['file']}:{r['line']}"
            source_text[(r["replay_id"], r["pc"])] = generated.line(r["file"], r["line"], names[r["replay_id"]])
    by_kernel: dict[int, dict[int, dict[str, float]]] = defaultdict(lambda: defaultdict(lambda: defaultdict(float)))
    moved: dict[tuple[int, int], float] = defaultdict(float)
    for r in profile.table("blame").to_pylist():
        by_kernel[r["replay_id"]][r["blamed_pc"]][r["reason"]] += r["samples"]
        if r["shifted"]:
            moved[(r["replay_id"], r["blamed_pc"])] += r["samples"]
    out = []
    for k in sorted(kernels, key=lambda k: -k["samples"]):
        rid, total = k["replay_id"], k["samples"] or 1.0
        per_pc = by_kernel.get(rid, {})
        memory = sum(v for reasons in per_pc.values() for r, v in reasons.items() if r in MEMORY_REASONS)
        hot = sorted(per_pc.items(), key=lambda kv: -sum(kv[1].values()))[:limit]
        out.append(
            KernelStalls(
                replay_id=rid,
                name=k["name"],
                where=_where(k, places),
                samples=k["samples"],
                memory_share=memory / total,
                hot=[
                    HotInstruction(
                        pc=pc,
                        text=text.get((rid, pc), ("", ""))[0],
                        space=text.get((rid, pc), ("", ""))[1],
                        samples=sum(reasons.values()),
                        share=sum(reasons.values()) / total,
                        reasons=dict(sorted(reasons.items(), key=lambda kv: -kv[1])),
                        shifted_in=moved.get((rid, pc), 0.0),
                        source=source.get((rid, pc), ""),
                        source_text=source_text.get((rid, pc), ""),
                    )
                    for pc, reasons in hot
                ],
            )
        )
    return out


@dataclass(frozen=True)
class StallRollup:
    """Stall samples summed per op (or scope), each sampled kernel weighted by how many op instances it
    stands for, and, with a timeline in the profile, spread over the Python lines that ran those kernels
    in proportion to their kernel time there."""

    op: str
    line: str
    weighted_samples: float
    memory_samples: float  # long + short scoreboard, after the blame shift
    top_load: str  # the instruction that took the most memory blame


def stall_rollup(profile: Profile) -> list[StallRollup]:
    kernels = profile.table("stall_kernels").to_pylist()
    if not kernels:
        return []
    text = {(r["replay_id"], r["pc"]): r["text"] for r in profile.table("sass").to_pylist()}
    memory: dict[int, float] = defaultdict(float)
    loads: dict[int, dict[int, float]] = defaultdict(lambda: defaultdict(float))
    for r in profile.table("blame").to_pylist():
        if r["reason"] in MEMORY_REASONS:
            memory[r["replay_id"]] += r["samples"]
            loads[r["replay_id"]][r["blamed_pc"]] += r["samples"]
    lines = _lines_by_op_and_kernel(profile)
    places = compiled_places(profile)
    launches = _launches_by_name(profile)
    rows: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0.0, 0.0])
    top: dict[tuple[str, str], tuple[float, str]] = {}
    for k in kernels:
        where = _where(k, places) or "(no op)"
        spread = lines.get((k["op"], k["name"])) or {"": 1.0}
        weight = float(k.get("instances", 1) or 1)
        place = places.get(k["name"]) if not (k["op"] or k["scope"]) else None
        if place is not None:  # a generated kernel: its fused ops' lines, each of its launches counted
            spread = {line: 1.0 / len(place.lines) for line in place.lines} if place.lines else {"": 1.0}
            weight = float(launches.get(k["name"], 1))
        best_pc, best = max(loads[k["replay_id"]].items(), key=lambda kv: kv[1], default=(-1, 0.0))
        for line, share in spread.items():
            key = (where, line)
            rows[key][0] += k["samples"] * weight * share
            rows[key][1] += memory[k["replay_id"]] * weight * share
            if best * weight * share > top.get(key, (0.0, ""))[0]:
                top[key] = (best * weight * share, text.get((k["replay_id"], best_pc), ""))
    out = [StallRollup(op, line, v[0], v[1], top.get((op, line), (0.0, ""))[1]) for (op, line), v in rows.items()]
    out.sort(key=lambda r: -r.memory_samples)
    return out


def _launches_by_name(profile: Profile) -> dict[str, int]:
    """Kernel name -> its launches in the timeline (how many times a sampled generated kernel ran),
    leaving out autotuning's benchmark launches, which ran other configs of the kernel."""
    if not profile.has_pass(Pass.TIMELINE):
        return {}
    tuning = profile.column("ops", "is_autotuning")
    kernels = profile.table("kernels")
    op = kernels.column("op_id").to_numpy()
    benchmark = (op >= 0) & tuning[np.clip(op, 0, None)] if len(tuning) else np.zeros(len(op), dtype=bool)
    counts: dict[str, int] = defaultdict(int)
    for name, skip in zip(kernels.column("name").to_pylist(), benchmark.tolist(), strict=True):
        if not skip:
            counts[name] += 1
    return dict(counts)


def _lines_by_op_and_kernel(profile: Profile) -> dict[tuple[str, str], dict[str, float]]:
    """(aten op, kernel function name) -> {user line: share of that kernel's timeline time}.

    A kernel counts for its own op and every op enclosing it: the stalls pass names the op its dispatch
    mode saw (aten::randn), the timeline the innermost op that launched (aten::normal_)."""
    if not profile.has_pass(Pass.TIMELINE):
        return {}
    from tenprof.analyses.timeline.summary import OpLines
    from tenprof.core.kernel_names import base_name

    k = profile.table("kernels")
    ops = profile.table("ops")
    op_name = ops.column("name").to_pylist()
    parent = ops.column("parent_op_id").to_pylist()
    line_of = OpLines(profile)
    time: dict[tuple[str, str], dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for name, op, duration in zip(
        k.column("name").to_pylist(), k.column("op_id").to_pylist(), k.column("duration_ns").to_pylist(), strict=True
    ):
        if op is None or op < 0:
            continue
        line = line_of(op)
        kernel = base_name(name)
        while op is not None and op >= 0:
            time[(op_name[op], kernel)][line] += float(duration)
            op = parent[op]
    return {key: {line: t / sum(v.values()) for line, t in v.items()} for key, v in time.items() if sum(v.values()) > 0}
