"""The tensors pass on real GPU recordings (tests/data/tensors/*, made by tenprof on an H200), rebuilt
from their raw files with the tenprof under test: known facts about GPT-2 and the conv block."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from tenprof.analyses.tensors.address_lookup import AddressIndex
from tenprof.analyses.tensors.memory import memory_report
from tenprof.analyses.tensors.tensor_forest import Forest
from tenprof.importers.tensors_import import build_tensors_pass
from tenprof.renderers.forest_dot import forest_dot
from tenprof.renderers.forest_text import forest_text
from tenprof.store.profile import Profile, load_profile
from tenprof.store.writer import PassWriter
from tests.conftest import DATA

TENSOR_CASES = ("gpt2", "conv", "compile_tiny")
# The CUDA caching allocator rounds requests up to 512 bytes and hands out a large cached block whole
# unless more than 1 MiB would be left over; this bounds how far its count may exceed the requests.
BLOCK_SLACK = (1 << 20) + 512


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Profile]:
    root = tmp_path_factory.mktemp("tensor_recordings")
    out = {}
    for case in TENSOR_CASES:
        target = root / case
        shutil.copytree(DATA / "tensors" / case, target)
        raw = target / "tensors" / "raw"
        writer = PassWriter(target, "tensors")
        shutil.copytree(raw, writer.tmp_dir / "raw")
        build_tensors_pass(writer, raw / "tensors.json.gz")
        writer.commit()
        out[case] = load_profile(target)
    return out


def _chain(forest: Forest, tensor: int) -> tuple[tuple[str, tuple[int, ...]], ...]:
    c = forest.columns
    return tuple(
        (str(c["view_op"][n]) or forest.creator_op(n), tuple(int(d) for d in c["shape"][n]))
        for n in forest.path_to_root(tensor)
    )


def test_gpt2_attention_heads_are_view_split_view_transpose_of_c_attn(recorded: dict[str, Profile]) -> None:
    forest = Forest(recorded["gpt2"])
    c = forest.columns
    heads = [t for t in range(forest.size) if c["view_op"][t] == "aten::transpose" and len(c["shape"][t]) == 4]
    chains = Counter(_chain(forest, t) for t in heads)
    qkv = (
        ("aten::transpose", (8, 12, 256, 64)),
        ("aten::view", (8, 256, 12, 64)),
        ("aten::split", (8, 256, 768)),
        ("aten::view", (8, 256, 2304)),
        ("aten::addmm", (2048, 2304)),
    )
    # q, k and v of 12 layers in each of the 2 steps: a new storage every time, so 72 chains.
    assert chains[qkv] == 3 * 12 * 2
    q = next(t for t in heads if _chain(forest, t) == qkv)
    assert "modeling_gpt2.py" in forest.creator_library_line(q)
    assert forest.creator_line(q).endswith("gpt2_train.py:39")
    assert not forest.is_contiguous(q)


def test_gpt2_contiguous_copies_come_from_transposed_views(recorded: dict[str, Profile]) -> None:
    forest = Forest(recorded["gpt2"])
    c = forest.columns
    clones = [t for t in range(forest.size) if forest.creator_op(t) == "aten::clone"]
    from_transpose = [t for t in clones if c["view_op"][int(c["source_tensor_id"][t])] == "aten::transpose"]
    assert len(from_transpose) >= 24
    for t in from_transpose:
        source = int(c["source_tensor_id"][t])
        assert c["parent_tensor_id"][t] == -1 and c["source_op"][t] == "aten::clone"
        assert forest.is_contiguous(t) and not forest.is_contiguous(source)
        assert list(c["shape"][t]) == list(c["shape"][source])


def test_gpt2_parameters_are_roots_that_live_the_whole_run(recorded: dict[str, Profile]) -> None:
    forest = Forest(recorded["gpt2"])
    c = forest.columns
    params = [
        t
        for t in range(forest.size)
        if forest.creator_op(t) == "aten::_to_copy" and forest.creator_line(t).endswith("gpt2_train.py:29")
    ]
    assert len(params) == 148  # GPT-2 small's parameters (lm_head shares wte), moved by model.to("cuda")
    first_step_op = int(
        recorded["gpt2"].sql("select min(op_seq) as s from tensor_ops where step = 0").column(0)[0].as_py()
    )
    for t in params:
        assert c["parent_tensor_id"][t] == -1 and c["device"][t] == "cuda:0"
        assert c["free_op_seq"][t] == -1  # alive at the end
        assert c["reads"][t] >= 2  # read in both steps
        assert c["creator_op_seq"][t] >= first_step_op
        # their CPU originals were freed by .to() (Module._apply swaps .data)
        source = int(c["source_tensor_id"][t])
        assert c["device"][source] == "cpu" and c["free_op_seq"][source] >= 0


def test_gpt2_peak_matches_the_allocator(recorded: dict[str, Profile]) -> None:
    profile = recorded["gpt2"]
    report = memory_report(profile)
    assert report is not None and report.allocator is not None
    a = report.allocator
    torch_peak = report.allocator_peak_bytes
    # Every CUDA storage was found in the allocator's log, at its own op (the two clocks agree).
    assert a.matched_fraction == 1.0
    # The allocator's peak counts blocks; the log and tenprof count requests: equal within its rounding.
    assert 0 <= torch_peak - a.peak_bytes <= a.blocks * BLOCK_SLACK
    assert torch_peak - a.peak_bytes <= 0.01 * torch_peak
    # At the peak, the op outputs tenprof knows are exactly the log's blocks that are op outputs, and the
    # rest is cuBLAS workspace (what is still held at the end, allocated by the first GEMMs).
    assert a.tensor_bytes == a.tensor_requested_bytes
    assert a.other_bytes == report.untracked_at_end_bytes
    assert {o.op for o in a.other} <= {"aten::addmm", "aten::mm"}
    # The storage-level peak (op outputs alone) is the same op here: the loss's log-softmax backward.
    assert report.peak_op_seq == a.op_seq and a.op == "aten::_log_softmax_backward_data"


def test_conv_peak_is_inside_convolution_backward(recorded: dict[str, Profile]) -> None:
    report = memory_report(recorded["conv"])
    assert report is not None and report.allocator is not None
    a = report.allocator
    assert a.matched_fraction == 1.0
    assert 0 <= report.allocator_peak_bytes - a.peak_bytes <= a.blocks * BLOCK_SLACK
    # cuDNN's workspace: allocated and freed inside the op, so only the allocator's log shows it.
    assert a.op == "aten::convolution_backward"
    assert [o.op for o in a.other] == ["aten::convolution_backward"] and a.other_bytes > 100 << 20
    assert report.peak_rounded_bytes < a.peak_bytes


def test_compiled_graphs_are_reported_not_hidden(recorded: dict[str, Profile]) -> None:
    profile = recorded["compile_tiny"]
    status = profile.meta.passes["tensors"]
    assert status.state == "partial" and "torch.compile ran 1 graph" in status.reason
    assert "torch.compile ran" in forest_text(Forest(profile), notes=[status.reason])


def test_every_use_on_the_gpu_is_found_by_address(recorded: dict[str, Profile]) -> None:
    """Each tensor an op used, looked up by its first and last element's address at that op, is found."""
    profile = recorded["gpt2"]
    uses = profile.table("tensor_uses")
    t = profile.table("tensors")
    tid = uses.column("tensor_id").to_numpy()
    seq = uses.column("op_seq").to_numpy()
    keep = t.column("numel").to_numpy()[tid] > 0
    tid, seq = tid[keep], seq[keep]
    first = t.column("data_ptr").to_numpy()[tid]
    last = t.column("byte_end").to_numpy()[tid] - 1
    index = AddressIndex.from_profile(profile)
    for addresses in (first, last):
        m = index.lookup(addresses, seq)
        found = np.zeros(len(tid), dtype=bool)
        hit = m.tensor_id == tid[m.query]
        found[m.query[hit]] = True
        assert found.all(), f"{(~found).sum()} of {len(tid)} uses not found"


def test_forest_files_render_for_the_recordings(recorded: dict[str, Profile], tmp_path: Path) -> None:
    forest = Forest(recorded["gpt2"])
    text = forest_text(forest, "bytes", 10)
    assert text.count("\nT") == 10 and "more groups of trees" in text
    dot = forest_dot(forest, "uses", 10, highlight={forest.path_to_root(100)[-1]})
    assert dot.count("->") >= 1 and "color=red" in dot
