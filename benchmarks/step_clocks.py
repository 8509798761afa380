"""A tenprof run's steps timed with the capture off beside a plain run's same steps: wall time, the main
thread's CPU time and Python's garbage collections in each (capture/step_clocks.py says why).

    python benchmarks/step_clocks.py PROFILE_DIR MARKS.json [--json OUT.json]
    python benchmarks/step_clocks.py --pool ROUND.json [ROUND.json ...]

PROFILE_DIR: a `tenprof run` profile (its timeline/raw/callsites.json.gz keeps the step bounds, the
`step_clocks` key and, on the GPU, each timed step's period between CUDA events, `timed_gpu_ns`);
MARKS.json: `benchmarks/step_marks.py`'s marks of a plain run of the same command, with MARKS.clocks.json
beside it. Prints one row per timed step number and the medians; a step's CPU share near
its wall time is a thread at work, well below it a thread that waited (for the interpreter's lock, the GPU,
the kernel). Also printed: the report's un-profiled step as timed (`timed_unprofiled_step_ns` of
analyses.timeline.overhead, what a user reads). `--pool` reads the --json files of several rounds (a plain
process and a tenprof run each) and prints, for each of the three readings of the timed steps (host wall,
GPU period, the report's), each round's ratio to the plain run's same steps (median wall) and their geometric
mean with a 90% interval over rounds (benchmarks/timed_ratio.paired_ratio). No torch: it reads files.
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from tenprof.core.rawfiles import CALLSITES_FILE

TIMED = 1  # a step bound's state: the step that begins there is timed (capture.overhead_plan)


@dataclass(frozen=True)
class StepReading:
    step: int
    wall_ms: float
    cpu_ms: float
    gc_ms: float  # collections inside the step
    full_collections: int  # of them, generation 2
    others_cpu_ms: float | None = None  # the process's other threads' CPU time in the step (None: not kept)
    gpu_ms: float | None = None  # between the CUDA events at its boundaries (timed steps on the GPU; None: none)


def readings(
    windows: list[tuple[int, int]],
    cpu: list[tuple[int, int]],
    collections: list[list[int]],
    first: int,
    process: list[tuple[int, int]] | None = None,
) -> list[StepReading]:
    """Steps `first`, `first` + 1, ...: each one's reading from its window on the perf clock and the thread's
    CPU time (and, where kept, the process's) at the boundary that began it and at the one that ended it."""
    out = []
    for k, ((start, end), (cpu_start, cpu_end)) in enumerate(zip(windows, cpu, strict=True)):
        inside = [(max(a, start), min(b, end), g) for a, b, g in collections if b > start and a < end]
        thread_ms = (cpu_end - cpu_start) / 1e6
        out.append(
            StepReading(
                first + k,
                (end - start) / 1e6,
                thread_ms,
                sum(b - a for a, b, _ in inside) / 1e6,
                sum(1 for _, _, g in inside if g == 2),
                (process[k][1] - process[k][0]) / 1e6 - thread_ms if process else None,
            )
        )
    return out


def clocks_path(marks_path: Path) -> Path:
    """Where benchmarks/step_marks.py keeps a marks file's thread CPU times and collections."""
    return marks_path.with_name(marks_path.stem + ".clocks.json")


def profile_steps(profile_dir: Path) -> tuple[list[StepReading], set[int]]:
    """The run's steps (from the second on), with their GPU periods where kept, and which of them were timed
    with the capture off."""
    sidecar: dict[str, Any] = json.loads(
        gzip.decompress((profile_dir / "timeline" / "raw" / CALLSITES_FILE).read_bytes())
    )
    bounds, clocks = sidecar["step_bounds"], sidecar.get("step_clocks")
    if not clocks:
        raise SystemExit(f"{profile_dir}: no step_clocks in its sidecar (recorded by a tenprof before them)")
    if clocks.get("collections_dropped"):
        print(f"note: {clocks['collections_dropped']} collections past the cap were not kept: GC times undercount")
    cpu_at = clocks["thread_cpu_ns"]
    # step n (n >= 1) runs from the boundary that began it (its resume) to the one that ended it (its end)
    windows = [(bounds[n - 1][1], bounds[n][0]) for n in range(1, len(bounds))]
    cpu = [(cpu_at[n - 1][1], cpu_at[n][0]) for n in range(1, len(bounds))]
    whole_at = clocks.get("process_cpu_ns")
    whole = [(whole_at[n - 1][1], whole_at[n][0]) for n in range(1, len(bounds))] if whole_at else None
    timed = {n for n in range(1, len(bounds)) if bounds[n - 1][2] == TIMED}
    periods = {int(step): ns / 1e6 for step, ns in sidecar.get("timed_gpu_ns", [])}
    steps = readings(windows, cpu, clocks["collections"], first=1, process=whole)
    return [replace(s, gpu_ms=periods.get(s.step)) for s in steps], timed


def threads_by_name(clocks: dict[str, Any], steps: list[int]) -> tuple[dict[str, float], float] | None:
    """Where the run kept every thread's CPU time (TENPROF_THREAD_CLOCKS=1): each thread name's median CPU
    time (ms) over `steps` (step n between the reads at boundaries n - 1 and n; the process's first thread,
    the script's, named "main"), and the median of the calling thread's involuntary context switches a step."""
    threads = clocks.get("threads")
    if not threads or not threads["cpu_ns"]:
        return None
    cpu, names = threads["cpu_ns"], threads["names"]
    main = str(threads.get("main") or min(names, key=int))  # (files from before "main" was kept: the lowest TID)
    per_name: dict[str, list[float]] = {}
    for n in steps:
        if not 1 <= n < len(cpu):
            continue
        took: dict[str, float] = {}
        for tid, ns in cpu[n].items():
            name = "main" if tid == main else names.get(tid, "?")
            took[name] = took.get(name, 0.0) + (ns - cpu[n - 1].get(tid, ns)) / 1e6
        for name, ms in took.items():
            per_name.setdefault(name, []).append(ms)
    switches = threads["switches"]
    involuntary = [switches[n][1] - switches[n - 1][1] for n in steps if 1 <= n < len(switches)]
    medians = {name: statistics.median(values) for name, values in per_name.items()}
    return medians, statistics.median(involuntary) if involuntary else 0.0


def print_threads(tenprof: tuple[dict[str, float], float] | None, plain: tuple[dict[str, float], float] | None) -> None:
    """The two runs' threads side by side, busiest first (only where both kept them)."""
    if tenprof is None or plain is None:
        return
    print("| thread | tenprof CPU ms a timed step | plain CPU ms, same steps |")
    print("|---|---|---|")
    names = sorted(set(tenprof[0]) | set(plain[0]), key=lambda n: -max(tenprof[0].get(n, 0), plain[0].get(n, 0)))
    for name in names:
        if max(tenprof[0].get(name, 0), plain[0].get(name, 0)) >= 0.05:
            print(f"| {name} | {_ms(tenprof[0].get(name))} | {_ms(plain[0].get(name))} |")
    print(f"main thread's involuntary context switches a step: tenprof {tenprof[1]:.1f}, plain {plain[1]:.1f}")


def report_timed_ms(profile_dir: Path) -> float | None:
    """The profile's un-profiled step as its report times it (None where it was not measured)."""
    from tenprof.analyses.timeline.overhead import measure
    from tenprof.store.profile import load_profile

    timed = measure(load_profile(profile_dir)).timed_unprofiled_step_ns
    return None if timed is None else timed / 1e6


def plain_steps(marks_path: Path) -> list[StepReading]:
    """The plain run's steps from the second on (marks[n] opens step n; step 0 is the script before the loop)."""
    marks: list[int] = json.loads(marks_path.read_text())
    clocks = json.loads(clocks_path(marks_path).read_text())
    cpu_at = [pair[0] for pair in clocks["thread_cpu_ns"]]  # a plain boundary resumes at once
    windows = [(marks[n], marks[n + 1]) for n in range(1, len(marks) - 1)]
    cpu = [(cpu_at[n - 1], cpu_at[n]) for n in range(1, len(marks) - 1)]
    whole_at = [pair[0] for pair in clocks.get("process_cpu_ns", [])]
    whole = [(whole_at[n - 1], whole_at[n]) for n in range(1, len(marks) - 1)] if whole_at else None
    return readings(windows, cpu, clocks["collections"], first=1, process=whole)


READINGS = ("host wall", "GPU period", "report")  # the timed steps' three readings, as --pool names them


def round_medians(document: dict[str, Any] | list[dict[str, Any]]) -> tuple[float, dict[str, float]]:
    """One round's --json document (or, from before 2026-12-07's GPU periods, its rows alone): the plain run's
    median wall over the timed step numbers, and the timed steps' readings (READINGS) that the round has."""
    rows = document["rows"] if isinstance(document, dict) else document
    both = [row for row in rows if row.get("plain")]
    if not both:
        raise ValueError("no timed step has a plain step of the same number")
    timed = {"host wall": statistics.median(row["tenprof"]["wall_ms"] for row in both)}
    periods = [row["tenprof"].get("gpu_ms") for row in both]
    if all(p is not None for p in periods):
        timed["GPU period"] = statistics.median(p for p in periods if p is not None)
    if isinstance(document, dict) and document.get("report_timed_ms") is not None:
        timed["report"] = document["report_timed_ms"]
    return statistics.median(row["plain"]["wall_ms"] for row in both), timed


def pool(paths: list[Path]) -> None:
    """Each round's ratios and, per reading, the rounds' geometric mean with its interval (see the module)."""
    from timed_ratio import paired_ratio  # benchmarks/, this script's folder, is first on the path

    rounds = [round_medians(json.loads(path.read_text())) for path in paths]
    for path, (plain, timed) in zip(paths, rounds, strict=True):
        each = ", ".join(f"{name} {ms:.2f} ms ({ms / plain:.3f})" for name, ms in timed.items())
        print(f"{path.name}: plain {plain:.2f} ms; timed: {each}")
    for name in READINGS:
        pairs = [(plain, timed[name]) for plain, timed in rounds if name in timed]
        if len(pairs) >= 2:
            r = paired_ratio(pairs)
            print(
                f"{name}: {len(pairs)} rounds, geometric mean {r.ratio:.3f} (90% {r.low:.3f}-{r.high:.3f}): {r.verdict}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("profile", type=Path, nargs="?")
    parser.add_argument("marks", type=Path, nargs="?")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    parser.add_argument("--pool", type=Path, nargs="+", help="pool the --json files of several rounds instead")
    args = parser.parse_args()
    if args.pool:
        pool(args.pool)
        return
    if args.profile is None or args.marks is None:
        parser.error("give PROFILE_DIR and MARKS.json, or --pool")
    run, timed = profile_steps(args.profile)
    plain = {s.step: s for s in plain_steps(args.marks)}
    print(
        "| step | tenprof wall | GPU period | CPU | other threads | GC (full) | plain wall | CPU | other threads "
        "| GC (full) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    pairs = [(s, plain.get(s.step)) for s in run if s.step in timed]
    for s, p in pairs:
        other = (
            f"{p.wall_ms:.2f} | {p.cpu_ms:.2f} | {_ms(p.others_cpu_ms)} | {p.gc_ms:.2f} ({p.full_collections})"
            if p
            else "- | - | - | -"
        )
        print(
            f"| {s.step} | {s.wall_ms:.2f} | {_ms(s.gpu_ms)} | {s.cpu_ms:.2f} | {_ms(s.others_cpu_ms)} | {s.gc_ms:.2f} "
            f"({s.full_collections}) | {other} |"
        )
    both = [(s, p) for s, p in pairs if p is not None]
    if both:
        med = statistics.median
        print(
            f"medians: tenprof wall {med(s.wall_ms for s, _ in both):.2f} CPU {med(s.cpu_ms for s, _ in both):.2f} "
            f"GC {sum(s.gc_ms for s, _ in both):.2f} in all; plain wall {med(p.wall_ms for _, p in both):.2f} "
            f"CPU {med(p.cpu_ms for _, p in both):.2f} GC {sum(p.gc_ms for _, p in both):.2f} in all; plain's "
            f"every step from the fourth: wall {med(p.wall_ms for p in plain.values() if p.step > 3):.2f} "
            f"CPU {med(p.cpu_ms for p in plain.values() if p.step > 3):.2f}"
        )
        others = [(s.others_cpu_ms, p.others_cpu_ms) for s, p in both]
        if all(a is not None and b is not None for a, b in others):
            print(
                f"other threads' CPU, medians: tenprof {med(a for a, _ in others if a is not None):.2f}, plain "
                f"{med(b for _, b in others if b is not None):.2f}"
            )
    timed_steps = sorted(timed)
    sidecar = json.loads(gzip.decompress((args.profile / "timeline" / "raw" / CALLSITES_FILE).read_bytes()))
    plain_clocks = json.loads(clocks_path(args.marks).read_text())
    print_threads(threads_by_name(sidecar["step_clocks"], timed_steps), threads_by_name(plain_clocks, timed_steps))
    report = report_timed_ms(args.profile)
    print(f"the report's un-profiled step: {_ms(report)} ms")
    if args.json:
        rows = [{"tenprof": asdict(s), "plain": asdict(p) if p else None} for s, p in pairs]
        args.json.write_text(json.dumps({"rows": rows, "report_timed_ms": report}, indent=1))


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


if __name__ == "__main__":
    main()
