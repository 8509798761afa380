"""`tenprof diff` (analyses.compare.diff) on recorded pairs whose answer is known (tests/data/finding_* and their
_fixed runs, H100/H200 recordings): the top line is the planted one, the finding the fix removed is gone,
and the lines' changes, the kernels with no line and the remainder add up to the step change. A CPU pair
recorded here: one line runs six matmuls instead of one, and a comment moves it down a line (matched
by its text)."""

from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pyarrow as pa
import pytest

from tenprof.analyses.compare.diff import _paired_variants, _same_op, _step_change, diff, read_side
from tenprof.analyses.compare.line_keys import LineKeys
from tenprof.cli.main import main
from tenprof.store.schema import TABLES
from tests.conftest import DATA
from tests.helpers import recording

EXAMPLES = DATA.parent.parent / "examples" / "findings"


def _pair(name: str):  # type: ignore[no-untyped-def]
    before = read_side(recording(DATA / name), name)
    after = read_side(recording(DATA / f"{name}_fixed"), f"{name}_fixed")
    return diff(before, after)


def _line(example: str, text: str) -> str:
    source = (EXAMPLES / example).read_text().splitlines()
    return f"examples/findings/{example}:{next(i + 1 for i, t in enumerate(source) if text in t)}"


@pytest.mark.parametrize(
    ("name", "example", "planted", "finding"),
    [
        ("finding_fp32_gemm", "fp32_gemm.py", "(x @ w @ w).relu_()", "gemm-without-tensor-cores"),
        ("finding_sync_in_loop", "sync_in_loop.py", "logged.append(loss.item())", "sync-in-loop"),
        ("finding_hidden_copies", "hidden_copies.py", "x.to(torch.bfloat16) @ w.t()", "hidden-copies"),
    ],
)
def test_the_top_line_is_the_planted_one_and_its_finding_is_gone(
    name: str, example: str, planted: str, finding: str
) -> None:
    d = _pair(name)
    assert d.lines[0].what.endswith(_line(example, planted)), [c.what for c in d.lines[:3]]
    assert any(text.startswith(f"{finding}:") for text in d.vanished) and not d.appeared
    assert d.step.after_ns < d.step.before_ns
    # the rows add up to the step's change on the run's basis: the lines' GPU (or CPU) changes, what has
    # no line, and the remainder
    lines = sum(c.delta_ns if d.basis == "GPU" else c.cpu_delta_ns for c in d.lines)
    assert lines + d.no_line_delta_ns + d.remainder_ns == pytest.approx(d.step.delta_ns)


def test_a_gpu_bound_change_is_explained_by_its_line() -> None:
    # float32 GEMMs without tensor cores, then with TF32: the step is the GPU's; the matmul line's GPU
    # change is the step change but for a small remainder
    d = _pair("finding_fp32_gemm")
    assert d.step.beyond_noise and d.step.p_value < 0.05  # 4 steps a side that do not overlap: p = 0.029
    top = d.lines[0]
    assert top.delta_ns < 0 and abs(d.remainder_ns) < 0.05 * abs(d.step.delta_ns)
    assert abs(top.delta_ns) > 0.9 * abs(d.step.delta_ns)
    # the GPU was busy nearly the whole step before and after (kernels back to back)
    assert d.before.busy_share > 0.9 and d.after.busy_share > 0.8
    # the breakdown splits each step (its parts add up to the mean step); compute went down with the GEMMs
    # (more than the line's kernel time: the first window also holds earlier steps' queued kernels)
    for side in (d.before, d.after):
        assert sum(side.breakdown.values()) == pytest.approx(sum(side.step_ns) / len(side.step_ns))
    assert d.after.breakdown["compute"] - d.before.breakdown["compute"] < 0.9 * top.delta_ns
    gone = [c for c in d.kernels if c.status == "gone"]
    new = [c for c in d.kernels if c.status == "new"]
    assert any("f32f32_f32f32" in c.what for c in gone) and any("tf32" in c.what for c in new)


def test_a_host_side_change_is_explained_by_its_lines_cpu_time() -> None:
    # .item() in the loop: the GPU does the same work; the line's CPU time (the host waiting) is what went
    d = _pair("finding_sync_in_loop")
    top = d.lines[0]
    assert top.before_ns == top.after_ns == 0 and top.cpu_delta_ns < -0.8 * abs(d.step.delta_ns)
    assert d.step.beyond_noise and d.step.p_value < 0.05


def test_traces_are_imported_on_the_fly(capsys: pytest.CaptureFixture[str]) -> None:
    # a torch.profiler trace (no tenprof, no stacks) against itself: nothing changed, said in one report
    trace = str(DATA / "torch_traces" / "fp32_gemm.json.gz")
    assert main(["diff", trace, trace]) == 0
    out = capsys.readouterr().out
    assert "(+0ns, +0%)" in out and "within the step-to-step noise" in out and "no Python lines" in out


def test_eager_and_compiled_runs_of_one_model_meet_at_the_models_lines() -> None:
    # tests/data/diff/mlp_eager and mlp_compiled (H100, examples/compiled_train.py --model mlp, --mode eager
    # and default): Inductor's fused kernels go to the lines of the aten ops they fuse (the Block's two
    # lines), and the GEMMs the compiled code calls go to the line where the eager run ran them
    source = (DATA.parent.parent / "examples" / "compiled_train.py").read_text().splitlines()
    up = next(i + 1 for i, t in enumerate(source) if "gelu(self.up(x))" in t)
    down = next(i + 1 for i, t in enumerate(source) if "self.norm(x + 0.5 * self.down(h))" in t)
    before = read_side(recording(DATA / "diff" / "mlp_eager"), "eager")
    after = read_side(recording(DATA / "diff" / "mlp_compiled"), "compiled")
    rows = {c.what: c for c in diff(before, after).lines}
    up_row, down_row = rows[f"examples/compiled_train.py:{up}"], rows[f"examples/compiled_train.py:{down}"]
    assert up_row.before_ns > 0 and down_row.before_ns > 0  # eager: the ops at their own lines
    assert up_row.after_count > 0 and down_row.after_count > 0  # compiled: fused kernels placed there too
    # the up projection's forward GEMM (addmm, 256x1024 @ 1024x4096 + bias), called by the compiled code
    gemm = next(
        sig
        for sig in after.region_ops
        if sig[0] == "aten::addmm" and sig[1].startswith("[[4096], [256, 1024], [1024, 4096]")
    )
    assert up_row.after_ns >= after.region_ops[gemm][0]
    # the GEMMs the compiled code calls (out= variants, one shape more) nearly all find their eager line;
    # what stays at the call is the one GEMM eager does not run (addmm with a 2-D bias, in the backward)
    call = next(i + 1 for i, t in enumerate(source) if "out = compiled(batch" in t)
    left = rows[f"examples/compiled_train.py:{call}"].after_ns
    assert 0 < left < 0.2 * sum(gpu for gpu, *_ in after.region_ops.values())


def test_two_gpus_are_named_and_the_lines_still_meet(capsys: pytest.CaptureFixture[str]) -> None:
    # the same compiled MLP recorded on an H200 (tests/data/compiled/mlp_default) and an H100
    # (tests/data/diff/mlp_compiled): both cards named, and the optimizer's line, memory-bound, is slower on
    # the H100 (its memory is slower than the H200's)
    assert main(["diff", str(DATA / "compiled" / "mlp_default"), str(DATA / "diff" / "mlp_compiled")]) == 0
    out = capsys.readouterr().out
    assert "NVIDIA H200" in out and "NVIDIA H100 80GB HBM3" in out and "two different GPUs" in out
    before = read_side(recording(DATA / "compiled" / "mlp_default"), "h200")
    after = read_side(recording(DATA / "diff" / "mlp_compiled"), "h100")
    optimizer = next(c for c in diff(before, after).lines if c.what.endswith("compiled_train.py:68"))
    assert optimizer.before_count == optimizer.after_count and optimizer.after_ns > optimizer.before_ns


def _old_profile(file: Path, lines: list[int], created_at: str):  # type: ignore[no-untyped-def]
    # a profile built before frames kept their text: the frames table has none
    rows = {
        "frame_id": list(range(len(lines))),
        "parent_frame_id": [-1] * len(lines),
        "file": [str(file)] * len(lines),
        "line": lines,
        "function": ["f"] * len(lines),
        "depth": [0] * len(lines),
        "is_user": [True] * len(lines),
        "text": [None] * len(lines),
    }
    frames = pa.table(rows, schema=TABLES["frames"])
    return SimpleNamespace(table=lambda name: frames, meta=SimpleNamespace(created_at=created_at))


def test_an_older_profile_reads_its_lines_only_from_a_file_not_changed_since(tmp_path: Path) -> None:
    job = tmp_path / "job.py"
    job.write_text("x = f(x)\ny = 2\nx = f(x)\n")
    made = "2026-01-01T00:00:00+00:00"
    os.utime(job, (time.time(), 1767225600 - 60))  # written a minute before the profile was made
    keys = LineKeys(_old_profile(job, [1, 2, 3], made))  # type: ignore[arg-type]
    # two lines with one text stay apart, counted by line number
    assert [keys.of_frame(i)[0] for i in range(3)] == [
        ("job.py", "x = f(x)", 0),
        ("job.py", "y = 2", 0),
        ("job.py", "x = f(x)", 1),
    ]
    os.utime(job, (time.time(), 1767225600 + 60))  # edited after: its text now is not the run's
    keys = LineKeys(_old_profile(job, [1, 2], made))  # type: ignore[arg-type]
    assert [keys.of_frame(i) for i in range(2)] == [
        (("job.py", "line 1", 0), f"{job}:1"),
        (("job.py", "line 2", 0), f"{job}:2"),
    ]


def test_one_rule_decides_and_its_p_value_is_the_one_shown() -> None:
    two = _step_change([10, 11], [20, 21])  # all apart, but by chance once in three orderings
    assert not two.beyond_noise and two.p_value == pytest.approx(1 / 3) and "too few steps to tell" in two.test
    four = _step_change([10, 11, 12, 10], [20, 21, 22, 20])  # apart: 2 / C(8, 4) = 0.029, all 70 splits
    assert four.beyond_noise and four.p_value == pytest.approx(2 / 70) and "all 70 splits" in four.test
    mixed = _step_change([10, 21, 12, 20], [11, 22, 13, 21])  # interleaved: no evidence
    assert not mixed.beyond_noise and mixed.p_value > 0.05
    many = np.random.default_rng(1)
    b, a = many.normal(100, 5, 1000), many.normal(102, 5, 1000)  # many steps: a sample of the splits
    large = _step_change(b.tolist(), a.tolist())
    assert large.p_value < 0.01 and large.beyond_noise and "a sample of" in large.test
    # whatever the case, "beyond the noise" is said exactly when the p-value shown is under 0.05
    for case in (two, four, mixed, large):
        assert case.beyond_noise == (case.p_value < 0.05)


def test_an_op_and_its_out_variant_are_one_row_whatever_the_names_hold() -> None:
    # op names may hold spaces (record_function names); the shapes are compared, not a split string
    assert _same_op(("my op", "[[2, 3], [3, 4]]"), ("my op", "[[2, 3], [3, 4], [2, 4]]"))
    assert not _same_op(("my op", "[[2, 3], [3, 4]]"), ("my op", "[[2, 3], [3, 5], [2, 4]]"))
    side = read_side(recording(DATA / "finding_fp32_gemm"), "any")
    before = dataclasses.replace(
        side,
        ops={"aten::mm [[8,8],[8,8]]": (5.0, 1.0)},
        op_signatures={"aten::mm [[8,8],[8,8]]": ("aten::mm", "[[8, 8], [8, 8]]")},
    )
    after = dataclasses.replace(
        side,
        ops={"aten::mm [[8,8],[8,8],[8,8]]": (4.0, 1.0)},
        op_signatures={"aten::mm [[8,8],[8,8],[8,8]]": ("aten::mm", "[[8, 8], [8, 8], [8, 8]]")},
    )
    assert _paired_variants(before, after) == (
        {"aten::mm [[8,8],[8,8]]": (5.0, 1.0)},
        {"aten::mm [[8,8],[8,8]]": (4.0, 1.0)},
    )
