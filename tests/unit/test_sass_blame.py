"""The SASS model and the blame-shift rules on hand-written SASS, and conservation on random programs."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tenprof.importers.blame import blame, producers
from tenprof.importers.sass import parse_instruction, parse_program


def program(*lines: str) -> list[tuple[int, str]]:
    return [(0x100 + 16 * i, text) for i, text in enumerate(lines)]


def pc(i: int) -> int:
    return 0x100 + 16 * i


def landed(listing: list[tuple[int, str]], stalled: int, reason: str, samples: float = 12.0) -> dict[int, float]:
    out: dict[int, float] = {}
    for b in blame(parse_program(listing), [(pc(stalled), reason, samples)]):
        out[b.blamed_pc] = out.get(b.blamed_pc, 0.0) + b.samples
    return out


def test_parse_operands_widths_predicates_and_spaces() -> None:
    ld = parse_instruction(0, 0, "@!P1 LDG.E.64 R4, desc[UR6][R2.64+0x10]")
    assert ld.guard == "!P1" and ld.opcode == "LDG" and ld.space == "global"
    assert ld.writes == {"R4", "R5"} and ld.reads == {"R2", "R3", "UR6", "P1"}
    st_ = parse_instruction(1, 16, "STG.E desc[UR4][R2.64], R7")
    assert st_.writes == frozenset() and st_.reads == {"UR4", "R2", "R3", "R7"}
    setp = parse_instruction(2, 32, "ISETP.GE.AND P0, PT, R1, c[0x0][0x170], PT")
    assert setp.writes == {"P0"} and setp.reads == {"R1"}
    wide = parse_instruction(3, 48, "IMAD.WIDE R10, R8, 0x4, R2")
    assert wide.writes == {"R10", "R11"} and wide.reads == {"R8", "R2"}
    lds = parse_instruction(4, 64, "LDS.128 R12, [R3+0x20]")
    assert lds.space == "shared" and lds.writes == {"R12", "R13", "R14", "R15"}
    assert parse_instruction(5, 80, "FFMA R1, RZ, R2, R3").reads == {"R2", "R3"}


def test_long_scoreboard_moves_to_the_load_that_feeds_the_register() -> None:
    listing = program(
        "LDG.E R4, desc[UR4][R2.64]",  # 0: the value the FFMA waits for
        "LDG.E R5, desc[UR4][R8.64]",  # 1: another load, not read by the FFMA
        "IADD3 R9, R9, 0x1, RZ",
        "FFMA R6, R4, R7, R6",  # 3: stalled here
        "EXIT",
    )
    assert landed(listing, 3, "long_scoreboard") == {pc(0): 12.0}


def test_gather_blames_the_data_load_not_the_index_load() -> None:
    listing = program(
        "LDG.E R8, desc[UR4][R2.64]",  # 0: index = idx[i]
        "IMAD.WIDE R10, R8, 0x4, R6",  # 1: &table[index] (stalls on the index load)
        "LDG.E R12, desc[UR4][R10.64]",  # 2: table[index]: the gather
        "FADD R14, R12, R13",  # 3: stalls on the gather
        "EXIT",
    )
    assert landed(listing, 3, "long_scoreboard") == {pc(2): 12.0}
    assert landed(listing, 1, "long_scoreboard") == {pc(0): 12.0}


def test_short_scoreboard_goes_to_shared_memory_and_ignores_global_loads() -> None:
    listing = program(
        "LDG.E R2, desc[UR4][R8.64]",
        "LDS R4, [R3]",
        "FADD R5, R4, R2",  # reads a global and a shared result
        "EXIT",
    )
    assert landed(listing, 2, "short_scoreboard") == {pc(1): 12.0}
    assert landed(listing, 2, "long_scoreboard") == {pc(0): 12.0}


def test_loop_carried_load_is_found_through_the_back_edge() -> None:
    listing = program(
        "LDG.E R4, desc[UR4][R2.64]",  # 0: first iteration's value
        "FFMA R6, R4, R7, R6",  # 1: loop head: stalls on R4
        "LDG.E R4, desc[UR4][R10.64]",  # 2: next iteration's value
        "ISETP.GE.AND P0, PT, R9, R11, PT",
        f"@!P0 BRA {pc(1):#x}",  # 4: back edge
        "EXIT",
    )
    assert landed(listing, 1, "long_scoreboard") == {pc(0): 6.0, pc(2): 6.0}


def test_predicated_writer_does_not_hide_an_earlier_one() -> None:
    listing = program(
        "LDG.E R4, desc[UR4][R2.64]",  # 0
        "@P0 LDS R4, [R3]",  # 1: may or may not have written R4
        "FADD R5, R4, R4",  # 2
        "EXIT",
    )
    p = parse_program(listing)
    assert producers(p, 2, frozenset({"R4"})) == {0, 1}
    assert landed(listing, 2, "long_scoreboard") == {pc(0): 12.0}
    assert landed(listing, 2, "short_scoreboard") == {pc(1): 12.0}


def test_if_else_loads_split_the_blame() -> None:
    listing = program(
        f"@P0 BRA {pc(3):#x}",  # 0
        "LDG.E R4, desc[UR4][R2.64]",  # 1: else arm
        f"BRA {pc(4):#x}",  # 2
        "LDG.E R4, desc[UR4][R8.64]",  # 3: then arm
        "FMUL R5, R4, R4",  # 4: join, stalls
        "EXIT",
    )
    assert landed(listing, 4, "long_scoreboard") == {pc(1): 6.0, pc(3): 6.0}


def test_two_loaded_operands_split_by_the_sectors_each_load_requested() -> None:
    """b + a.t(): the add waits on a coalesced load (4 sectors a request) and a strided one (32)."""
    listing = program(
        "LDG.E R4, desc[UR4][R2.64]",  # 0: coalesced
        "LDG.E R6, desc[UR4][R8.64]",  # 1: strided
        "FADD R5, R4, R6",  # 2: stalls
        "EXIT",
    )
    weighted = blame(parse_program(listing), [(pc(2), "long_scoreboard", 36.0)], {pc(0): 4.0, pc(1): 32.0})
    assert {b.blamed_pc: b.samples for b in weighted} == {pc(0): 4.0, pc(1): 32.0}
    # a candidate without a weight: the equal split, claiming nothing
    equal = blame(parse_program(listing), [(pc(2), "long_scoreboard", 36.0)], {pc(1): 32.0})
    assert {b.blamed_pc: b.samples for b in equal} == {pc(0): 18.0, pc(1): 18.0}


def test_non_dependency_and_unmatched_stalls_stay() -> None:
    listing = program("IADD3 R4, R1, R2, RZ", "FADD R5, R4, R4", "BAR.SYNC 0x0", "EXIT")
    p = parse_program(listing)
    kept = blame(p, [(pc(1), "long_scoreboard", 5.0), (pc(2), "barrier", 7.0)])
    assert [(b.blamed_pc, b.samples, b.shifted, b.unresolved) for b in kept] == [
        (pc(1), 5.0, False, True),
        (pc(2), 7.0, False, False),
    ]


OPCODES = [
    "LDG.E R{d}, desc[UR4][R{a}.64]",
    "LDS R{d}, [R{a}]",
    "MUFU.EX2 R{d}, R{a}",
    "FFMA R{d}, R{a}, R{b}, R{d}",
    "IADD3 R{d}, R{a}, R{b}, RZ",
    "@P0 LDG.E R{d}, desc[UR4][R{a}.64]",
]
REASONS = ["long_scoreboard", "short_scoreboard", "barrier", "not_selected", "wait"]


@st.composite
def programs(draw: st.DrawFn) -> tuple[list[tuple[int, str]], list[tuple[int, str, float]]]:
    n = draw(st.integers(2, 14))
    lines = []
    for i in range(n):
        if i > 0 and draw(st.integers(0, 6)) == 0:
            lines.append(f"@P0 BRA {pc(draw(st.integers(0, n - 1))):#x}")
        else:
            template = draw(st.sampled_from(OPCODES))
            lines.append(
                template.format(d=draw(st.integers(0, 7)) * 2, a=draw(st.integers(0, 7)) * 2, b=draw(st.integers(0, 7)))
            )
    lines.append("EXIT")
    samples = [
        (pc(draw(st.integers(0, n))), draw(st.sampled_from(REASONS)), float(draw(st.integers(1, 50))))
        for _ in range(draw(st.integers(1, 10)))
    ]
    return program(*lines), samples


@settings(max_examples=300, deadline=None)
@given(programs(), st.dictionaries(st.integers(0, 15).map(pc), st.floats(0.0, 64.0), max_size=8))
def test_blame_conserves_samples(
    case: tuple[list[tuple[int, str]], list[tuple[int, str, float]]], weights: dict[int, float]
) -> None:
    listing, samples = case
    p = parse_program(listing)
    for given_weights in (None, weights):
        out = blame(p, samples, given_weights)
        assert abs(sum(b.samples for b in out) - sum(s for _, _, s in samples)) < 1e-9
    pcs = {pc_ for pc_, _ in listing}
    for b in out:
        assert b.blamed_pc in pcs
        if b.shifted:
            target = p.instructions[p.index_of_pc(b.blamed_pc)]
            assert target.is_load and target.space


def test_overwriting_an_address_register_waits_for_the_load_reading_it() -> None:
    listing = program(
        "LDG.E.128 R12, desc[UR4][R2.64]",  # 0: reads R2, R3 as its address
        "CS2R R2, SRZ",  # 1: overwrites R2, R3 while the load may still read them
        "EXIT",
    )
    assert landed(listing, 1, "long_scoreboard") == {pc(0): 12.0}
