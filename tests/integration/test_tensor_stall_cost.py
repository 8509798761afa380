"""Tensor stall cost on a real tensors-pass recording (CPU) with stall and access tables made up around
it: samples go to the view the op read, split by bytes; the rest to named buckets; totals conserved.
(The access pass itself needs the GPU machine; these tables stand for what it will write.)"""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pyarrow as pa
import pytest

from tenprof.analyses.tensors.tensor_forest import Forest
from tenprof.analyses.tensors.tensor_stall_cost import NO_ACCESS, NO_TENSOR, tensor_stall_cost
from tenprof.renderers.stall_cost_files import write_stall_cost
from tenprof.store.meta import PassStatus, read_meta, write_meta
from tenprof.store.profile import Profile, load_profile
from tenprof.store.schema import ACCESSES, BLAME, SASS, STALL_KERNELS
from tenprof.store.writer import PassWriter
from tests.integration.conftest import Recorded


@pytest.fixture(scope="module")
def profile(tmp_path_factory: pytest.TempPathFactory, accesses_without_toolkit_run: Recorded) -> Profile:
    # the tensors pass of TRANSPOSED_ADD (`c = b + 1` with b = a.t()), copied: the fake stalls and accesses
    # passes go into the copy (over the accesses pass that failed there)
    out = tmp_path_factory.mktemp("cost") / "prof"
    shutil.copytree(accesses_without_toolkit_run.profile, out)
    p = load_profile(out)
    add = p.sql("select op_seq from tensor_ops where name = 'aten::add'").column(0)[0].as_py()
    b = p.sql(
        f"select t.tensor_id, t.data_ptr from tensor_uses u join tensors t using (tensor_id) "
        f"where u.op_seq = {add} and u.role = 'read' and t.is_view"
    ).to_pylist()[0]
    kernels = {
        "replay_id": [0, 1],
        "name": ["elementwise_kernel", "other_kernel"],
        "op": ["aten::add", "aten::add"],
        "scope": ["", ""],
        "signature_id": [3, 4],
        "instances": [1, 1],
        "first_op_seq": [add, add],
        "samples": [100.0, 10.0],
        "dropped": [0.0, 0.0],
        "compiled_kernel": [False, False],
    }
    sass = {
        "replay_id": [0, 0, 0, 1],
        "pc": [0x1000, 0x1010, 0x1020, 0x2010],
        "text": ["IMAD R2, R0, 0x4, RZ", "LDG.E R4, desc[UR4][R2.64]", "FADD R5, R4, 1", "LDG.E R6, desc[UR4][R8.64]"],
        "opcode": ["IMAD", "LDG", "FADD", "LDG"],
        "space": ["", "global", "", "global"],
        "file": ["", "", "", ""],
        "line": [-1, -1, -1, -1],
        "l2_sectors": [-1.0, -1.0, -1.0, -1.0],
    }
    blame = {
        "replay_id": [0, 0, 1],
        "stalled_pc": [0x1020, 0x1020, 0x2020],
        "blamed_pc": [0x1010, 0x1020, 0x2010],
        "reason": ["long_scoreboard", "barrier", "long_scoreboard"],
        "samples": [90.0, 10.0, 10.0],
        "shifted": [True, False, True],
        "unresolved": [False, False, False],
    }
    # 9 reads inside b (strided: every 64th float of a's storage is a row of b) and 1 outside any tensor
    addresses = [b["data_ptr"] + 4 * 64 * k for k in range(9)] + [16]
    accesses = {
        "launch_id": [3] * 10,
        "op_seq": [add] * 10,
        "kernel": ["_ZN2at6native18elementwise_kernelILi128ELi4EEEviT1_"] * 10,
        "ordinal": [0] * 10,
        "pc_offset": [0x10] * 10,
        "address": addresses,
        "bytes": [4] * 10,
        "is_write": [False] * 10,
        "count": [1] * 10,
        **{column: [None] * 10 for column in ("lane_stride", "sectors", "min_sectors", "lanes", "ascending")},
    }
    for pass_name, tables in (
        ("stalls", {"stall_kernels": (kernels, STALL_KERNELS), "sass": (sass, SASS), "blame": (blame, BLAME)}),
        ("accesses", {"accesses": (accesses, ACCESSES)}),
    ):
        writer = PassWriter(out, pass_name)
        for name, (columns, schema) in tables.items():
            writer.write_table(name, pa.table(columns, schema=schema))
        writer.commit()
        meta = read_meta(out)
        meta.passes[pass_name] = PassStatus(state="complete")
        write_meta(out, meta)
    p = load_profile(out)
    p.b_tensor = b["tensor_id"]  # type: ignore[attr-defined]
    return p


@pytest.mark.xdist_group("accesses_without_toolkit_run")
def test_samples_go_to_the_view_the_op_read_split_by_bytes(profile: Profile) -> None:
    costs = {c.tensor_id: c for c in tensor_stall_cost(profile)}
    b = profile.b_tensor  # type: ignore[attr-defined]
    assert costs[b].samples == pytest.approx(90 * 9 / 10)
    assert costs[NO_TENSOR].samples == pytest.approx(9.0)
    assert costs[NO_ACCESS].samples == pytest.approx(10.0)  # the load no access record covers
    assert sum(c.samples for c in costs.values()) == pytest.approx(100.0)  # barrier samples are not memory
    assert sum(c.share for c in costs.values()) == pytest.approx(1.0)
    assert costs[b].kernels == ("elementwise_kernel",) and costs[b].load_pcs == (0x1010,)
    assert Forest(profile).columns["view_op"][b] == "aten::t"


@pytest.mark.xdist_group("accesses_without_toolkit_run")
def test_csv_and_blame_forest(profile: Profile, tmp_path: Path) -> None:
    costs = tensor_stall_cost(profile)
    forest = Forest(profile)
    written = write_stall_cost(costs, forest, tmp_path)
    rows = list(csv.DictReader((tmp_path / "tensor_stall_cost.csv").open()))
    assert rows[0]["tensor"] == f"T{profile.b_tensor}" and rows[0]["view_op"] == "aten::t"  # type: ignore[attr-defined]
    assert sum(float(r["samples"]) for r in rows) == pytest.approx(100.0)
    dot = written[1].read_text()
    b = profile.b_tensor  # type: ignore[attr-defined]
    base = forest.path_to_root(b)[-1]
    assert f'T{base} -> T{b} [label="t", color=red' in dot  # the blamed path is red
    assert "81.0%" in dot


def test_kernel_names_match_across_ncu_and_the_sanitizer() -> None:
    from tenprof.analyses.tensors.tensor_stall_cost import same_kernel

    assert same_kernel("gather_kernel", "gather_kernel")  # Triton: extern "C", not mangled
    mangled = "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_15CUDAFunctor_addIfEEEEviT0_"
    assert same_kernel("vectorized_elementwise_kernel", mangled)
    assert same_kernel("void at::native::vectorized_elementwise_kernel<4, add>(int, add)", mangled)
    assert not same_kernel("elementwise_kernel", mangled)  # a suffix of another identifier
    assert not same_kernel("gather_kernel", "compute_kernel")
