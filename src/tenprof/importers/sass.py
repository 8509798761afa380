"""A small model of SASS (NVIDIA GPU assembly) for blame shifting: instructions and a control-flow graph.

Input: a kernel's instructions as (pc, text) pairs in address order, the text as Nsight Compute or
nvdisasm prints it, e.g. `@!P0 LDG.E.64 R4, desc[UR6][R2.64+0x10]`. Each instruction is parsed into:
- guard predicate (`@P0`, `@!P0`), opcode and modifiers (`LDG`, `E.64`);
- registers written and read. General registers `R<n>` (a `.64` operand or a `.64`/`.128` load covers
  2 or 4 consecutive registers), uniform `UR<n>`, predicates `P<n>`/`UP<n>`; `RZ`, `URZ`, `PT` are
  constants. The first operand is the destination, except for stores, branches, barriers and the like,
  which write nothing; predicate-setting compares (`ISETP`, `FSETP`, ...) write their first one or two
  predicate operands;
- the memory space or unit of variable-latency producers: global, local, shared, texture, constant,
  special (MUFU), or none.
Basic blocks split after branches / exits and before branch targets; targets are read from `BRA`-family
operands given as addresses (absolute, or relative to the first instruction when smaller than it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_GUARD = re.compile(r"^@(!?U?P[0-9T]+)\s+")
_REG = re.compile(r"(?<![\w.])(U?R)(\d+|Z)(\.64|\.128)?")
_PRED = re.compile(r"(?<![\w.])!?(U?P)(\d+|T)\b")
_HEX = re.compile(r"0x([0-9a-fA-F]+)")

# Opcodes (without modifiers) by the unit or memory space whose result arrives after a variable delay.
MEMORY_SPACE = {
    "LDG": "global",
    "LD": "global",  # generic addressing: almost always global memory in practice
    "ATOMG": "global",
    "ATOM": "global",
    "RED": "global",
    "LDL": "local",
    "LDS": "shared",
    "LDSM": "shared",
    "ATOMS": "shared",
    "SHFL": "shared",  # goes through the same unit as shared memory (short scoreboard)
    "TEX": "texture",
    "TLD": "texture",
    "TLD4": "texture",
    "TXQ": "texture",
    "LDC": "constant",
    "MUFU": "special",
    "S2R": "special",
}
WRITES_NOTHING = {
    "STG", "ST", "STS", "STL", "RED", "BRA", "BRX", "JMP", "JMX", "CALL", "RET", "EXIT", "BAR", "BSSY", "BSYNC",
    "WARPSYNC", "NOP", "MEMBAR", "ERRBAR", "DEPBAR", "YIELD", "BPT", "KILL", "CCTL", "FENCE", "ARRIVES", "UTMASTG",
}  # fmt: skip
BRANCHES = {"BRA", "BRX", "JMP", "JMX", "CALL"}
ENDS_BLOCK = BRANCHES | {"EXIT", "RET", "KILL"}
SETS_PREDICATE = ("SETP", "PLOP3", "R2P", "VOTE")


@dataclass
class Instruction:
    index: int
    pc: int
    text: str
    opcode: str  # without modifiers
    modifiers: tuple[str, ...]
    guard: str  # "" when not predicated
    writes: frozenset[str]
    reads: frozenset[str]
    space: str  # memory space / unit of a variable-latency result, "" for fixed-latency ones
    targets: tuple[int, ...] = ()  # branch targets (pcs)

    @property
    def is_load(self) -> bool:
        return self.space != "" and bool(self.writes)


@dataclass
class Program:
    instructions: list[Instruction]
    block_of: list[int] = field(default_factory=list)  # instruction index -> block id
    blocks: list[tuple[int, int]] = field(default_factory=list)  # [first, last] instruction index
    predecessors: list[list[int]] = field(default_factory=list)

    def index_of_pc(self, pc: int) -> int:
        return self._by_pc.get(pc, -1)

    def __post_init__(self) -> None:
        self._by_pc = {ins.pc: ins.index for ins in self.instructions}


def _registers(operand_text: str, wide_dest: int = 1) -> set[str]:
    regs: set[str] = set()
    for kind, number, width in _REG.findall(operand_text):
        if number == "Z":
            continue
        count = 2 if width == ".64" else 4 if width == ".128" else wide_dest
        regs.update(f"{kind}{int(number) + k}" for k in range(count))
    for kind, number in _PRED.findall(operand_text):
        if number != "T":
            regs.add(f"{kind}{number}")
    return regs


def _split_operands(text: str) -> list[str]:
    """Operands separated by top-level commas (commas inside [...] or {...} do not split)."""
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for ch in text:
        if ch in "[{(":
            depth += 1
        elif ch in "]})":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(current).strip())
            current = []
        else:
            current.append(ch)
    if "".join(current).strip():
        parts.append("".join(current).strip())
    return parts


def parse_instruction(index: int, pc: int, text: str) -> Instruction:
    body = text.strip().rstrip(";").strip()
    guard = ""
    m = _GUARD.match(body)
    if m:
        guard = m.group(1)
        body = body[m.end() :]
    mnemonic, _, rest = body.partition(" ")
    opcode, *mods = mnemonic.split(".")
    operands = _split_operands(rest)
    reads: set[str] = set()
    writes: set[str] = set()
    if guard:
        reads |= _registers(guard.lstrip("!"))
    width = 1
    if "64" in mods or "WIDE" in mods:
        width = 2
    if "128" in mods:
        width = 4
    if opcode in WRITES_NOTHING or not operands:
        for op in operands:
            reads |= _registers(op)
    elif any(opcode.endswith(s) for s in SETS_PREDICATE):
        # e.g. ISETP.GE.AND P0, PT, R1, R2, PT: leading predicate operands are written
        lead = 0
        while lead < len(operands) and _PRED.fullmatch(operands[lead].lstrip("!")):
            writes |= _registers(operands[lead])
            lead += 1
        for op in operands[lead:]:
            reads |= _registers(op)
    else:
        writes |= _registers(operands[0], width)
        for op in operands[1:]:
            reads |= _registers(op)
        if "[" in operands[0]:  # a store-like form with the address first writes nothing
            reads |= writes
            writes = set()
    targets: tuple[int, ...] = ()
    if opcode in BRANCHES:
        targets = tuple(int(h, 16) for h in _HEX.findall(rest))
    space = MEMORY_SPACE.get(opcode, "")
    return Instruction(
        index=index,
        pc=pc,
        text=text.strip(),
        opcode=opcode,
        modifiers=tuple(mods),
        guard=guard,
        writes=frozenset(writes),
        reads=frozenset(reads),
        space=space if writes else "",
        targets=targets,
    )


def parse_program(listing: list[tuple[int, str]]) -> Program:
    """Instructions in address order, basic blocks and predecessor lists."""
    listing = sorted(listing)
    instructions = [parse_instruction(i, pc, text) for i, (pc, text) in enumerate(listing)]
    program = Program(instructions)
    if not instructions:
        return program
    base = instructions[0].pc
    leaders = {0}
    resolved: dict[int, list[int]] = {}
    for ins in instructions:
        if ins.opcode in ENDS_BLOCK and ins.index + 1 < len(instructions):
            leaders.add(ins.index + 1)
        for target in ins.targets:
            for pc in (target, base + target):
                j = program.index_of_pc(pc)
                if j >= 0:
                    leaders.add(j)
                    resolved.setdefault(ins.index, []).append(j)
                    break
    starts = sorted(leaders)
    program.blocks = [
        (s, (starts[k + 1] - 1) if k + 1 < len(starts) else len(instructions) - 1) for k, s in enumerate(starts)
    ]
    program.block_of = [0] * len(instructions)
    for b, (first, last) in enumerate(program.blocks):
        for i in range(first, last + 1):
            program.block_of[i] = b
    program.predecessors = [[] for _ in program.blocks]
    for b, (_first, last) in enumerate(program.blocks):
        ins = instructions[last]
        falls_through = not (ins.opcode in ENDS_BLOCK and not ins.guard and ins.opcode not in ("CALL",))
        if falls_through and last + 1 < len(instructions):
            program.predecessors[program.block_of[last + 1]].append(b)
        for j in resolved.get(last, []):
            program.predecessors[program.block_of[j]].append(b)
    return program
