"""The stalls pass on planted kernels recorded on an H200 (tests/data/stalls/planted: Nsight Compute
SourceCounters, read into plain columns), rebuilt with this tenprof: the blame lands where the planted
cause is."""

from __future__ import annotations

import shutil
from collections import defaultdict
from typing import Any

import pytest

from tenprof.analyses.kernels.stalls import kernel_stalls
from tenprof.importers.blame import producers
from tenprof.importers.sass import parse_program
from tenprof.importers.stalls_import import build_stalls_pass
from tenprof.store.profile import Profile, load_profile
from tenprof.store.writer import PassWriter
from tests.conftest import DATA

MEMORY = ("long_scoreboard", "short_scoreboard")


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> Profile:
    target = tmp_path_factory.mktemp("stalls") / "planted"
    shutil.copytree(DATA / "stalls" / "planted", target)
    raw = target / "stalls" / "raw"
    writer = PassWriter(target, "stalls")
    shutil.copytree(raw, writer.tmp_dir / "raw")
    build_stalls_pass(writer, raw / "stalls.json.gz", raw / "counters_ops.json.gz")
    writer.commit()
    return load_profile(target)


def _kernel(profile: Profile, scope: str) -> dict[str, Any]:
    return next(k for k in profile.table("stall_kernels").to_pylist() if k["scope"] == scope)


def _blame_by_pc(profile: Profile, replay_id: int, reason: str) -> dict[int, float]:
    out: dict[int, float] = defaultdict(float)
    for r in profile.table("blame").to_pylist():
        if r["replay_id"] == replay_id and r["reason"] == reason:
            out[r["blamed_pc"]] += r["samples"]
    return out


def _program(profile: Profile, replay_id: int) -> Any:
    rows = [r for r in profile.table("sass").to_pylist() if r["replay_id"] == replay_id]
    return parse_program([(r["pc"], r["text"]) for r in rows])


def test_samples_are_conserved_by_the_blame_shift(planted: Profile) -> None:
    samples: dict[int, float] = defaultdict(float)
    for r in planted.table("pc_samples").to_pylist():
        samples[r["replay_id"]] += r["samples"]
    blamed: dict[int, float] = defaultdict(float)
    for r in planted.table("blame").to_pylist():
        blamed[r["replay_id"]] += r["samples"]
    assert samples and samples.keys() == blamed.keys()
    for rid, total in samples.items():
        assert blamed[rid] == pytest.approx(total)
    assert all(k["dropped"] == 0 for k in planted.table("stall_kernels").to_pylist())


def test_gather_stalls_are_blamed_on_the_gather_loads(planted: Profile) -> None:
    """Loads whose address comes from another load's value (table[idx[i]]) take the long-scoreboard
    blame, several times what the coalesced loads of x and idx take."""
    k = _kernel(planted, "gather")
    program = _program(planted, k["replay_id"])
    blame = _blame_by_pc(planted, k["replay_id"], "long_scoreboard")
    gather = coalesced = 0.0
    for ins in program.instructions:
        if ins.opcode != "LDG":
            continue
        feeders = producers(program, ins.index, ins.reads)
        indirect = any(
            program.instructions[p].opcode == "LDG"
            or any(
                program.instructions[q].opcode == "LDG" for q in producers(program, p, program.instructions[p].reads)
            )
            for p in feeders
        )
        if indirect:
            gather += blame.get(ins.pc, 0.0)
        else:
            coalesced += blame.get(ins.pc, 0.0)
    assert gather > 2.5 * coalesced > 0


def test_bank_conflict_short_scoreboard_lands_on_shared_loads(planted: Profile) -> None:
    k = _kernel(planted, "bank_conflicts")
    program = _program(planted, k["replay_id"])
    blame = _blame_by_pc(planted, k["replay_id"], "short_scoreboard")
    on_lds = sum(v for pc, v in blame.items() if program.instructions[program.index_of_pc(pc)].opcode == "LDS")
    assert on_lds >= 0.7 * sum(blame.values())


def test_compute_bound_kernel_has_little_memory_blame(planted: Profile) -> None:
    by_scope = {k.where: k for k in kernel_stalls(planted)}
    compute = by_scope["scope compute"]
    assert compute.memory_share < 0.1
    assert by_scope["scope gather"].memory_share > 4 * compute.memory_share
    assert by_scope["scope bank_conflicts"].memory_share > 4 * compute.memory_share


def test_scopes_mark_kernels_only_when_asked(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    from tenprof.capture import counters

    pushed: list[str] = []

    class FakeNvtx:
        @staticmethod
        def range_push(name: str) -> None:
            pushed.append(name)

        @staticmethod
        def range_pop() -> None:
            pushed.append("pop")

    monkeypatch.setattr(counters.torch.cuda, "nvtx", FakeNvtx)
    session = counters.CountersSession(tmp_path, keep_all=False, replay_scopes=("gather",))
    session._active = True
    assert session.scope_enter("forward", None, False) is False  # not named: marks nothing
    token = session.scope_enter("gather", None, False)
    session.scope_exit(token)
    assert session.scope_enter("gather", None, False) is False  # second instance: already replayed
    assert pushed == ["tenprof_keep", "ts:gather", "pop", "pop"]


def test_rollup_per_scope_without_a_timeline(planted: Profile) -> None:
    from tenprof.analyses.kernels.stalls import stall_rollup

    rows = {r.op: r for r in stall_rollup(planted)}
    assert {"scope gather", "scope compute", "scope bank_conflicts"} <= rows.keys()
    gather, compute = rows["scope gather"], rows["scope compute"]
    assert gather.weighted_samples == _kernel(planted, "gather")["samples"]  # one instance each
    assert gather.memory_samples > 10 * compute.memory_samples
    assert gather.top_load.lstrip("@!P0123 ").startswith("LDG")


def test_rollup_spreads_over_timeline_lines_and_weights_by_instances(tmp_path: Any) -> None:
    """A sampled kernel standing for 3 op instances, in a profile whose timeline ran it at one line."""
    import pyarrow as pa

    from tenprof.analyses.kernels.stalls import stall_rollup
    from tenprof.store.schema import BLAME, SASS, STALL_KERNELS

    target = tmp_path / "prof"
    shutil.copytree(DATA / "counters" / "matmul", target)
    writer = PassWriter(target, "stalls")
    row = {
        "replay_id": 0,
        "name": "elementwise_kernel",
        "op": "aten::add",
        "scope": "",
        "signature_id": 4,
        "first_op_seq": 7,
    }
    writer.write_table(
        "stall_kernels",
        pa.table(
            {
                **{k: [v] for k, v in row.items()},
                "instances": [3],
                "samples": [100.0],
                "dropped": [0.0],
                "compiled_kernel": [False],
            },
            schema=STALL_KERNELS,
        ),
    )
    writer.write_table(
        "sass",
        pa.table(
            {
                "replay_id": [0],
                "pc": [16],
                "text": ["LDG.E R4, desc[UR4][R2.64]"],
                "opcode": ["LDG"],
                "space": ["global"],
                "file": [""],
                "line": [-1],
                "l2_sectors": [-1.0],
            },
            schema=SASS,
        ),
    )
    writer.write_table(
        "blame",
        pa.table(
            {
                "replay_id": [0, 0],
                "stalled_pc": [32, 48],
                "blamed_pc": [16, 48],
                "reason": ["long_scoreboard", "barrier"],
                "samples": [40.0, 60.0],
                "shifted": [True, False],
                "unresolved": [False, False],
            },
            schema=BLAME,
        ),
    )
    writer.commit()
    from tenprof.store.meta import PassStatus, read_meta, write_meta

    meta = read_meta(target)
    meta.passes["stalls"] = PassStatus(state="complete")
    write_meta(target, meta)
    (row_out,) = stall_rollup(load_profile(target))
    assert row_out.op == "aten::add" and row_out.line.endswith("matmul_add.py:36")
    assert row_out.weighted_samples == 300.0 and row_out.memory_samples == 120.0
    assert row_out.top_load.startswith("LDG")


def test_triton_kernel_instructions_carry_their_source_lines(planted: Profile) -> None:
    """Triton kernels have line info: the gather kernel's loads map to the lines of planted.py that
    load (x at line 26, idx at 28, table[idx] at 29), read with ncu's source_info."""
    k = _kernel(planted, "gather")
    rows = [r for r in planted.table("sass").to_pylist() if r["replay_id"] == k["replay_id"]]
    loads = {r["line"] for r in rows if r["opcode"] == "LDG"}
    assert all(r["file"].endswith("planted.py") for r in rows if r["opcode"] == "LDG")
    assert loads == {26, 28, 29}
    blame = _blame_by_pc(planted, k["replay_id"], "long_scoreboard")
    by_line: dict[int, float] = defaultdict(float)
    for r in rows:
        by_line[r["line"]] += blame.get(r["pc"], 0.0)
    assert max(by_line, key=lambda line: by_line[line]) == 29  # the gather through idx


def test_roll_up_reaches_python_lines_when_the_timeline_ran(planted: Profile) -> None:
    """The recording has a timeline pass too: op kernels (torch.randn in the script) get their line."""
    from tenprof.analyses.kernels.stalls import stall_rollup

    assert planted.has_pass("timeline")
    lines = {r.op: r.line for r in stall_rollup(planted) if r.op.startswith("aten::")}
    assert lines and all(line.startswith("examples/stalls/planted.py:") for line in lines.values())


@pytest.fixture(scope="module")
def combined(tmp_path_factory: pytest.TempPathFactory) -> Profile:
    """tests/data/stalls/mlp: timeline, counters and stalls, the last two from one ncu run."""
    target = tmp_path_factory.mktemp("stalls") / "mlp"
    shutil.copytree(DATA / "stalls" / "mlp", target)
    return load_profile(target)


def test_counters_and_stalls_share_one_ncu_run(combined: Profile) -> None:
    assert "sampled in the counters pass's ncu run" in combined.meta.passes["stalls"].reason
    assert not (combined.directory / "stalls" / "raw" / "child_status.json").exists()  # no second script run
    replays = combined.table("kernel_metrics").num_rows
    assert combined.table("stall_kernels").num_rows == replays == 16
    sampled = {(k["op"], k["first_op_seq"]) for k in combined.table("stall_kernels").to_pylist()}
    signatures = {(s["op"], s["first_op_seq"]) for s in combined.table("counter_signatures").to_pylist()}
    assert sampled <= signatures


def test_combined_run_rolls_stalls_up_to_python_lines(combined: Profile) -> None:
    from tenprof.analyses.kernels.stalls import stall_rollup

    rows = stall_rollup(combined)
    assert sum(r.weighted_samples for r in rows) > 0
    mm = [r for r in rows if r.op == "aten::mm"]
    assert mm and mm[0].line == "examples/small_mlp.py:36"
    assert rows[0].op == "aten::mm"  # the backward GEMMs stand for the most op instances


def test_report_made_with_plain_ncu_is_analysed(tmp_path: Any) -> None:
    """tests/data/stalls/imported: `ncu --section SourceCounters` made by hand, read by import-ncu.
    The bf16 cuBLAS GEMM (nvjet, TMA loads) waits on its barrier try-wait loop, not on an LDG."""
    target = tmp_path / "imported"
    shutil.copytree(DATA / "stalls" / "imported", target)
    raw = target / "stalls" / "raw"
    writer = PassWriter(target, "stalls")
    shutil.copytree(raw, writer.tmp_dir / "raw")
    build_stalls_pass(writer, raw / "stalls.json.gz", None)
    writer.commit()
    profile = load_profile(target)
    kernels = {k.name: k for k in kernel_stalls(profile)}
    assert len(profile.table("stall_kernels")) == 4
    gemm = next(k for name, k in kernels.items() if name.startswith("nvjet"))
    assert gemm.memory_share > 0.3
    assert "SYNCS" in gemm.hot[0].text
