"""Where warps waited, after the blame shift: per sampled kernel, the instructions that took the most
blame, each with its stall-reason mix and the share of the kernel's samples it holds."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from tenprof.store.profile import Profile

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


@dataclass(frozen=True)
class KernelStalls:
    replay_id: int
    name: str
    where: str  # op or scope
    samples: float
    memory_share: float  # long + short scoreboard samples / all samples
    hot: list[HotInstruction] = field(default_factory=list)


def kernel_stalls(profile: Profile, limit: int = 5) -> list[KernelStalls]:
    kernels = profile.table("stall_kernels").to_pylist()
    if not kernels:
        return []
    text: dict[tuple[int, int], tuple[str, str]] = {
        (r["replay_id"], r["pc"]): (r["text"], r["space"]) for r in profile.table("sass").to_pylist()
    }
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
                where=k["op"] or (f"scope {k['scope']}" if k["scope"] else ""),
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
                    )
                    for pc, reasons in hot
                ],
            )
        )
    return out
