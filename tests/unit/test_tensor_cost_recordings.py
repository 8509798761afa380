"""Tensor stall cost on planted workloads recorded on an H200 (tests/data/tensor_cost: timeline, tensors,
stalls and accesses passes), with the stalls and accesses passes rebuilt from their raw files by this
tenprof: the memory stalls land on the tensor the workload was built to make slow."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest

from tenprof.analyses.tensors.tensor_advice import advice
from tenprof.analyses.tensors.tensor_forest import Forest
from tenprof.analyses.tensors.tensor_stall_cost import NO_ACCESS, TensorCost, tensor_stall_cost
from tenprof.importers.accesses_import import build_accesses_pass
from tenprof.importers.stalls_import import build_stalls_pass
from tenprof.report.drawings import write_stall_cost_files
from tenprof.store.directory import claim
from tenprof.store.profile import Profile, load_profile
from tenprof.store.writer import PassWriter
from tests.conftest import DATA

# Its tests share module fixtures that take seconds to make: one test worker makes them and runs them all
pytestmark = pytest.mark.xdist_group("tensor_cost_recordings")


def _rebuilt(tmp: Path, name: str) -> Profile:
    target = tmp / name
    shutil.copytree(DATA / "tensor_cost" / name, target)
    raw = target / "stalls" / "raw"
    writer = PassWriter(target, "stalls")
    shutil.copytree(raw, writer.tmp_dir / "raw")
    build_stalls_pass(writer, raw / "stalls.json.gz", raw / "counters_ops.json.gz")
    writer.commit()
    pid = json.loads((target / "tensors" / "raw" / "child_status.json").read_text())["pid"]
    writer = PassWriter(target, "accesses")
    shutil.copytree(target / "accesses" / "raw", writer.tmp_dir / "raw")
    build_accesses_pass(writer, writer.tmp_dir / "raw", pid)
    writer.commit()
    return load_profile(target)


@pytest.fixture(scope="module")
def transposed(tmp_path_factory: pytest.TempPathFactory) -> Profile:
    return _rebuilt(tmp_path_factory.mktemp("cost"), "transposed")


@pytest.fixture(scope="module")
def matmul(tmp_path_factory: pytest.TempPathFactory) -> Profile:
    return _rebuilt(tmp_path_factory.mktemp("cost"), "matmul4096")


def _memory_samples(profile: Profile) -> float:
    instances = {k["replay_id"]: k["instances"] for k in profile.table("stall_kernels").to_pylist()}
    return sum(
        r["samples"] * instances[r["replay_id"]]
        for r in profile.table("blame").to_pylist()
        if r["reason"] == "long_scoreboard"
    )


def _by_line(costs: list[TensorCost], forest: Forest) -> dict[str, TensorCost]:
    return {forest.creator_line(c.tensor_id): c for c in costs if c.tensor_id >= 0}


def test_transposed_view_carries_the_cost(transposed: Profile) -> None:
    """`b + a.t()`: the strided read of the view a.t() waits far longer than the coalesced read of b."""
    costs = tensor_stall_cost(transposed)
    forest = Forest(transposed)
    top = costs[0]
    assert top.tensor_id >= 0 and forest.columns["view_op"][top.tensor_id] == "aten::t"
    base = forest.path_to_root(top.tensor_id)[-1]
    assert forest.creator_line(base) == "tensor_cost/transposed.py:23"  # a = torch.randn(...)
    b = _by_line(costs, forest)["tensor_cost/transposed.py:24"]
    assert top.share > 0.6 and top.samples > 4 * b.samples
    assert "non-contiguous view" in advice(top, forest)


def test_totals_are_conserved_and_the_files_agree(transposed: Profile, tmp_path: Path) -> None:
    costs = tensor_stall_cost(transposed)
    assert sum(c.samples for c in costs) == pytest.approx(_memory_samples(transposed))
    shutil.copytree(transposed.directory, tmp_path / "p")
    # the recording's own drawings are tenprof's (the fixture keeps no marker listing them)
    claim(tmp_path / "p", *(p.name for p in (tmp_path / "p").iterdir()))
    assert write_stall_cost_files(tmp_path / "p") == ""
    rows = list(csv.DictReader((tmp_path / "p" / "tensor_stall_cost.csv").open()))
    assert sum(float(r["samples"]) for r in rows) == pytest.approx(_memory_samples(transposed), rel=1e-3)
    dot = (tmp_path / "p" / "blame.dot").read_text()
    assert "color=red" in dot


def test_access_offsets_land_on_memory_instructions(transposed: Profile) -> None:
    """The sanitizer's PC offsets and ncu's SASS agree: every access recorded for the sampled add kernel
    sits on a global load or store of that kernel."""
    kernel = next(k for k in transposed.table("stall_kernels").to_pylist() if k["op"] == "aten::add")
    sass = {r["pc"]: r for r in transposed.table("sass").to_pylist() if r["replay_id"] == kernel["replay_id"]}
    start = min(sass)
    offsets = (
        transposed.sql(f"select distinct pc_offset from accesses where op_seq = {kernel['first_op_seq']}")
        .column(0)
        .to_pylist()
    )
    assert offsets
    for offset in offsets:
        assert sass[start + offset]["opcode"] in ("LDG", "STG"), hex(offset)


def test_gemm_inputs_not_the_bias_dominate(matmul: Profile) -> None:
    """seed 004's `a @ b + bias` at 4096 in bf16: the GEMM (cuBLAS nvjet, TMA loads the sanitizer cannot
    see) waits on its inputs, charged by bytes and marked inferred; the bias is read but costs nothing."""
    costs = tensor_stall_cost(matmul)
    forest = Forest(matmul)
    lines = _by_line(costs, forest)
    a, b = lines["examples/matmul_add.py:25"], lines["examples/matmul_add.py:26"]
    bias = lines.get("examples/matmul_add.py:27")
    assert a.share > 0.1 and b.share > 0.1
    assert a.inferred == pytest.approx(a.samples) and any(k.startswith("nvjet") for k in a.kernels)
    assert bias is None or bias.share < 0.01
    assert "GEMM" in advice(a, forest) and a.ops == ("aten::mm",)
    product = lines["examples/matmul_add.py:35"]  # c = a @ b, read back by the add
    assert "written to memory by aten::mm and read back by aten::add" in advice(product, forest)
    assert NO_ACCESS not in {c.tensor_id for c in costs if c.share > 0.01}


def test_sorting_the_indices_cuts_the_tables_stall_cost(tmp_path: Path) -> None:
    """The same 16M lookups into a 16M-row table, random then sorted: the stall samples charged to the
    table drop (5.1x when recorded), and the advice names the gather."""
    table_line = "tensor_cost/embedding.py:30"  # table = torch.randn(...)
    charged = {}
    for order in ("random", "sorted"):
        profile = _rebuilt(tmp_path, f"embedding_{order}")
        costs = tensor_stall_cost(profile)
        forest = Forest(profile)
        table = _by_line(costs, forest)[table_line]
        assert forest.describe(table.tensor_id) == "float32[16777216, 1]"
        assert "gather" in advice(table, forest)
        charged[order] = table.samples
    assert charged["sorted"] < charged["random"] / 3
