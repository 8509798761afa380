"""Each finding fires on the GPU recording of its trigger workload and not on the fixed variant, and
the numbers it reports agree with the events (recordings: tests/data/finding_*, made by
`bash scripts/gpu_record.sh findings`)."""

from __future__ import annotations

import io
import re
from pathlib import Path

import numpy as np
import orjson
import pytest
from rich.console import Console

from tenprof.analyses.findings import Finding, Thresholds, find_all, not_judged
from tenprof.analyses.findings.context import Context
from tenprof.analyses.timeline.overhead import kernel_launch_ns
from tenprof.analyses.timeline.temporal import temporal_breakdown
from tenprof.cli.main import main
from tenprof.renderers.text import SEEN_SHOWN, render_findings
from tenprof.store.profile import Profile, load_profile
from tests.conftest import DATA
from tests.helpers import findings_of, recording

PAIRS = [
    ("launch-bound", "finding_launch_bound"),
    ("launch-bound", "finding_launch_graph"),
    ("idle-gaps", "finding_host_gaps"),
    ("sync-in-loop", "finding_sync_in_loop"),
    ("sync-in-loop", "finding_sync_tolist"),
    ("sync-in-loop", "finding_sync_mask"),
    ("sync-in-loop", "finding_sync_explicit"),
    ("slow-step", "finding_slow_step"),
    ("pageable-transfer", "finding_pageable_copy"),
    ("hidden-copies", "finding_hidden_copies"),
    ("cold-start", "finding_cold_start"),
    ("variance", "finding_variance"),
    ("torch-compile", "finding_recompile"),
    ("torch-compile", "finding_compile_tiny"),
    ("gemm-without-tensor-cores", "finding_fp32_gemm"),
    ("layout-conversions", "finding_channels_last"),
    ("strided-elementwise", "finding_strided_add"),
    ("far-below-speed-of-light", "finding_odd_gemm"),
]
MiB = 1 << 20


def _one(profile: Profile, finding_id: str) -> Finding | None:
    found = [f for f in findings_of(profile) if f.id == finding_id]
    assert len(found) <= 1
    return found[0] if found else None


@pytest.mark.parametrize("finding_id, case", PAIRS)
def test_fires_on_the_trigger_and_not_on_the_fix(rebuilt: dict[str, Profile], finding_id: str, case: str) -> None:
    bad = _one(rebuilt[case], finding_id)
    assert bad is not None, [f.id for f in findings_of(rebuilt[case])]
    assert bad.cost_ns >= 0 and bad.seen and bad.why and bad.fix
    assert _one(rebuilt[case + "_fixed"], finding_id) is None


def _steady_steps(profile: Profile) -> tuple[np.ndarray, np.ndarray]:
    steps = profile.table("steps")
    keep = steps.column("complete").to_numpy(zero_copy_only=False)
    return steps.column("start_ns").to_numpy()[keep][1:], steps.column("end_ns").to_numpy()[keep][1:]


def _inside(times: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    return ((times[:, None] >= lo[None, :]) & (times[:, None] < hi[None, :])).any(axis=1)


def test_sync_numbers_match_the_api_calls(rebuilt: dict[str, Profile]) -> None:
    profile = rebuilt["finding_sync_in_loop"]
    f = _one(profile, "sync-in-loop")
    assert f is not None
    lo, hi = _steady_steps(profile)
    api = profile.table("api_calls")
    is_sync = np.isin(api.column("name").to_pylist(), ["cudaStreamSynchronize", "cudaDeviceSynchronize"])
    expected = int((is_sync & _inside(api.column("start_ns").to_numpy(), lo, hi)).sum())
    assert expected == len(lo)  # one .item() per step
    assert f.numbers["syncs_per_step"] == expected / len(lo)
    line = next(
        i + 1
        for i, t in enumerate((DATA.parent.parent / "examples/findings/sync_in_loop.py").read_text().splitlines())
        if "loss.item()" in t
    )
    assert f.where[0].endswith(f"sync_in_loop.py:{line}")
    assert any(".item()" in s for s in f.seen)


def test_pageable_bytes_are_the_batch_size(rebuilt: dict[str, Profile]) -> None:
    f = _one(rebuilt["finding_pageable_copy"], "pageable-transfer")
    assert f is not None
    assert f.numbers["bytes_per_step"] == 4096 * 4096 * 4  # the 64 MiB float32 batch, once per step
    assert f.numbers["exposed_ns"] > 0 and f.where[0].endswith("pageable_copy.py:15")


def test_hidden_copy_bytes_and_causes(rebuilt: dict[str, Profile]) -> None:
    profile = rebuilt["finding_hidden_copies"]
    f = _one(profile, "hidden-copies")
    assert f is not None
    # per step: w.t().contiguous() reads+writes 2 x 256 MiB, its bf16 cast 256 + 128 MiB, x's cast 32 + 16 MiB
    steps = len(_steady_steps(profile)[0])
    assert f.numbers["bytes"] == steps * (512 + 384 + 48) * MiB
    text = " ".join(f.seen)
    assert ".contiguous()" in text and "dtype cast" in text
    assert f.where[0].endswith("hidden_copies.py:18")
    assert f.numbers["share_of_gpu"] > 0.5


def test_launch_bound_numbers(rebuilt: dict[str, Profile]) -> None:
    import pyarrow.parquet as pq

    f = _one(rebuilt["finding_launch_bound"], "launch-bound")
    assert f is not None
    # The expectations come from the recorded tables read with pyarrow and joined here, not through
    # tenprof's Context: a kernel counts for the step in which its launch call started (matched by
    # correlation id), as queued GPU work runs after the step that launched it.
    tables = DATA / "finding_launch_bound" / "timeline"
    steps = pq.read_table(tables / "steps.parquet").to_pydict()
    kernels = pq.read_table(tables / "kernels.parquet").to_pydict()
    transfers = pq.read_table(tables / "transfers.parquet").to_pydict()
    api = pq.read_table(tables / "api_calls.parquet").to_pydict()
    # steps 0-5 are complete and 6 was cut off; step 0 also built the model: steps 1-5 are the steady ones
    assert steps["complete"] == [True] * 6 + [False]
    steady = list(zip(steps["start_ns"][1:6], steps["end_ns"][1:6], strict=True))
    launch_at = dict(zip(api["correlation_id"], api["start_ns"], strict=True))
    assert all(c in launch_at for c in kernels["correlation_id"])
    chosen = [
        i for i, c in enumerate(kernels["correlation_id"]) if any(start <= launch_at[c] < end for start, end in steady)
    ]
    durations = [kernels["duration_ns"][i] for i in chosen]
    assert len(chosen) == 5 * 133  # the same 133 kernels every step
    assert f.numbers["kernels_per_step"] == 133
    assert f.numbers["median_kernel_us"] == pytest.approx(float(np.median(durations)) / 1e3)
    # GPU busy: the union of all kernel and copy intervals within the window from the first to the last
    # of those kernels on the GPU, merged by a sweep over the intervals sorted by start
    lo = min(kernels["start_ns"][i] for i in chosen)
    hi = max(kernels["end_ns"][i] for i in chosen)
    busy, covered_to = 0, lo
    for start, end in sorted(
        zip(kernels["start_ns"] + transfers["start_ns"], kernels["end_ns"] + transfers["end_ns"], strict=True)
    ):
        start, end = max(start, covered_to), min(end, hi)
        if end > start:
            busy, covered_to = busy + end - start, end
    assert f.numbers["recorded_gpu_busy_share"] == pytest.approx(busy / (hi - lo))
    assert f.numbers["gpu_busy_share"] < 0.5


def test_idle_gaps_are_the_host_work(rebuilt: dict[str, Profile]) -> None:
    profile = rebuilt["finding_host_gaps"]
    f = _one(profile, "idle-gaps")
    assert f is not None
    steps = len(_steady_steps(profile)[0])
    # each step sleeps 5 ms on the host while the GPU has finished its work
    assert f.numbers["host_not_launching_work_ns"] >= steps * 4.0e6
    assert "host not launching work" in f.title


def test_cold_start_ratio(rebuilt: dict[str, Profile]) -> None:
    import pyarrow.parquet as pq

    f = _one(rebuilt["finding_cold_start"], "cold-start")
    assert f is not None
    # The recorded steps, read with pyarrow: 0-5 complete, 6 cut off by the end of the recording.
    steps = pq.read_table(DATA / "finding_cold_start" / "timeline" / "steps.parquet").to_pydict()
    assert steps["complete"] == [True] * 6 + [False]
    took = [end - start for start, end in zip(steps["start_ns"][:6], steps["end_ns"][:6], strict=True)]
    # By hand, on the host's clock: step 0 took 238.2 ms; steps 1-5 took 559, 271, 247, 220 and 213 us.
    assert took[0] == 238_245_211 and sorted(took[1:])[2] == took[3] == 247_261
    # On the critical path (as the step decomposition times steps): each step ends where the last kernel it
    # launched ends, if later, and the next starts there: steps 1-5 take 585, 346, 288, 258 and 234 us, so
    # their median is step 3's 287.8 us and the first step is about 828 times as long.
    profile = rebuilt["finding_cold_start"]
    launched, kernel_end = kernel_launch_ns(profile), profile.column("kernels", "end_ns")
    end = 0
    on_path = []
    for start, host_end in zip(steps["start_ns"][:6], steps["end_ns"][:6], strict=True):
        mine = (launched >= start) & (launched < host_end)
        last = max(host_end, int(kernel_end[mine].max()) if mine.any() else host_end, end)
        on_path.append(last - max(start, end))
        end = last
    assert on_path == [238_245_211, 585_150, 346_468, 287_802, 257_595, 234_235]
    assert f.numbers["first_step_ns"] == took[0] == on_path[0]
    assert f.numbers["median_step_ns"] == on_path[3]
    assert f.numbers["ratio"] == pytest.approx(238_245_211 / 287_802)
    assert 827 < f.numbers["ratio"] < 828
    assert "--schedule" in f.fix


def test_variance_distribution(rebuilt: dict[str, Profile]) -> None:
    profile = rebuilt["finding_variance"]
    f = _one(profile, "variance")
    assert f is not None
    lo, hi = _steady_steps(profile)
    ctx = Context(profile, Thresholds())
    names = np.array(profile.table("kernels").column("name").to_pylist(), dtype=object)
    chosen = _inside(ctx.kernel_launch_ns, lo, hi) & np.array(["indexFunc" in n for n in names])
    d = profile.column("kernels", "duration_ns")[chosen].astype(float)
    assert f.numbers["launches"] == len(d) == 4 * len(lo)
    assert f.numbers["cv"] == pytest.approx(d.std() / d.mean())
    assert f.numbers["p90_ns"] == pytest.approx(np.percentile(d, 90))


def test_compile_counts_the_compilations_in_the_steady_steps(rebuilt: dict[str, Profile]) -> None:
    profile = rebuilt["finding_recompile"]
    f = _one(profile, "torch-compile")
    assert f is not None
    lo, hi = _steady_steps(profile)
    names = np.array(profile.table("ops").column("name").to_pylist(), dtype=object)
    compiles = (names == "entire_frame_compile") & _inside(profile.column("ops", "start_ns"), lo, hi)
    assert f.numbers["recompiles"] == compiles.sum() == len(lo)  # a new input length in every steady step
    assert f.numbers["compile_ns"] == profile.column("ops", "duration_ns")[compiles].sum()
    assert f.where[0].endswith("recompile.py:20")


def test_tiny_compiled_regions_cost_more_cpu_than_gpu(rebuilt: dict[str, Profile]) -> None:
    profile = rebuilt["finding_compile_tiny"]
    f = _one(profile, "torch-compile")
    assert f is not None and f.numbers["recompiles"] == 0  # compiled before the loop: pure per-call cost
    names = np.array(profile.table("ops").column("name").to_pylist(), dtype=object)
    lo, hi = _steady_steps(profile)
    regions = np.array([n.startswith("Torch-Compiled Region") for n in names]) & _inside(
        profile.column("ops", "start_ns"), lo, hi
    )
    assert f.numbers["recorded_region_cpu_ns"] == profile.column("ops", "duration_ns")[regions].sum()
    assert regions.sum() == 8 * len(lo)  # eight calls per step
    assert f.numbers["region_cpu_ns"] > 2 * f.numbers["region_gpu_ns"]


def test_graph_break_names_the_line_and_counts_the_extra_regions(rebuilt: dict[str, Profile]) -> None:
    from tenprof.analyses.findings import compiled
    from tenprof.analyses.findings.context import Context
    from tenprof.analyses.findings.thresholds import Thresholds

    profile = rebuilt["finding_graph_break"]
    (f,) = compiled.graph_breaks(Context(profile, Thresholds()))  # the check itself: see the test below
    line = next(
        i + 1
        for i, t in enumerate((DATA.parent.parent / "examples/findings/graph_break.py").read_text().splitlines())
        if "graph_break()" in t
    )
    assert f.where == [f"examples/findings/graph_break.py:{line}"]
    steps = len(_steady_steps(profile)[0])
    assert f.numbers["nested_regions"] == 4 * steps  # four calls per step, each entering the resumed graph


def test_not_judged_on_an_imported_trace_without_stacks(tmp_path: Path) -> None:
    trace = DATA / "conv" / "timeline" / "raw" / "kineto_trace.json.gz"
    assert main(["import", str(trace), "-o", str(tmp_path / "imported"), "--quiet"]) == 0
    notes = not_judged(load_profile(tmp_path / "imported"))
    assert any("no Python call paths" in n for n in notes)
    assert findings_of(load_profile(tmp_path / "imported"))  # findings still judged from the events


def test_clean_gpt2_only_has_explained_findings(rebuilt: dict[str, Profile]) -> None:
    """GPT-2 small at batch 8 on an H200 in eager mode: a cold first step (model build, library init),
    ~1100 kernels per step with a median of 8 us (launch-bound, worse under profiling; idle gaps are
    the same cause per device), autocast re-casting fp32 weights to bf16 each step (hidden copies), the
    output layer's GEMMs slowed by the vocabulary of 50257 (not a multiple of 8: far below their speed of
    light); no syncs or pageable copies inside the steps, and no kernel of one shape varying."""
    ids = {f.id for f in findings_of(rebuilt["gpt2"])}
    assert ids <= {"cold-start", "launch-bound", "idle-gaps", "hidden-copies", "far-below-speed-of-light"}
    assert "sync-in-loop" not in ids and "pageable-transfer" not in ids
    copies = _one(rebuilt["gpt2"], "hidden-copies")
    assert copies is not None and any("dtype cast" in s for s in copies.seen)


def test_thresholds_are_overridable(rebuilt: dict[str, Profile], capsys: pytest.CaptureFixture[str]) -> None:
    profile = rebuilt["finding_sync_in_loop"]
    assert _one(profile, "sync-in-loop") is not None
    raised = Thresholds().with_overrides(["sync.min_per_step=2"])
    assert not [f for f in find_all(profile, raised) if f.id == "sync-in-loop"]
    assert main(["report", "--list-thresholds"]) == 0
    listed = capsys.readouterr().out
    assert "sync.min_per_step = 1" in listed and "launch_bound.max_gpu_busy = 0.75" in listed
    assert main(["report", str(DATA / "mlp"), "--threshold", "nope=1"]) == 2


def test_terminal_layout_and_json(rebuilt: dict[str, Profile], capsys: pytest.CaptureFixture[str]) -> None:
    for case in ("gpt2", "finding_hidden_copies", "finding_launch_bound"):
        findings = findings_of(rebuilt[case])
        # costs paid every step first, most costly first; one-off start-up costs after them
        keys = [(f.once, -f.cost_ns) for f in findings]
        assert keys == sorted(keys)
        buffer = io.StringIO()
        render_findings(findings, Console(file=buffer, width=150, color_system=None))
        blocks = buffer.getvalue().rstrip("\n").split("\n")[1:]
        # a finding's first line is its number; a wrapped line of evidence may start with a digit too
        starts = [i for i, line in enumerate(blocks) if re.match(r"\d+\. ", line)]
        for a, b in zip(starts, [*starts[1:], len(blocks)], strict=True):
            # title, up to SEEN_SHOWN lines of evidence (and one saying how many more --json has), where,
            # why and fix: a screenful at most
            seen = [line for line in blocks[a:b] if line.startswith("   seen: ")]
            assert len(seen) <= SEEN_SHOWN + 1 and b - a <= 15, blocks[a:b]
            more = len(findings[starts.index(a)].seen) - SEEN_SHOWN
            assert (more > 0) == (seen[-1].endswith("more (tenprof report --json)") if seen else False)
    assert main(["report", str(DATA / "finding_pageable_copy"), "--json"]) == 0
    data = orjson.loads(capsys.readouterr().out)
    assert data["findings"][0].keys() >= {"id", "title", "cost_ns", "seen", "where", "why", "fix", "numbers"}


def test_temporal_breakdown_sums_to_the_step(rebuilt: dict[str, Profile]) -> None:
    rows = temporal_breakdown(rebuilt["gpt2"])
    assert len(rows) == 3
    for r in rows:
        assert r.compute_ns + r.communication_ns + r.transfers_ns + r.idle_ns == r.duration_ns
        assert r.communication_ns == 0 and r.compute_ns > 0


def test_a_graph_break_in_a_gpu_bound_loop_costs_nothing_and_is_not_reported(rebuilt: dict[str, Profile]) -> None:
    # finding_graph_break's fp32 GEMMs keep the GPU busy: the break's extra dispatch (seen by the check
    # itself) is hidden behind GPU work, so it costs nothing and the report drops it.
    from tenprof.analyses.findings import compiled
    from tenprof.analyses.findings.causes import idle_budget_ns
    from tenprof.analyses.findings.context import Context
    from tenprof.analyses.findings.thresholds import Thresholds

    profile = rebuilt["finding_graph_break"]
    ctx = Context(profile, Thresholds())
    (raw,) = compiled.graph_breaks(ctx)
    # the check sees the break's dispatch and costs it at the GPU's idle time, none here
    assert raw.numbers["dispatch_ns"] > 0 and raw.where and raw.where[0].endswith("graph_break.py:14")
    assert raw.cost_ns == min(raw.numbers["dispatch_ns"], idle_budget_ns(ctx)) == 0
    assert "graph-break" not in {f.id for f in findings_of(profile)}


def test_a_blocking_pageable_copy_is_one_finding(rebuilt: dict[str, Profile]) -> None:
    # The copy blocks the host (a sync) and leaves the GPU idle (a gap): one cause, one finding, whose
    # cost holds the idle after each copy too; all the findings' costs fit in the analysed window.
    from tenprof.analyses.findings.context import Context
    from tenprof.analyses.findings.thresholds import Thresholds

    profile = rebuilt["finding_pageable_copy"]
    found = findings_of(profile)
    ids = [f.id for f in found if not f.once]
    assert "pageable-transfer" in ids and "sync-in-loop" not in ids and "idle-gaps" not in ids
    ctx = Context(profile, Thresholds())
    window = max(int(ctx.step_end[-1]), ctx.gpu_window[1]) - int(ctx.step_start[0])
    assert sum(f.cost_ns for f in found if not f.once) <= window


def test_strided_elementwise_names_the_operand_and_costs_what_matching_layouts_saved(
    rebuilt: dict[str, Profile],
) -> None:
    # `a.t() + b` against `a + b` with `a` stored transposed (8192x8192 fp32, H100): the add's kernel time
    # per step, trigger less fix, is what matching layouts saved; the check's cost must be within 10%.
    f = _one(rebuilt["finding_strided_add"], "strided-elementwise")
    assert f is not None and "input 2" in f.title and "[8192, 1]" in f.seen[1] and "[1, 8192]" in f.seen[1]
    assert f.where == ["examples/findings/strided_add.py:16"]
    from tenprof.analyses.findings.context import Context
    from tenprof.analyses.findings.thresholds import Thresholds

    per_step = {}
    for case in ("finding_strided_add", "finding_strided_add_fixed"):
        profile = rebuilt[case]
        ctx = Context(profile, Thresholds())
        k = profile.table("kernels")
        names = np.array(profile.table("ops").column("name").to_pylist(), dtype=object)
        op = k.column("op_id").to_numpy()
        add = (op >= 0) & (names[np.maximum(op, 0)] == "aten::add") & ctx.in_steps(ctx.kernel_launch_ns)
        per_step[case] = k.column("duration_ns").to_numpy()[add].sum() / ctx.step_count
    saved = per_step["finding_strided_add"] - per_step["finding_strided_add_fixed"]
    steps = Context(rebuilt["finding_strided_add"], Thresholds()).step_count
    assert abs(f.cost_ns / steps - saved) <= 0.1 * saved
    # A transposing copy reads across a layout by definition: that is hidden-copies' finding, not this one's.
    assert _one(rebuilt["finding_hidden_copies"], "strided-elementwise") is None
    assert _one(rebuilt["finding_hidden_copies"], "hidden-copies") is not None


def test_fused_library_kernels_are_not_judged_for_strided_reads(tmp_path: Path) -> None:
    # fp32 GPT-2 (H100): aten::_efficient_attention_backward takes its inputs strided by design, and its
    # bandwidth says nothing against elementwise ops'; it was this check's second finding (20 ms "lost")
    from tests.conftest import rebuild

    profile = rebuild("overhead/gpt2_fp32", tmp_path)  # with the input strides today's importer keeps
    names = set(profile.table("ops").column("name").to_pylist())
    assert "aten::_efficient_attention_backward" in names
    assert _one(profile, "strided-elementwise") is None


# Each sync example: 8 bf16 4096x4096 matmuls, a synchronization, then 1 ms of host work (H100).
SYNC_CAUSES = {
    "finding_sync_in_loop": (".item()", "logged.append(loss.item())"),
    "finding_sync_tolist": ("a copy to the host", "logged.append(metrics.tolist())"),
    "finding_sync_mask": ("boolean-mask indexing", "return scores[scores > 0].sum()"),
    "finding_sync_explicit": ("an explicit synchronize", "torch.cuda.synchronize()"),
}


@pytest.mark.parametrize("case", sorted(SYNC_CAUSES))
def test_a_sync_costs_what_removing_it_saved(rebuilt: dict[str, Profile], case: str) -> None:
    # The saving is measured: the un-profiled step (timed by tenprof with the capture off) of the
    # trigger less that of the fix. The finding's cost per step must be within 10% of it, name the
    # cause and the line, and leave nothing of the same idle to idle-gaps.
    cause, code = SYNC_CAUSES[case]
    f = _one(rebuilt[case], "sync-in-loop")
    assert f is not None and f.numbers["syncs_per_step"] == 1.0
    assert any(cause in s for s in f.seen), f.seen
    script = DATA.parent.parent / "examples/findings" / (case.removeprefix("finding_") + ".py")
    line = next(i + 1 for i, t in enumerate(script.read_text().splitlines()) if t.strip() == code)
    if case == "finding_sync_explicit":  # no torch op around it: placed after the last op before it
        line = next(i + 1 for i, t in enumerate(script.read_text().splitlines()) if t.strip() == "y = (y @ w).relu_()")
        assert f.where[0] == f"outside torch ops, after examples/findings/{script.name}:{line}"
    else:
        assert f.where[0].endswith(f"{script.name}:{line}")
    steps = Context(rebuilt[case], Thresholds()).step_count
    unprofiled = {c: Context(rebuilt[c], Thresholds()).overhead.unprofiled_step_ns for c in (case, case + "_fixed")}
    saved = unprofiled[case] - unprofiled[case + "_fixed"]
    assert saved > 500_000  # the 1 ms of host work, less what the fix still leaves idle
    assert abs(f.cost_ns / steps - saved) <= 0.1 * saved, (f.cost_ns / steps, saved)
    assert _one(rebuilt[case], "idle-gaps") is None


def test_a_one_off_stall_in_a_later_step_is_one_finding(rebuilt: dict[str, Profile]) -> None:
    # slow_step.py: step 5 of 12 calls torch.fft for the first time (cuFFT loads, the transform is
    # planned); the fix calls it once before the loop. The stall is reported once, at the fft line,
    # costing what the fix saved in that step, and no per-step finding counts it.
    profile = rebuilt["finding_slow_step"]
    f = _one(profile, "slow-step")
    assert f is not None and f.once and f.title.startswith("Step 5 took")
    script = DATA.parent.parent / "examples/findings/slow_step.py"
    line = next(i + 1 for i, t in enumerate(script.read_text().splitlines()) if "torch.fft.rfft" in t)
    assert f.where == [f"examples/findings/slow_step.py:{line}"]
    took = {}
    for case in ("finding_slow_step", "finding_slow_step_fixed"):
        steps = rebuilt[case].table("steps")
        five = steps.column("step").to_pylist().index(5)
        took[case] = steps.column("end_ns")[five].as_py() - steps.column("start_ns")[five].as_py()
    saved = took["finding_slow_step"] - took["finding_slow_step_fixed"]
    assert abs(f.cost_ns - saved) <= 0.1 * saved
    ctx = Context(profile, Thresholds())
    assert 5 not in ctx.step_numbers.tolist() and ctx.step_count >= 5
    assert {x.id for x in findings_of(profile)} == {"slow-step", "cold-start"}
    assert any("slow-step check" in note for note in not_judged(profile))
    assert {x.id for x in findings_of(rebuilt["finding_slow_step_fixed"])} == {"cold-start"}


def test_gpu_time_findings_say_when_the_host_bounds_the_step(rebuilt: dict[str, Profile]) -> None:
    # launch_bound.py (H200): the 64-row MLP is launch-bound, and its fp32 GEMMs run without tensor cores:
    # their GPU time is real, but saving it shortens no step until the host is faster. The GEMM finding
    # says so, costs what it saves beyond the GPU's idle time while the host works (nothing here), keeps
    # the GPU time it would save, and ranks below.
    found = findings_of(rebuilt["finding_launch_bound"])
    ids = [f.id for f in found]
    assert ids.index("launch-bound") < ids.index("gemm-without-tensor-cores")
    gemm_bound = found[ids.index("gemm-without-tensor-cores")]
    assert any("faster kernels shorten the steps only by what they save beyond" in s for s in gemm_bound.seen)
    assert gemm_bound.cost_ns < gemm_bound.numbers["gpu_time_saved_ns"]
    gemm = _one(rebuilt["finding_fp32_gemm"], "gemm-without-tensor-cores")  # GPU-bound: no such caveat
    assert gemm is not None and not any("shorten the steps only" in s for s in gemm.seen)
    assert gemm.cost_ns > 0 and "gpu_time_saved_ns" not in gemm.numbers


# Pairs whose fix keeps the work and removes the cause: the finding's cost per step against the
# un-profiled step of the trigger less the fix's. launch_graph (H100): measured by tenprof's capture-off
# steps; the others (H200, recorded before those steps existed): estimated from the ops per step.
SAVINGS = [
    ("launch-bound", "finding_launch_graph"),
    ("idle-gaps", "finding_host_gaps"),
    ("pageable-transfer", "finding_pageable_copy"),
    ("hidden-copies", "finding_hidden_copies"),
]


@pytest.mark.parametrize("finding_id, case", SAVINGS)
def test_the_cost_is_what_the_fix_saved(rebuilt: dict[str, Profile], finding_id: str, case: str) -> None:
    f = _one(rebuilt[case], finding_id)
    assert f is not None
    ctx = {c: Context(rebuilt[c], Thresholds()) for c in (case, case + "_fixed")}
    unprofiled = {c: x.overhead.unprofiled_step_ns for c, x in ctx.items()}
    assert None not in unprofiled.values()
    saved = unprofiled[case] - unprofiled[case + "_fixed"]  # type: ignore[operator]
    assert saved > 0
    assert abs(f.cost_ns / ctx[case].step_count - saved) <= 0.1 * saved, (f.cost_ns / ctx[case].step_count, saved)


def test_tensor_core_advice_is_for_the_recorded_card(tmp_path: Path) -> None:
    # the same fp32 GEMMs, recorded on an H100, read as if from a V100 (compute capability 7.0): no TF32 or
    # bf16 there, fp16 autocast is its tensor-core path
    import shutil

    from tenprof.store.meta import read_meta, write_meta

    h100 = _one(recording(DATA / "finding_fp32_gemm"), "gemm-without-tensor-cores")
    assert h100 is not None and "TF32" in h100.fix
    volta = tmp_path / "volta"
    shutil.copytree(DATA / "finding_fp32_gemm", volta)
    meta = read_meta(volta)
    meta.gpus[0].name, meta.gpus[0].compute_capability = "Tesla V100-SXM2-16GB", "7.0"
    write_meta(volta, meta)
    found = _one(load_profile(volta), "gemm-without-tensor-cores")
    assert found is not None and "float16" in found.fix and "compute capability 7.0" in found.fix
    assert "TF32" not in found.fix.replace("neither TF32 nor", "") and "bfloat16" not in found.fix
    assert not any("TF32" in line for line in found.seen)


def _kernels_trace(name: str, durations: list[float], steps: bool = True) -> bytes:
    """A trace of one kernel launched with one grid and block, without ops or shapes, at these durations; each
    launch in a marked step of its own where `steps`, else all in one pass."""
    events: list[dict[str, object]] = [
        {
            "ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": 1000.0 + 200.0 * i, "dur": d,
            "args": {"device": 0, "stream": 7, "correlation": i + 1, "grid": [4, 1, 1], "block": [512, 1, 1]},
        }
        for i, d in enumerate(durations)
    ]  # fmt: skip
    if steps:
        events += [{"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{i}", "pid": 1, "tid": 1,
                    "ts": 995.0 + 200.0 * i, "dur": 199.0} for i in range(len(durations))]  # fmt: skip
    return orjson.dumps({"schemaVersion": 1, "traceEvents": events, "baseTimeNanoseconds": 0})


def test_variance_claims_one_shape_only_where_shapes_say_so(tmp_path: Path) -> None:
    # five message sizes of an all-reduce share one grid: without recorded shapes their times differ by
    # design, so a collective is not judged; another kernel is, and the finding says the shapes are unknown
    from tenprof.cli.main import main

    times = [10.0, 20.0, 40.0, 80.0, 160.0] * 3
    # nor is a GEMM or a convolution: one grid holds problems of any depth (a ResNet-50's 1x1 and 3x3 convolutions
    # of one output size, without shapes, read as one launch varying 33% on a public RTX 4090 trace)
    for name, expected in (("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", None),
                           ("sm86_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nchw", None),
                           ("ampere_sgemm_128x64_nn", None),
                           ("void cudnn::ops::convertTensor_kernel<float, float>(float*)", "input shapes not recorded"),
                           ("void my_kernel<float>(float*)", "input shapes not recorded")):  # fmt: skip
        trace = tmp_path / "t.json"
        trace.write_bytes(_kernels_trace(name, times))
        out = tmp_path / f"{name[:4]}{len(list(tmp_path.iterdir()))}"
        assert main(["import", "--quiet", str(trace), "-o", str(out)]) == 0
        found = _one(load_profile(out), "variance")
        if expected is None:
            assert found is None
        else:
            assert found is not None and expected in found.seen[0] and "same input shapes" not in found.seen[0]
    # the same launches in one pass, without shapes: one grid's launches in one step (a pass's layers) need not be
    # the same work (a public ResNet-50 pass's batch norms of one grid read as one launch varying 79%)
    trace = tmp_path / "pass.json"
    trace.write_bytes(_kernels_trace("void my_kernel<float>(float*)", times, steps=False))
    assert main(["import", "--quiet", str(trace), "-o", str(tmp_path / "pass")]) == 0
    assert _one(load_profile(tmp_path / "pass"), "variance") is None
    # with shapes recorded too: rank 0 of a two-rank job whose all-reduce waits 21 ms a step for rank 1's slow
    # loader (tests/data/ranks/slow_loader) was told its all-reduce "varies 68%"; that is the wait, judged
    # by the ranks report, not the kernel's variance
    rank0 = _one(recording(DATA / "ranks" / "slow_loader" / "rank00000"), "variance")
    assert rank0 is None or "nccl" not in rank0.title.lower()


def test_idle_gaps_advice_follows_where_the_host_was_when_no_line_was_sampled() -> None:
    # An imported trace has no host samples: the advice for gaps the host launched nothing in comes from the
    # step decomposition's parts inside them (HolisticTraceAnalysis's AlexNet trace: allocator 48%, torch
    # ops 51%, was told to use a DataLoader). Parts holding 30% or more are named, the larger first.
    from types import SimpleNamespace
    from typing import Any, cast

    from tenprof.analyses.findings import idle

    def blocks(*spans: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
        return np.array([a for a, _ in spans], dtype=np.int64), np.array([b for _, b in spans], dtype=np.int64)

    none = blocks()
    parts = {part: none for part in idle._HOST_PARTS}
    parts |= {"allocator": blocks((0, 480)), "dispatch": blocks((480, 990)), "python": blocks((990, 1000))}
    # none computing on the CPU; the host's ops recorded (not every op a launch's own)
    no_ops = SimpleNamespace(
        table=lambda name: SimpleNamespace(num_rows=0),
        strings=lambda table, column: SimpleNamespace(where=lambda test: np.array([False])),
    )
    ctx = cast(Any, SimpleNamespace(parts=parts, graph_captures=0, profile=no_ops))
    host_gap = (1000, "host not launching work", 0, 1, 0, 1000)
    said, fix = idle._host_parts(ctx, [host_gap, (500, idle.QUEUED, 1, 2, 2000, 2500)])
    assert said == ["while the host launched nothing, it was allocating or freeing device memory 48%, in torch ops 51%"]
    assert fix == idle._PART_FIXES["dispatch"] + " " + idle._PART_FIXES["allocator"]
    assert "DataLoader" not in fix and "empty_cache" in fix and "CUDA graph" in fix
    assert idle._fix("host not launching work", "", fix) == fix
    assert idle._fix("host not launching work", "the sampled lines' advice", fix) == "the sampled lines' advice"
    assert idle._fix(idle.QUEUED, "", fix) == idle._FIXES[idle.QUEUED]
    assert idle._host_parts(ctx, [(500, idle.QUEUED, 1, 2, 2000, 2500)]) == ([], "")


def test_idle_gaps_left_after_others_charged_theirs_is_named_by_its_largest_kind() -> None:
    """An A100 trace of HolisticTraceAnalysis's tests (625 ms of its gaps queued behind launched work, 2 ms
    in syncs that sync-in-loop takes) was titled "for other reasons": the title names what is left."""
    from tenprof.analyses.findings.causes import _kind_left_most

    idle = Finding(
        id="idle-gaps",
        title="",
        cost_ns=0,
        why="",
        fix="",
        numbers={
            "idle_ns": 648e6,
            "window_ns": 1e9,
            "work_launched,_waiting_to_start_ns": 625e6,
            "waiting_on_a_synchronization_ns": 2e6,
            "host_not_launching_work_ns": 21e6,
        },
    )
    assert _kind_left_most(idle, {"waiting_on_a_synchronization_ns": 2_000_000}) == "work launched, waiting to start"
    # what is left of a kind partly charged counts, not what it was
    idle.numbers["host_not_launching_work_ns"] = 700e6
    assert _kind_left_most(idle, {"host_not_launching_work_ns": 690_000_000}) == "work launched, waiting to start"
    assert _kind_left_most(idle, {key: int(v) for key, v in idle.numbers.items()}) is None


def test_launches_sharing_only_a_name_are_not_one_shape(tmp_path: Path) -> None:
    # A ROCm trace records no grid or block; without recorded shapes a batch norm's backward in every layer
    # shares one key, its name (public MI300X traces, AMD-AGI/TraceLens's tests, were told it "varies across
    # launches of one shape")
    from tenprof.cli.main import main

    times = [10.0, 20.0, 40.0, 80.0, 160.0] * 3
    trace = tmp_path / "rocm.json"
    events = orjson.loads(_kernels_trace("void batch_norm_backward_kernel<float>(float*)", times))
    for e in (e for e in events["traceEvents"] if e["cat"] == "kernel"):
        e["args"].pop("grid"), e["args"].pop("block")
    trace.write_bytes(orjson.dumps(events))
    assert main(["import", "--quiet", str(trace), "-o", str(tmp_path / "rocm")]) == 0
    assert _one(load_profile(tmp_path / "rocm"), "variance") is None


def _launched_kernel(
    op: str, kernel: str, ext: int, op_at: float, launch_at: float, kernel_at: float, kernel_us: float, stream: int = 7
) -> list[dict[str, object]]:
    """An op on the main thread, its cudaLaunchKernel and the kernel it launched, as Kineto writes them (times
    in us, linked by `ext` as correlation and External id)."""
    return [
        {"ph": "X", "cat": "cpu_op", "name": op, "pid": 1, "tid": 1, "ts": op_at,
         "dur": max(launch_at - op_at + 10.0, 4.0), "args": {"External id": ext}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": launch_at,
         "dur": 2.0, "args": {"correlation": ext, "External id": ext}},
        {"ph": "X", "cat": "kernel", "name": kernel, "pid": 0, "tid": stream, "ts": kernel_at, "dur": kernel_us,
         "args": {"correlation": ext, "device": 0, "stream": stream, "External id": ext}},
    ]  # fmt: skip


def _collective_trace(overlapped: bool, backward: bool = False) -> bytes:
    """Five 4 ms steps: a 1 ms compute kernel, then a 2.5 ms NCCL all-reduce launched after it (alone on the
    GPU), or launched with it on a second stream (under it, and shorter than the step); `backward`: each step
    also runs a (kernel-less) backward node, as training does."""
    events: list[dict[str, object]] = []
    for i in range(5):
        base = 4000.0 * i
        events.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{i}", "pid": 1, "tid": 1,
                       "ts": base, "dur": 3999.0})  # fmt: skip
        if backward:
            events.append({"ph": "X", "cat": "cpu_op", "name": "autograd::engine::evaluate_function: MmBackward0",
                           "pid": 1, "tid": 2, "ts": base + 3000, "dur": 50.0})  # fmt: skip
        for j, (name, stream, ts, dur) in enumerate(
            [("gemm", 7, base + 20, 1000.0),
             ("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", 8,
              base + (30 if overlapped else 1030), 900.0 if overlapped else 2500.0)]
        ):  # fmt: skip
            op = "aten::mm" if j == 0 else "c10d::allreduce_"
            events += _launched_kernel(op, name, 10 * i + j + 1, base + 5 + 5 * j, base + 6 + 5 * j, ts, dur, stream)
    return orjson.dumps({"schemaVersion": 1, "traceEvents": events, "baseTimeNanoseconds": 0})


def _imported(tmp_path: Path, name: str, trace: bytes) -> Profile:
    """The trace written to tmp_path and imported as a user would (`tenprof import`)."""
    from tenprof.cli.main import main

    (tmp_path / f"{name}.json").write_bytes(trace)
    assert main(["import", "--quiet", str(tmp_path / f"{name}.json"), "-o", str(tmp_path / name)]) == 0
    return load_profile(tmp_path / name)


def test_communication_alone_on_the_gpu_is_the_first_finding_and_overlapped_is_silent(tmp_path: Path) -> None:
    # A DDP job's public MI300X trace (AMD-AGI/TraceLens's tests) spent 66% of its step running collectives
    # alone, and was told of a 0.8 ms kernel variance first
    for overlapped in (False, True):
        profile = _imported(tmp_path, f"c{int(overlapped)}", _collective_trace(overlapped))
        found = findings_of(profile)
        exposed = _one(profile, "exposed-communication")
        if overlapped:
            assert exposed is None
        else:
            assert exposed is not None and found[0].id == "exposed-communication"
            steps = Context(profile, Thresholds()).step_count
            assert steps >= 3 and exposed.cost_ns == steps * 2_500_000  # each analysed step's all-reduce, whole
            assert "ncclDevKernel_AllReduce" in exposed.seen[1]


def test_the_fix_for_exposed_collectives_follows_whether_the_recording_trains(tmp_path: Path) -> None:
    # a 4-layer Llama's forward split over two RTX 4090s (a public trace, no backward) was told to overlap DDP's
    # all-reduces with the backward pass
    forward = _one(_imported(tmp_path, "fwd", _collective_trace(False)), "exposed-communication")
    training = _one(_imported(tmp_path, "train", _collective_trace(False, backward=True)), "exposed-communication")
    assert forward is not None and training is not None
    assert "model-parallel forward" in forward.fix and "DDP" not in forward.fix
    assert "let DDP overlap its all-reduces with the backward pass" in training.fix


def test_ranks_waiting_for_a_slow_rank_are_told_of_their_collectives_and_the_slow_rank_is_not() -> None:
    # A four-rank job whose rank 3 computes longer (tests/data/groups40/slowrank): the others wait in their
    # collectives, rank 3 does not, though its first all-reduce, launched in a step left to the slow-step
    # check (waiting for the others to start), runs on for 47 ms into the analysed steps
    job = DATA / "groups40" / "slowrank"
    for rank in (0, 1, 2):
        found = findings_of(recording(job / f"rank0000{rank}"))
        assert found[0].id == "exposed-communication" and any("one of 4 ranks" in s for s in found[0].seen)
    assert _one(recording(job / "rank00003"), "exposed-communication") is None


def _small_kernels_trace(capturing: bool) -> bytes:
    """Five 2 ms steps of twenty ops, each launching a 5 us kernel: launch-bound. `capturing`: each step
    begins and ends a graph capture around them (as a server capturing its CUDA graphs at start does)."""
    events: list[dict[str, object]] = []
    for i in range(5):
        base = 2000.0 * i
        events.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{i}", "pid": 1, "tid": 1,
                       "ts": base, "dur": 1999.0})  # fmt: skip
        if capturing:
            events += [
                {"ph": "X", "cat": "cuda_runtime", "name": name, "pid": 1, "tid": 1, "ts": base + at, "dur": 3.0,
                 "args": {"correlation": 100_000 + 2 * i + k}}
                for k, (name, at) in enumerate((("cudaStreamBeginCapture", 2.0), ("cudaStreamEndCapture", 1990.0)))
            ]  # fmt: skip
        for j in range(20):
            ts = base + 10 + 95 * j
            events += _launched_kernel("aten::add", "add_kernel", 100 * i + j + 1, ts, ts + 60, ts + 75, 5.0)
    return orjson.dumps({"schemaVersion": 1, "traceEvents": events, "baseTimeNanoseconds": 0})


def test_steps_that_capture_cuda_graphs_are_not_told_to_use_them(tmp_path: Path) -> None:
    # A public trace of vLLM capturing its CUDA graphs (AMD-AGI/TraceLens's tests: 25 hipStreamBeginCapture)
    # was told to "replay the step as a CUDA graph"
    from tenprof.analyses.findings import not_judged
    from tenprof.analyses.findings.launch_bound import CAPTURING

    for capturing in (False, True):
        profile = _imported(tmp_path, f"cap{int(capturing)}", _small_kernels_trace(capturing))
        first = findings_of(profile)[0]
        assert first.id in ("launch-bound", "idle-gaps"), first.id
        notes = not_judged(profile)
        if capturing:
            assert CAPTURING in first.fix and "replay the step as" not in first.fix
            assert any("capture CUDA graphs (" in n for n in notes)
        else:
            assert "CUDA graph" in first.fix and CAPTURING not in first.fix
            assert not any("capture CUDA graphs" in n for n in notes)


def _preprocessing_trace(steps: int) -> bytes:
    """`steps` marked steps of 60 ms: 50 ms of the host's Python (no op: decoding and resizing an input)
    before ten ops, each launching a 0.5 ms kernel."""
    events: list[dict[str, object]] = []
    for i in range(steps):
        base = 60_000.0 * i
        events.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{i}", "pid": 1, "tid": 1,
                       "ts": base, "dur": 59_990.0})  # fmt: skip
        for j in range(10):
            ts = base + 50_000 + 900 * j
            events += _launched_kernel("aten::conv2d", "conv_kernel", 100 * i + j + 1, ts, ts + 20, ts + 40, 500.0)
    return orjson.dumps({"schemaVersion": 1, "traceEvents": events, "baseTimeNanoseconds": 0})


def test_a_single_steps_work_before_its_first_kernel_is_idle_gpu_time(tmp_path: Path) -> None:
    # A public trace of one video-classification request (AMD-AGI/TraceLens's TimeSformer on an H100) spent
    # 218 ms of its 382 ms step decoding and preprocessing before its first kernel: the step's largest part,
    # and no finding said so, the GPU's idle time being judged from its first kernel on
    found = findings_of(_imported(tmp_path, "one", _preprocessing_trace(1)))
    assert found and found[0].id == "idle-gaps" and found[0].cost_ns >= 45_000_000, [(f.id, f.cost_ns) for f in found]
    assert any("from the step's start" in s for s in found[0].seen)
    assert any("in Python outside torch ops" in s for s in found[0].seen)
