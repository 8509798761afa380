"""The tensors pass on the CPU: identities, the forest, roles, lifetimes, memory, and the files it writes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tenprof.analyses.tensors.address_lookup import AddressIndex
from tenprof.analyses.tensors.memory import memory_report
from tenprof.analyses.tensors.tensor_forest import Forest
from tenprof.cli.main import main
from tenprof.store.profile import Profile, load_profile
from tests.conftest import DATA, shared_recording
from tests.integration.conftest import Recorded

SCRIPT = """\
import torch
import tenprof

w = torch.nn.Parameter(torch.randn(512, 32))
x = torch.randn(8, 16, 32)
for i in range(3):
    h = x.view(8, 16, 4, 8).transpose(1, 2)
    c = h.contiguous()
    y = torch.nn.functional.linear(c.view(8, 512), w.t())
    out = torch.empty(8)
    torch.sum(y.detach(), dim=1, out=out)
    out.add_(1)
    unused = x * 2
    loss = y.sum()
    loss.backward()
    tenprof.step()
"""
LINE = {text.strip(): n for n, text in enumerate(SCRIPT.splitlines(), start=1)}


def _record(tmp: Path) -> None:
    script = tmp / "job.py"
    script.write_text(SCRIPT)
    assert main(["run", "--quiet", "--passes", "timeline,tensors", "-o", str(tmp / "prof"), str(script)]) == 0


@pytest.fixture(scope="module")
def profile(tmp_path_factory: pytest.TempPathFactory) -> Profile:
    return load_profile(shared_recording(tmp_path_factory, "tensors_pass", _record) / "prof")


def _made_by(profile: Profile, op: str, line: str) -> list[int]:
    forest = Forest(profile)
    return [
        t
        for t in range(forest.size)
        if forest.creator_op(t) == op and forest.creator_line(t).endswith(f"job.py:{LINE[line]}")
    ]


@pytest.mark.xdist_group("tensors_pass")
def test_pass_is_complete_and_writes_the_forest_files(profile: Profile) -> None:
    assert profile.meta.passes["tensors"].state == "complete", profile.meta.passes["tensors"].reason
    assert profile.meta.passes["timeline"].state == "complete"
    text = (profile.directory / "forest.txt").read_text()
    assert text.startswith("Tensor forest:")
    dot = (profile.directory / "forest.dot").read_text()
    assert dot.startswith("digraph tensor_forest") and "style=dashed" in dot and "style=solid" in dot


@pytest.mark.xdist_group("tensors_pass")
def test_view_chain_has_the_right_parents(profile: Profile) -> None:
    forest = Forest(profile)
    c = forest.columns
    line = "h = x.view(8, 16, 4, 8).transpose(1, 2)"
    transposes = _made_by(profile, "aten::transpose", line)
    assert transposes, "the transpose view was not recorded"
    t = transposes[0]
    view = int(c["parent_tensor_id"][t])
    assert c["view_op"][t] == "aten::transpose" and c["is_view"][t]
    assert c["view_op"][view] == "aten::view" and list(c["shape"][view]) == [8, 16, 4, 8]
    base = int(c["parent_tensor_id"][view])
    assert forest.creator_op(base) == "aten::randn" and not c["is_view"][base]
    assert forest.path_to_root(t) == [t, view, base]
    # The same view made again each step is one tensor, not three.
    assert len(transposes) == 1 and int(c["reads"][t]) == 3
    assert list(c["stride"][t]) == [512, 8, 32, 1] and not forest.is_contiguous(t)


@pytest.mark.xdist_group("tensors_pass")
def test_contiguous_is_a_transformation_from_the_transposed_view(profile: Profile) -> None:
    forest = Forest(profile)
    c = forest.columns
    copies = _made_by(profile, "aten::clone", "c = h.contiguous()")
    assert len(copies) == 3  # a new storage each step
    for copy in copies:
        assert not c["is_view"][copy] and c["parent_tensor_id"][copy] == -1
        assert c["source_op"][copy] == "aten::clone"
        assert c["view_op"][int(c["source_tensor_id"][copy])] == "aten::transpose"
        assert forest.is_contiguous(copy)


@pytest.mark.xdist_group("tensors_pass")
def test_roles_of_out_and_in_place_arguments(profile: Profile) -> None:
    uses = profile.sql(
        "select o.name, u.role, count(*) as n from tensor_uses u join tensor_ops o using (op_seq) "
        "where o.name in ('aten::sum', 'aten::add_') group by all order by all"
    ).to_pylist()
    got = {(r["name"], r["role"]): r["n"] for r in uses}
    assert got[("aten::sum", "write")] == 3  # out=
    assert got[("aten::add_", "readwrite")] >= 3  # out.add_(1) (autograd's grad accumulation adds more)
    # The out= tensor is the one torch.empty made, not a new tensor.
    forest = Forest(profile)
    out_tensors = _made_by(profile, "aten::empty", "out = torch.empty(8)")
    assert len(out_tensors) == 3
    assert all(int(forest.columns["writes"][t]) == 2 for t in out_tensors)


@pytest.mark.xdist_group("tensors_pass")
def test_parameter_is_a_root_that_lives_the_whole_run(profile: Profile) -> None:
    forest = Forest(profile)
    c = forest.columns
    (w,) = [t for t in _made_by(profile, "aten::randn", "w = torch.nn.Parameter(torch.randn(512, 32))")]
    assert c["parent_tensor_id"][w] == -1 and c["free_op_seq"][w] == -1 and c["first_use_op_seq"][w] == 0
    kids = forest.children.get(w, [])
    assert [c["view_op"][k] for k in kids] == ["aten::t"]


@pytest.mark.xdist_group("tensors_pass")
def test_backward_tensors_get_the_forward_line(profile: Profile) -> None:
    ops = profile.table("tensor_ops").to_pylist()
    backward = [o for o in ops if o["is_backward"]]
    assert backward and any(o["forward_op_seq"] >= 0 for o in backward)
    by_seq = {o["op_seq"]: o for o in ops}
    for o in backward:
        if o["forward_op_seq"] >= 0:
            assert not by_seq[o["forward_op_seq"]]["is_backward"]
    # w's gradient: made by a backward mm, attributed to the line of the linear() call.
    forest = Forest(profile)
    grads = _made_by(profile, "aten::mm", "y = torch.nn.functional.linear(c.view(8, 512), w.t())")
    assert any(by_seq[int(forest.columns["creator_op_seq"][g])]["is_backward"] for g in grads), (
        "no backward-made tensor reached the forward line"
    )


@pytest.mark.xdist_group("tensors_pass")
def test_dead_tensor_is_reported(profile: Profile) -> None:
    report = memory_report(profile)
    assert report is not None
    dead_lines = {(d.creator_op, d.line.rsplit(":", 1)[-1]) for d in report.dead}
    assert ("aten::mul", str(LINE["unused = x * 2"])) in dead_lines


@pytest.mark.xdist_group("tensors_pass")
def test_every_input_address_finds_its_tensor(profile: Profile) -> None:
    """Each tensor read by an op, looked up at that op by its first byte, returns (at least) itself."""
    uses = profile.table("tensor_uses")
    t = profile.table("tensors")
    tid = uses.column("tensor_id").to_numpy()
    seq = uses.column("op_seq").to_numpy()
    numel = t.column("numel").to_numpy()[tid]
    keep = numel > 0
    tid, seq = tid[keep], seq[keep]
    ptr = t.column("data_ptr").to_numpy()[tid]
    m = AddressIndex.from_profile(profile).lookup(ptr, seq)
    found = set(zip(m.query.tolist(), m.tensor_id.tolist(), strict=True))
    missing = [i for i in range(len(tid)) if (i, int(tid[i])) not in found]
    assert not missing


# One CPU capture of the tensors pass alone, shared by the tests below (a capture takes seconds): a known
# allocation pattern (lines 2-8), a storage swapped under a parameter without an op (lines 10-14: what
# Module.to() does), a view made contiguous (lines 15-16); then whether Dynamo was loaded (lines 17-18).
TENSORS_ONLY = """\
import torch
a = torch.empty(256 * 1024)        # 1 MiB
b = torch.empty(512 * 1024)        # 2 MiB
del a
c = torch.empty(1024 * 1024)       # 4 MiB
d = b + 1                          # 2 MiB: the peak, b + c + d
del b, c, d
e = torch.empty(1024)
s = torch.sparse_coo_tensor(torch.tensor([[0, 1], [1, 0]]), torch.ones(2), (2, 2)).to_dense()
p = torch.nn.Parameter(torch.zeros(64))
with torch.no_grad():
    p.add_(1)                      # p is seen (and its tensor object remembered) here
p.data = torch.ones(128)
y = p * 3
x = torch.ones(1000)
z = x.view(10, 100).t().contiguous()
import sys
open(__file__ + ".dynamo", "w").write(str("torch._dynamo" in sys.modules))
"""


def _record_tensors_only(tmp: Path) -> None:
    script = tmp / "mem.py"
    script.write_text(TENSORS_ONLY)
    assert main(["run", "--quiet", "--passes", "tensors", "-o", str(tmp / "prof"), str(script)]) == 0


@pytest.fixture(scope="module")
def tensors_only(tmp_path_factory: pytest.TempPathFactory) -> Profile:
    return load_profile(shared_recording(tmp_path_factory, "tensors_only", _record_tensors_only) / "prof")


@pytest.mark.xdist_group("tensors_only")
def test_the_pass_loads_no_dynamo_into_a_script_that_does_not_load_it(tensors_only: Profile) -> None:
    # torch wraps a dispatch mode's hook in a switch that imports Dynamo on the first op (1.1 s of the
    # pass's child here); capture.dispatch_mode keeps the hook out of Dynamo only once the script loads it
    assert (tensors_only.directory.parent / "mem.py.dynamo").read_text() == "False"


@pytest.mark.xdist_group("tensors_only")
def test_peak_of_a_known_allocation_pattern(tensors_only: Profile) -> None:
    profile = tensors_only
    report = memory_report(profile)
    assert report is not None and report.device == "cpu"
    assert report.peak_bytes == 8 * 1024 * 1024
    assert report.peak_op == "aten::add" and report.peak_line.endswith("mem.py:6")
    assert sorted(h.nbytes for h in report.at_peak) == [2 << 20, 2 << 20, 4 << 20]
    lifetimes = profile.table("storages").to_pylist()
    first = lifetimes[0]
    assert first["nbytes"] == 1 << 20 and first["free_op_seq"] == 2  # freed before the third op
    # the sparse tensor has no storage: not in the forest, and the pass says so (partial) rather than skip it
    status = profile.meta.passes["tensors"]
    assert status.state == "partial" and "without a storage (sparse, nested)" in status.reason


@pytest.mark.xdist_group("tensors_pass")
def test_export_forest_and_errors(profile: Profile, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "f.txt"
    assert main(["export", str(profile.directory), "--format", "forest", "--metric", "uses", "-o", str(target)]) == 0
    assert "ordered by uses" in target.read_text()
    dot = tmp_path / "f.dot"
    assert main(["export", str(profile.directory), "-o", str(dot)]) == 0
    assert dot.read_text().startswith("digraph")
    no_tensors = DATA / "conv"  # a profile recorded with the timeline pass alone
    capsys.readouterr()
    assert main(["export", str(no_tensors), "--format", "forest", "-o", str(tmp_path / "x.txt")]) == 2
    assert "no tensors pass" in capsys.readouterr().err


@pytest.mark.xdist_group("tensors_pass")
def test_lookup_rows_are_consistent_with_storages(profile: Profile) -> None:
    t = profile.table("tensors")
    s = profile.table("storages")
    sid = t.column("storage_id").to_numpy()
    base = s.column("address").to_numpy()[sid]
    end = base + s.column("nbytes").to_numpy()[sid]
    nonempty = t.column("numel").to_numpy() > 0
    assert (t.column("byte_start").to_numpy() >= base)[nonempty].all()
    assert (t.column("byte_end").to_numpy() <= end)[nonempty].all()
    assert np.array_equal(s.column("storage_id").to_numpy(), np.arange(s.num_rows))


@pytest.mark.xdist_group("tensors_only")
def test_data_assignment_is_followed_to_the_new_storage(tensors_only: Profile) -> None:
    """`param.data = other` (what Module.to() does) swaps storage without an op; reads go to the new one."""
    profile = tensors_only
    rows = profile.sql(
        "select t.shape, o.name from tensor_uses u join tensors t using (tensor_id) join tensor_ops o using (op_seq) "
        "where o.name = 'aten::mul' and u.role = 'read' and t.numel > 1"
    ).to_pylist()
    assert rows == [{"shape": [128], "name": "aten::mul"}]


@pytest.mark.xdist_group("raising_run")
def test_a_failing_script_stops_the_later_passes_and_keeps_the_first(raising_run: Recorded) -> None:
    # run with --passes all: timeline and tensors here
    assert raising_run.ran.code == 1
    profile = load_profile(raising_run.profile)
    assert profile.meta.passes["timeline"].state == "partial"
    tensors = profile.meta.passes["tensors"]
    assert tensors.state == "failed" and tensors.reason.startswith("not run: the script stopped early")
    assert "tenprof: the tensors pass failed: not run" in raising_run.ran.err


@pytest.mark.xdist_group("tensors_only")
def test_report_of_a_tensors_only_profile_shows_memory(
    tensors_only: Profile, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", str(tensors_only.directory)]) == 0
    text = capsys.readouterr().out
    assert "no timeline pass in this profile" in text and "Memory (cpu" in text
    assert "Not judged" not in text
