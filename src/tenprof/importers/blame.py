"""Blame shift: move each dependency stall from the instruction that waited to the instruction it
waited for.

A warp is sampled at the instruction it cannot issue. For a scoreboard stall that is the first
instruction reading a register whose producer has not delivered yet, so the samples say little about
*which* load was slow. The rule here:

1. Only dependency stalls move: `long_scoreboard` (waiting on global, local or texture memory) and
   `short_scoreboard` (shared memory, special functions, shuffles, constant loads through the MIO unit).
   Every other reason (barrier, branch_resolving, not_selected, the throttles, wait, ...) is about the
   instruction itself and stays on it.
2. The candidate producers are the last writers of the registers the stalled instruction reads, found
   by walking the control-flow graph backwards from it, along every path (loops included). A predicated
   writer may not have executed, so the walk goes on past it; an unpredicated writer ends that path for
   that register.
3. Only candidates whose memory space or unit matches the stall reason keep blame (a long-scoreboard
   stall cannot be waiting on an add).
4. The sample does not say which scoreboard was pending. With several possible producers (an if/else
   that loads in both arms, a loop-carried load and one before the loop, an add of two loaded values)
   the samples are split in proportion to a per-instruction weight when the caller has one for every
   candidate: for the stalls pass, the L2 sectors each load requested (ncu's per-PC source counters),
   since a warp waiting on two loads waits for the one that needs the most memory transactions (a
   strided load of 32 sectors per request against a coalesced one of 4). Without weights, or when a
   candidate has none, the split is equal, the assumption that claims nothing.
5. A scoreboard also guards the *source* registers of an in-flight load: an instruction that overwrites
   a register a pending load still reads as its address waits for that load (write-after-read). When no
   producer matches, the last matching-kind instructions that read a register the stalled instruction
   writes are the candidates.
6. With no matching candidate the samples stay where they were, marked unresolved.

Every sample ends on exactly one instruction (or is split in parts that add up to it): totals are
conserved, which `tests/unit/test_sass_blame.py` checks on random programs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from tenprof.importers.sass import Instruction, Program

DEPENDENCY_SPACES = {
    "long_scoreboard": frozenset({"global", "local", "texture"}),
    "short_scoreboard": frozenset({"shared", "special", "constant"}),
}


@dataclass(frozen=True)
class Blamed:
    stalled_pc: int
    blamed_pc: int
    reason: str
    samples: float
    shifted: bool  # moved to a producer
    unresolved: bool = False  # a dependency stall with no matching producer found


def producers(program: Program, index: int, registers: frozenset[str]) -> set[int]:
    """Instruction indexes that may have last written any of `registers` before `index` executes."""
    return _last_touching(program, index, registers, lambda i: i.writes)


def readers(program: Program, index: int, registers: frozenset[str]) -> set[int]:
    """Instruction indexes that may have last read any of `registers` before `index` executes."""
    return _last_touching(program, index, registers, lambda i: i.reads)


def _last_touching(
    program: Program, index: int, registers: frozenset[str], touched: Callable[[Instruction], frozenset[str]]
) -> set[int]:
    ins = program.instructions
    found: set[int] = set()
    work = [(program.block_of[index], index - 1, registers)]
    seen: set[tuple[int, frozenset[str]]] = set()
    while work:
        block, position, wanted = work.pop()
        first = program.blocks[block][0]
        remaining = set(wanted)
        for i in range(position, first - 1, -1):
            hit = touched(ins[i]) & remaining
            if hit:
                found.add(i)
                if not ins[i].guard:
                    remaining -= hit
                if not remaining:
                    break
        if remaining:
            key_regs = frozenset(remaining)
            for pred in program.predecessors[block]:
                key = (pred, key_regs)
                if key not in seen:
                    seen.add(key)
                    work.append((pred, program.blocks[pred][1], key_regs))
    return found


def blame(
    program: Program, samples: list[tuple[int, str, float]], weights: Mapping[int, float] | None = None
) -> list[Blamed]:
    """(pc, stall reason, samples) -> where each sample's blame lands (see the module docstring).
    `weights`: pc -> weight for splitting among several candidate producers (rule 4)."""
    out: list[Blamed] = []
    cache: dict[tuple[int, str], list[int]] = {}
    for pc, reason, count in samples:
        if count <= 0:
            continue
        spaces = DEPENDENCY_SPACES.get(reason)
        index = program.index_of_pc(pc)
        if spaces is None or index < 0:
            out.append(Blamed(pc, pc, reason, float(count), shifted=False))
            continue
        key = (index, reason)
        if key not in cache:
            stalled = program.instructions[index]
            cands = producers(program, index, stalled.reads) if stalled.reads else set()
            matching = sorted(c for c in cands if program.instructions[c].space in spaces)
            if not matching and stalled.writes:
                war = readers(program, index, stalled.writes)
                matching = sorted(c for c in war if program.instructions[c].space in spaces)
            cache[key] = matching
        targets = cache[key]
        if not targets:
            out.append(Blamed(pc, pc, reason, float(count), shifted=False, unresolved=True))
            continue
        pcs = [program.instructions[t].pc for t in targets]
        given = [weights.get(p, 0.0) for p in pcs] if weights else []
        if len(pcs) > 1 and given and all(w > 0 for w in given):
            total = sum(given)
            out.extend(
                Blamed(pc, p, reason, float(count) * w / total, shifted=True) for p, w in zip(pcs, given, strict=True)
            )
        else:
            out.extend(Blamed(pc, p, reason, float(count) / len(pcs), shifted=True) for p in pcs)
    return out
