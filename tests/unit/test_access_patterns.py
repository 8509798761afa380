"""Access patterns per (kernel, tensor) on planted cases recorded on an H100 (tests/data/tensor_cost/patterns:
examples/tensor_cost/patterns.py under timeline, tensors, stalls and accesses; the accesses pass rebuilt
from its raw records by this tenprof). Each expected value is worked out from the shapes:
- `a.t() + b`, 4096 x 4096 float32: the add walks a.t()'s order, so neighbouring threads read `b` one row
  apart: 4096 elements x 4 bytes = 16 KiB, along b's dim 0; each of 32 lanes in its own sector: 32 sectors
  per request where 32 lanes x 4 bytes = 128 bytes = 4 sectors would do;
- the control `a.t().contiguous() + b` (vectorized, 16 bytes a lane): 16 sectors, 16 ideal;
- embedding, one float per row, 4M rows: random indices put each lane in a sector of its own (32 of 32,
  collisions among 2^19 sectors are rare); the same indices sorted: 32 lanes span about 31 rows x 4 bytes,
  1 + 124/32 = 4.9 sectors;
- `x + bias` (8192 x 1024 + 1024): the bias read coalesced, 8192 times over; `x + column[:, None]`: all
  lanes of a warp in one row read one element: 1 sector, stride 0;
- `x[:, ::4].sum(dim=1)`: lanes 4 elements = 16 bytes apart along the view's dim 1: 32 x 16 bytes = 512
  bytes = 16 sectors where 4 would do."""

from __future__ import annotations

import csv
import io
import json
import shutil

import pytest

from tenprof.analyses.tensors.access_patterns import AccessPattern, LoadPatterns, load_patterns, stalled_load_patterns
from tenprof.analyses.tensors.tensor_advice import advice
from tenprof.analyses.tensors.tensor_forest import Forest
from tenprof.analyses.tensors.tensor_stall_cost import TensorCost, tensor_stall_cost
from tenprof.importers.accesses_import import build_accesses_pass
from tenprof.renderers.stall_cost_files import cost_csv, short_pattern
from tenprof.store.profile import Profile, load_profile
from tests.conftest import DATA, rebuild_pass
from tests.helpers import recording

# Its tests share module fixtures that take seconds to make: one test worker makes them and runs them all
pytestmark = pytest.mark.xdist_group("access_patterns")

EXAMPLE = DATA.parent.parent / "examples" / "tensor_cost" / "patterns.py"


def _line(text: str) -> str:
    number = next(i + 1 for i, t in enumerate(EXAMPLE.read_text().splitlines()) if text in t)
    return f"tensor_cost/patterns.py:{number}"


@pytest.fixture(scope="module")
def profile(tmp_path_factory: pytest.TempPathFactory) -> Profile:
    target = tmp_path_factory.mktemp("patterns") / "patterns"
    shutil.copytree(DATA / "tensor_cost" / "patterns", target)
    pid = json.loads((target / "tensors" / "raw" / "child_status.json").read_text())["pid"]
    rebuild_pass(target, "accesses", lambda writer, raw: build_accesses_pass(writer, raw, pid))
    return load_profile(target)


@pytest.fixture(scope="module")
def patterns(profile: Profile) -> LoadPatterns:
    return load_patterns(profile)


@pytest.fixture(scope="module")
def costs(profile: Profile) -> list[TensorCost]:
    """The profile's tensor stall cost, worked out once for the tests that read it."""
    return tensor_stall_cost(profile)


def _read(patterns: LoadPatterns, forest: Forest, made_at: str, by: str, at: str) -> AccessPattern:
    """The read of the tensor made at `made_at` (its base, or a view of it) by op `by` at line `at`."""
    found = _reads(patterns, forest, made_at, by, at)
    assert len(found) == 1, [(p.op, p.line, p.tensor_id, p.kind) for p in found]
    return found[0]


def _reads(patterns: LoadPatterns, forest: Forest, made_at: str, by: str, at: str) -> list[AccessPattern]:
    """Every such read (a tensor made in the loop is a new tensor each step)."""
    return [
        p
        for p in patterns.patterns
        if not p.is_write
        and p.op == by
        and p.line.endswith(at)
        and forest.creator_line(forest.path_to_root(p.tensor_id)[-1]).endswith(made_at)
    ]


def test_b_is_read_a_row_apart_because_the_add_walks_the_transposed_view(
    profile: Profile, patterns: LoadPatterns, costs: list[TensorCost]
) -> None:
    forest = Forest(profile)
    add = _line("b read across rows")
    b = _read(patterns, forest, _line("b = torch.randn"), "aten::add", add)
    assert b.kind == "strided" and b.stride == 4096 * 4 and b.stride_elements == 4096 and b.stride_dim == 0
    assert b.sectors_per_request == pytest.approx(32.0, abs=0.1) and b.ideal_per_request == pytest.approx(4.0)
    view = _read(patterns, forest, _line("a = torch.randn"), "aten::add", add)
    assert forest.columns["view_op"][view.tensor_id] == "aten::t"
    assert view.kind == "coalesced" and view.sectors_per_request == pytest.approx(4.0)
    # the advice names the view whose order the add walks, and the saving from the sector ratio
    cost = next(c for c in costs if c.tensor_id == b.tensor_id)
    said = advice(cost, forest, patterns)
    assert f"walks T{view.tensor_id}'s order" in said and "16.0KiB" in said and "along dim 0" in said
    assert "about 12% of the sectors" in said  # 4 of 32


def test_the_contiguous_control_reads_both_operands_coalesced(profile: Profile, patterns: LoadPatterns) -> None:
    forest = Forest(profile)
    control = _line("both coalesced")
    # b, and the contiguous copy of a.t() made on that line, as the first add there read them (the later
    # steps' adds are the same op on the same layouts: not recorded)
    reads = [*_reads(patterns, forest, _line("b = torch.randn"), "aten::add", control)]
    reads += _reads(patterns, forest, control, "aten::add", control)
    assert len(reads) == 2
    for read in reads:
        assert read.kind == "coalesced" and read.stride == 16  # 16 bytes a lane, vectorized
        assert read.sectors_per_request == pytest.approx(16.0) and read.ideal_per_request == pytest.approx(16.0)


def test_random_indices_gather_and_sorted_ones_read_neighbouring_rows(
    profile: Profile, patterns: LoadPatterns, costs: list[TensorCost]
) -> None:
    forest = Forest(profile)
    table = _line("table = torch.randn")
    random = _read(patterns, forest, table, "aten::embedding", _line("random gather"))
    assert random.kind == "gather" and random.distinct_share >= 0.97 and random.ascending_share < 0.1
    assert 31.0 <= random.sectors_per_request <= 32.0 and random.ideal_per_request == pytest.approx(4.0)
    ordered = _read(patterns, forest, table, "aten::embedding", _line("sorted: neighbouring rows"))
    assert ordered.kind == "coalesced" and ordered.ascending_share > 0.99
    assert ordered.sectors_per_request == pytest.approx(1 + 31 * 4 / 32, rel=0.05)
    cost = next(c for c in costs if c.tensor_id == random.tensor_id)
    assert "4.0 useful bytes per 32-byte sector" in advice(cost, forest, patterns)


def test_a_bias_is_read_once_per_row_and_a_column_broadcast_once_per_warp(
    profile: Profile, patterns: LoadPatterns
) -> None:
    forest = Forest(profile)
    bias = _read(patterns, forest, _line("bias = torch.randn"), "aten::add", _line("bias re-read per row"))
    assert bias.kind == "coalesced" and bias.reads_over == pytest.approx(8192, rel=0.01)
    column = _read(patterns, forest, _line("column = torch.randn"), "aten::add", _line("one element per warp"))
    assert column.kind == "broadcast" and column.stride == 0 and column.sectors_per_request == pytest.approx(1.0)


def test_a_reduction_over_a_sliced_dimension_reads_16_bytes_apart(profile: Profile, patterns: LoadPatterns) -> None:
    forest = Forest(profile)
    read = _read(patterns, forest, _line("wide = torch.randn"), "aten::sum", _line("strided reduction"))
    assert forest.columns["view_op"][read.tensor_id] == "aten::slice"
    assert read.kind == "strided" and read.stride == 16 and read.stride_elements == 4 and read.stride_dim == 1
    assert read.sectors_per_request == pytest.approx(16.0) and read.ideal_per_request == pytest.approx(4.0)


def test_the_stalls_section_says_which_load_is_uncoalesced(profile: Profile) -> None:
    loads = stalled_load_patterns(profile)
    kernels = {k["replay_id"]: k for k in profile.table("stall_kernels").to_pylist()}
    add = [p for (rid, _), p in loads.items() if kernels[rid]["op"] == "aten::add" and p.kind == "strided"]
    assert add and all(short_pattern(p).startswith("strided 16.0KiB") for p in add)


def test_the_csv_has_the_pattern_columns(profile: Profile, patterns: LoadPatterns, costs: list[TensorCost]) -> None:
    forest = Forest(profile)
    rows = list(csv.DictReader(io.StringIO(cost_csv(costs, forest, patterns))))
    b = next(r for r in rows if r["line"].endswith(_line("b = torch.randn")) and not r["view_of"])
    assert (b["pattern"], b["stride_bytes"], b["stride_elements"], b["stride_dim"]) == ("strided", "16384", "4096", "0")
    assert (b["sectors_per_request"], b["ideal_sectors_per_request"]) == ("32.00", "4.00")


def test_a_user_triton_gather_reads_its_table_at_random(patterns: LoadPatterns) -> None:
    # tests/data/tensor_cost/user_kernels (re-recorded with the lanes compared): the Triton gather's loads of
    # the 256 MB table, through a random index, are a gather; its loads of x and of the index are coalesced
    profile = recording(DATA / "tensor_cost" / "user_kernels")
    forest = Forest(profile)
    found = load_patterns(profile)
    gather = {
        forest.describe(p.tensor_id): p.kind for p in found.patterns if "gather_kernel" in p.kernel and not p.is_write
    }
    assert gather == {"float32[67108864]": "gather", "float32[4194304]": "coalesced", "int32[4194304]": "coalesced"}


def test_a_view_read_coalesced_is_not_told_its_loads_are_strided() -> None:
    # tests/data/tensor_cost/user_kernels' `a.t() + b`: the add walks a.t()'s order, so the view is read
    # coalesced (4 sectors per request, the ideal) and b strided. The view's row said so and then advised
    # "the kernel's loads are strided; call .contiguous()": advice must agree with the measurement beside it.
    profile = recording(DATA / "tensor_cost" / "user_kernels")
    forest, found = Forest(profile), load_patterns(profile)
    views = [c for c in tensor_stall_cost(profile) if c.tensor_id >= 0 and forest.columns["view_op"][c.tensor_id]]
    view = next(c for c in views if forest.columns["view_op"][c.tensor_id] == "aten::t")
    read = found.telling_read(view.tensor_id, view.kernels)
    assert read is not None and read.kind == "coalesced"
    said = advice(view, forest, found)
    assert said.startswith("read coalesced") and "loads are strided" not in said, said
    strided = next(q for q in found.peers(read) if q.kind == "strided")
    assert f"walks this view's order (aten::t), which makes it read T{strided.tensor_id} strided" in said


def test_recordings_made_before_the_lanes_were_compared_have_no_pattern() -> None:
    old = recording(DATA / "tensor_cost" / "transposed")
    assert not load_patterns(old).recorded and load_patterns(old).patterns == []
