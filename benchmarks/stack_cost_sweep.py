"""Would the trace's own reading of the profiler's cost (analyses/timeline/profiler_cost.py) fit torch.profiler
traces that recorded input shapes and Python stacks, once corrected for what they add? A diagnostic, not an
analysis: it prints, for a sweep of corrections, each trace's estimated un-profiled step.

    python benchmarks/stack_cost_sweep.py --timings benchmarks/results/<file>.jsonl ... [--pair A B ...]

The model swept: the back-to-back gap g of a trace with shapes holds each op's shape recording, so the host's
pace at the callbacks is read as (1 - f) g, the ops and launches charged as profiler_cost does at that pace,
the shape recording f g once an op, and the Python tracer t us per python_function event in the step
(f = t = 0 is profiler_cost's plain reading). Timed rows: the corpus's host-bound `_stack` traces
(tests/data/corpus_traces) against their pairs' un-profiled timings (read as benchmarks/corpus_table.py reads
them); a --pair is two traces of one program and step (no timings) whose estimates should agree, printed as
their ratio. A trace's un-profiled step is never put below its GPU work, as tenprof's estimate is not.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from statistics import median

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.corpus_table import read_timings  # noqa: E402

from tenprof.analyses.timeline import overhead, profiler_cost  # noqa: E402
from tenprof.importers.timeline_import import import_trace  # noqa: E402
from tenprof.store.profile import load_profile  # noqa: E402

# the corpus pairs whose host bounds the step and whose traces have back-to-back gaps (python_elements and
# graph_break have none; launch_bound's one timing is of the MLP launch_graph times at 3.3-4.6 ms in eight)
TIMED = (
    "empty_cache",
    "empty_cache_fixed",
    "empty_cache_transformer",
    "empty_cache_transformer_fixed",
    "foreach_off",
    "foreach_off_fixed",
    "launch_graph",
    "launch_bound",
)
FRACTIONS = (0.0, 0.1, 0.2, 0.3)
TRACER_US = (0.0, 0.5, 1.0)


@dataclass(frozen=True)
class Reading:
    step_ms: float  # the recorded steady step (median), as tenprof's estimate takes it
    gpu_ms: float  # GPU work per step
    ops: float  # recorded ops per step
    launches: float  # launches of GPU work per step
    gap_us: float  # the back-to-back gap (median)
    python: float  # python_function events per step, counted in the trace file


def python_events(trace: Path, steps: list[int]) -> float:
    """python_function events per step: those starting inside each step's CPU-side ProfilerStep#N range."""
    events = json.loads(gzip.decompress(trace.read_bytes()) if trace.suffix == ".gz" else trace.read_bytes())
    events = events["traceEvents"]
    bounds = {
        int(e["name"].split("#")[1]): (e["ts"], e["ts"] + e["dur"])
        for e in events
        if e.get("ph") == "X"
        and e.get("cat") == "user_annotation"
        and str(e.get("name", "")).startswith("ProfilerStep#")
    }
    starts = np.sort(np.array([e["ts"] for e in events if e.get("cat") == "python_function"], dtype=float))
    counts = [
        int(np.searchsorted(starts, bounds[s][1]) - np.searchsorted(starts, bounds[s][0])) for s in steps if s in bounds
    ]
    return float(np.mean(counts)) if counts else 0.0


def read(trace: Path, into: Path) -> Reading | None:
    import_trace(trace, into, force=True, max_workers=1)
    profile = load_profile(into)
    steps = profile.table("steps")
    complete = np.asarray(steps.column("complete").to_numpy(zero_copy_only=False), dtype=bool)
    rows = overhead._steady(profile, complete & overhead.capture_on(profile))  # as overhead._estimate chooses them
    numbers = steps.column("step").to_numpy()[rows]
    gap = profiler_cost.back_to_back_gap_ns(profile, numbers)
    if gap is None or not len(numbers):
        return None
    in_steps = overhead._in_chosen_steps(profile, rows, profile.column("api_calls", "start_ns"))
    measured = overhead.measure(profile)
    return Reading(
        float(np.median(steps.column("duration_ns").to_numpy()[rows])) / 1e6,
        (measured.gpu_busy_per_step_ns or 0.0) / 1e6,
        float(np.isin(profile.column("ops", "step"), numbers).sum()) / len(numbers),
        float((profiler_cost.launches(profile) & in_steps).sum()) / len(numbers),
        gap / 1e3,
        python_events(trace, [int(n) for n in numbers]),
    )


def unprofiled_ms(r: Reading, shapes: float, tracer_us: float) -> float:
    cost = profiler_cost.host_cost_ns(r.gap_us * 1e3, r.ops, r.launches, shapes)
    cost += tracer_us * 1e3 * r.python
    return max(r.step_ms - cost / 1e6, r.gpu_ms)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timings", type=Path, action="append", default=[], help="a corpus timings file (repeatable)")
    parser.add_argument("--pair", nargs=2, type=Path, action="append", default=[], help="two traces of one step")
    args = parser.parse_args()
    steps_ms, cards = read_timings(args.timings)
    with tempfile.TemporaryDirectory() as tmp:
        timed: dict[str, tuple[Reading, float]] = {}
        for name in TIMED:
            pair, fixed = name.removesuffix("_fixed"), name.endswith("_fixed")
            trace = ROOT / "tests" / "data" / "corpus_traces" / f"{name}_stack.json.gz"
            reading = read(trace, Path(tmp) / name) if trace.exists() else None
            if reading is not None and (pair, fixed) in steps_ms:
                timed[name] = (reading, median(steps_ms[(pair, fixed)]))
        pairs = [
            (f"{a.parent.name}/{a.name}", read(a, Path(tmp) / f"a{k}"), read(b, Path(tmp) / f"b{k}"))
            for k, (a, b) in enumerate(args.pair)
        ]
        print(f"timings on {', '.join(sorted(cards)) or '(none)'}")
        for name, (r, plain) in timed.items():
            print(
                f"{name}_stack: recorded {r.step_ms:.2f} ms, plain loop {plain:.2f} ms, GPU {r.gpu_ms:.2f} ms, "
                f"{r.ops:.0f} ops, {r.launches:.0f} launches, {r.python:.0f} python_function events, "
                f"gap {r.gap_us:.2f} us"
            )
        for k, ((label, a, b), (_, other)) in enumerate(zip(pairs, args.pair, strict=True)):
            print(f"pair {k}: a {label}, b {other.parent.name}/{other.name}")
            for side, one in (("a", a), ("b", b)):
                if one is not None:
                    print(
                        f"pair {k} {side}: recorded {one.step_ms:.2f} ms, GPU {one.gpu_ms:.2f} ms, {one.ops:.0f} ops, "
                        f"{one.launches:.0f} launches, {one.python:.0f} python_function events, gap {one.gap_us:.2f} us"
                    )
        print("\n| shapes f | tracer t (us) | " + " | ".join(f"{n} (x plain)" for n in timed) + " | pairs (a / b) |")
        print("|---" * (len(timed) + 3) + "|")
        for tracer in TRACER_US:
            for shapes in FRACTIONS:
                cells = [
                    f"{unprofiled_ms(r, shapes, tracer):.2f} ({unprofiled_ms(r, shapes, tracer) / p:.2f})"
                    for r, p in timed.values()
                ]
                both = [
                    f"{unprofiled_ms(a, shapes, tracer):.2f} / {unprofiled_ms(b, shapes, tracer):.2f}"
                    for _, a, b in pairs
                    if a is not None and b is not None
                ]
                print(f"| {shapes:.2f} | {tracer:.1f} | {' | '.join(cells)} | {'; '.join(both) or 'n/a'} |")
        fits = [
            (shapes, tracer)
            for shapes in np.arange(0.0, 0.5, 0.01)
            for tracer in np.arange(0.0, 4.0, 0.02)
            if all(
                0.75 <= unprofiled_ms(r, shapes, tracer) / p <= 1.25
                for name, (r, p) in timed.items()
                if name != "launch_bound"
            )
            and all(agree(a, b, shapes, tracer) for _, a, b in pairs if a is not None and b is not None)
        ]
        print(
            f"\n(f, t) on a grid of 0-0.49 x 0-3.98 us with every timed row but launch_bound within 25% of its plain "
            f"loop and each pair's two estimates within 1.5x of each other, each above its GPU work: {len(fits)}"
            + (f" (f {min(f for f, _ in fits):.2f}-{max(f for f, _ in fits):.2f})" if fits else "")
        )


def agree(a: Reading, b: Reading, shapes: float, tracer: float) -> bool:
    ua, ub = unprofiled_ms(a, shapes, tracer), unprofiled_ms(b, shapes, tracer)
    return max(ua, ub) <= 1.5 * min(ua, ub) and ua > a.gpu_ms and ub > b.gpu_ms


if __name__ == "__main__":
    main()
