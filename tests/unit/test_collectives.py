"""The collectives table (a row per collective kernel, from NCCL's args in the trace) and the clock shifts
and arrivals built on it (analyses.compare.collectives); the ranks recordings' are in tests/unit/test_ranks.py."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest

from tenprof.analyses.compare.collectives import RankCollectives, align_and_compare, rank_collectives
from tenprof.importers.timeline_import import import_trace
from tests.conftest import DATA
from tests.helpers import recording


@pytest.fixture(scope="module")
def ddp(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from tenprof.store.profile import load_profile

    out = tmp_path_factory.mktemp("ddp") / "p"
    import_trace(DATA / "corpus_traces" / "ddp_no_sync.json.gz", out, force=False)
    return load_profile(out)


def test_each_allreduce_of_a_ddp_trace_has_its_group_and_its_place(ddp: Any) -> None:
    table = ddp.table("collectives")
    rows = table.to_pylist()
    assert len(rows) == 192 and [r["seq"] for r in rows] == list(range(192))
    assert {(r["collective"], r["group"], r["group_description"], r["group_ranks"], r["group_size"]) for r in rows} == {
        ("allreduce", "0", "default_pg", "[0, 1]", 2)
    }
    assert {r["element_type"] for r in rows} == {"Float"} and min(r["in_elements"] for r in rows) > 0
    names = ddp.table("kernels").column("name").to_pylist()
    assert all(names[r["kernel_id"]].startswith("ncclDevKernel_AllReduce") for r in rows)
    kernels = ddp.table("kernels").column("start_ns").to_numpy()[table.column("kernel_id").to_numpy()]
    assert (np.diff(kernels) > 0).all()  # seq follows the kernels' start


def test_args_of_other_types_and_a_second_group_are_read(tmp_path: Path) -> None:
    kernel = {"ph": "X", "cat": "kernel", "pid": 0, "tid": 7, "dur": 5.0}
    events = [
        {**kernel, "name": "ncclDevKernel_AllGather_RING_LL", "ts": 10.0, "args": {
            "Collective name": "allgather", "Process Group Name": "3", "Process Group Ranks": [0, 2],
            "Group size": "2", "In msg nelems": 64, "Out msg nelems": 128, "dtype": "BFloat16"}},
        {**kernel, "name": "ncclDevKernel_AllReduce_Sum_f32", "ts": 20.0, "args": {
            "Collective name": "allreduce", "Process Group Name": "0", "Group size": True}},
        {**kernel, "name": "ncclDevKernel_AllGather_RING_LL", "ts": 30.0, "args": {
            "Collective name": "allgather", "Process Group Name": "3", "Process Group Ranks": [0, 2]}},
        {**kernel, "name": "gemm", "ts": 40.0, "args": {}},
    ]  # fmt: skip
    trace = tmp_path / "t.json"
    trace.write_bytes(orjson.dumps({"schemaVersion": 1, "traceEvents": events}))
    import_trace(trace, tmp_path / "p", force=False)
    from tenprof.store.profile import load_profile

    rows = load_profile(tmp_path / "p").table("collectives").to_pylist()
    assert [(r["kernel_id"], r["group"], r["seq"], r["group_ranks"], r["group_size"]) for r in rows] == [
        (0, "3", 0, "[0,2]", 2),
        (1, "0", 0, "", -1),  # a flag is no size
        (2, "3", 1, "[0,2]", -1),
    ]
    assert rows[0]["in_elements"] == 64 and rows[0]["out_elements"] == 128 and rows[0]["element_type"] == "BFloat16"


def _rank(rank: int, host: str, groups: list[str], start: list[int], end: list[int]) -> RankCollectives:
    seq, seen = [], {}  # type: ignore[var-annotated]
    for g in groups:
        seq.append(seen.get(g, 0))
        seen[g] = seq[-1] + 1
    return RankCollectives(rank, host, groups, {}, np.array(seq), np.array(start), np.array(end))


def test_a_rank_in_no_group_with_the_first_is_placed_through_one_that_is() -> None:
    # 2D: ranks 0,1 share group "a", ranks 1,2 share "b"; rank 2's clock 7 ms behind rank 1's (on its host);
    # times in microseconds
    us = 1000

    def times(values: list[int], shift: int = 0) -> list[int]:
        return [(v + shift) * us for v in values]

    r0 = _rank(0, "h0", ["a", "a"], times([100, 300]), times([150, 350]))
    r1 = _rank(1, "h0", ["a", "b", "a", "b"], times([110, 200, 320, 400]), times([150, 260, 350, 460]))
    r2 = _rank(2, "h1", ["b", "b"], times([240, 420], -7000), times([260, 460], -7000))
    found = align_and_compare([r0, r1, r2])
    assert found.applied and found.shifts == {0: 0, 1: 0, 2: 7000 * us}
    a, b = found.groups
    assert (a.group, a.ranks, a.compared, a.last_share) == ("a", [0, 1], 2, {0: 0.0, 1: 1.0})
    assert (b.group, b.ranks, b.last_share, b.most_often_last) == ("b", [1, 2], {1: 0.0, 2: 1.0}, 2)
    assert b.mean_wait_ns == {1: 30.0 * us, 2: 0.0}  # rank 1 waits 40 us, then 20


def test_without_collectives_nothing_is_shifted() -> None:
    found = align_and_compare([_rank(0, "a", [], [], []), _rank(1, "b", [], [], [])])
    assert not found.applied and found.shifts == {0: 0, 1: 0} and not found.groups
    assert "no collectives" in found.method


def test_an_older_recording_gives_its_collective_kernels_as_one_group() -> None:

    found = rank_collectives(recording(DATA / "ranks" / "balanced" / "rank00000"), 0)
    assert set(found.group) == {"?"} and found.seq.tolist() == list(range(len(found.seq))) and len(found.seq) > 8


def test_bus_bandwidth_is_nccl_tests_from_the_last_arrival() -> None:
    from tenprof.analyses.compare.bus_bandwidth import bus_factor, link_peak, message_bytes

    mib64 = 16 * (1 << 20)  # float32 elements: 64 MiB
    assert message_bytes("allreduce", mib64, mib64, "Float") == 64 << 20
    assert message_bytes("allgather", mib64 // 4, mib64, "BFloat16") == 32 << 20  # the gathered output
    assert message_bytes("allreduce", 10, 10, "Complex") == -1
    assert bus_factor("allreduce", 8) == pytest.approx(1.75) and bus_factor("reduce_scatter", 4) == 0.75
    assert bus_factor("broadcast", 4) == 1.0 and bus_factor("barrier", 4) is None
    assert link_peak("NVIDIA H100 80GB HBM3", True) == ("NVLink 4", 450.0, link_peak("NVIDIA H200", True)[2])  # type: ignore[index]
    assert link_peak("NVIDIA H100 80GB HBM3", False) is None and link_peak("Tesla T4", True) is None

    def rank(r: int, start: list[int], end: list[int], size: int) -> RankCollectives:
        count = len(start)
        return RankCollectives(
            r, "h", ["0"] * count, {}, np.arange(count), np.array(start), np.array(end),
            ["allreduce"] * count, np.full(count, size), {"0": 4}, "NVIDIA H100 80GB HBM3",
        )  # fmt: skip

    # four ranks 0.1 ms apart; the last arrives at 0.3 ms, all end 1 ms later: 64 MiB in 1 ms is 67.1 GB/s
    # algbw, x1.5
    ranks = [rank(r, [100_000 * r], [1_300_000], 64 << 20) for r in range(4)]
    (group,) = align_and_compare(ranks).groups
    assert group.most_often_last == 3 and group.late_ns == 100_000
    assert group.bus_gbs == pytest.approx((64 << 20) / 1_000_000 * 1.5) and group.bus_collectives == 1
    assert (group.link, group.link_peak_gbs) == ("NVLink 4", 450.0)
    small = [rank(r, [100_000 * r], [1_300_000], 1024) for r in range(4)]
    together = [rank(r, [r], [1_300_000], 1024) for r in range(4)]  # within 1 us: none of them was last
    assert align_and_compare(together).groups[0].most_often_last == -1
    assert align_and_compare(small).groups[0].bus_gbs is None  # latency-bound sizes are not judged


def test_a_real_two_gpu_job_with_a_slowed_rank_names_it_last_at_every_collective(tmp_path: Path) -> None:
    # tests/data/ranks40/slowed: examples/ddp_train.py --slow-rank 1 on two H200s of one host (NVLink),
    # recorded with the collectives' arguments; rebuilt from its raw traces with this tenprof
    from tests.conftest import rebuild

    ranks = [rank_collectives(rebuild(f"ranks40/slowed/rank0000{r}", tmp_path), r) for r in (0, 1)]
    assert all(set(found.group) == {"0"} for found in ranks)
    alignment = align_and_compare(ranks)
    assert not alignment.applied and abs(alignment.estimated[1]) < 50_000  # one host: one clock
    (group,) = alignment.groups
    # its 21 collectives, 9 of them in the steady steps 3-5 (the first build the communicator and meet the
    # ranks' first steps)
    assert group.compared == 9 and group.steps == 3 and group.last_share[1] == 1.0 and group.most_often_last == 1
    assert group.mean_wait_ns[0] > 5e6 and group.mean_wait_ns[1] == 0.0  # rank 0 waits for rank 1
    assert group.link == "NVLink 4" and group.bus_gbs is not None and 50 < group.bus_gbs < group.link_peak_gbs  # type: ignore[operator]


def test_only_the_steady_steps_collectives_are_compared_where_steps_were_marked() -> None:
    # rank 1 is 20 ms late at the two collectives of its cold steps (building the communicator, its first
    # step compiling); rank 0 is 50 us late at the four of the steady steps: rank 0 is the straggler
    us = 1000
    starts = {0: [0, 100, 1050, 2050, 3050, 4050], 1: [20000, 20100, 1000, 2000, 3000, 4000]}
    steady = np.array([False, False, True, True, True, True])
    ranks = [
        dataclasses.replace(
            _rank(r, "h", ["0"] * 6, [t * us for t in starts[r]], [(t + 30000) * us for t in starts[0]]),
            steady=steady,
            steady_steps=4,
        )
        for r in (0, 1)
    ]
    (group,) = align_and_compare(ranks).groups
    assert (group.compared, group.most_often_last, group.steps) == (4, 0, 4.0)
    assert group.late_ns == 4 * 50 * us
    # the same ranks without marked steps: every collective compared, the cold ones' 40 ms of lateness too
    unmarked = [dataclasses.replace(r, steady=None, steady_steps=0) for r in ranks]
    (group,) = align_and_compare(unmarked).groups
    assert group.compared == 6 and group.steps == 0.0 and group.late_ns == (2 * 20000 + 4 * 50) * us


@pytest.mark.parametrize(
    ("case", "last"),
    [
        # rank 3 alone slowed: last in both its groups; rank 2, its TP partner, waits for it in tp1 and so
        # comes last to dp0
        ("slowrank", {"tp1": 3, "dp0": 2, "dp1": 3}),
        # TP group 1 slowed (ranks 2 and 3): its ranks last at both DP groups' all-reduces
        ("slowtp", {"tp1": 3, "dp0": 2, "dp1": 3}),
    ],
)
def test_a_real_four_gpu_2d_job_and_its_copies_with_planted_clocks_give_the_same_verdicts(
    case: str, last: dict[str, int]
) -> None:
    # tests/data/groups40: examples/parallel_2d.py on four H200s of one host (TP pairs tp0 {0,1}, tp1 {2,3};
    # DP groups dp0 {0,2}, dp1 {1,3}); the copies put each rank on a host of its own, its clock off by a
    # planted shift, which the collectives' ends must find again (within 50 us) with the same arrivals

    ranks = [rank_collectives(recording(DATA / "groups40" / case / f"rank0000{r}"), r) for r in range(4)]
    real = align_and_compare(ranks)
    assert not real.applied and max(abs(s) for s in real.estimated.values()) < 50_000  # one host
    planted = {0: 0, 1: 350_000, 2: -1_200_000, 3: 2_700_000}
    copies = [
        dataclasses.replace(
            r, host=f"h{r.rank}", start_ns=r.start_ns + planted[r.rank], end_ns=r.end_ns + planted[r.rank]
        )
        for r in ranks
    ]
    shifted = align_and_compare(copies)
    assert shifted.applied
    for r in range(4):  # the shift that undoes the planted one, up to the real clocks' own few microseconds
        assert abs(shifted.shifts[r] + planted[r] - real.estimated[r]) < 50_000
    for found in (real, shifted):
        verdicts = {g.description: g.most_often_last for g in found.groups}
        assert {name: verdicts[name] for name in last} == last
        assert all(g.compared and g.steps == 3 for g in found.groups)  # the three steady steps' collectives
    # the groups with a clear last rank read the same shares; within tp0 the ranks arrive microseconds apart,
    # as close as the real clocks' own disagreement, which the copies' applied shifts correct
    shares = [{g.description: g.last_share for g in found.groups if g.description in last} for found in (real, shifted)]
    assert shares[0] == shares[1]
