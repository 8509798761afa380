"""The run's un-profiled step against the plain loop's, over many processes: a ratio with its interval.

    python benchmarks/timed_ratio.py RESULTS.json [RESULTS.json ...]

Reads the results of `benchmarks/overhead.py --configs plain,tenprof-timed` (one or several calls, pooled
per card, workload and plan of the un-profiled steps) and prints, per workload and plan: how many processes
of each kind, the plain loop's step in each (its spread between processes is the yardstick's own noise), the
runs' un-profiled steps, the ratio of the two medians and its 90% interval (a bootstrap over processes: each
side's runs resampled with replacement, a fixed seed, so the same files give the same interval), and the
verdict against issue 36's goal (within 10% of the plain loop): "within" when the whole interval lies in
0.90-1.10, "outside" when it lies wholly beyond, else "not told apart" (more processes are needed).

A process is the unit: the steps of one process share its placement and its machine's mood, so they are
not independent samples of the loop's speed. Figures of two cards are never pooled.
"""

from __future__ import annotations

import argparse
import json
import statistics
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tenprof.capture.overhead_plan import OverheadPlan  # no torch

GOAL = 0.10  # issue 36: the un-profiled step within 10% of the plain loop's
RESAMPLES = 4000
SEED = 36


@dataclass(frozen=True)
class TimedRatio:
    plain_ms: list[float]  # each plain process's step (its loop over its steps)
    timed_ms: list[float]  # each tenprof run's un-profiled step (the median of its timed steps)
    ratio: float  # median timed over median plain
    low: float  # the 90% interval of `ratio`
    high: float

    @property
    def verdict(self) -> str:
        if self.low >= 1 - GOAL and self.high <= 1 + GOAL:
            return "within"
        if self.low > 1 + GOAL or self.high < 1 - GOAL:
            return "outside"
        return "not told apart"


def timed_ratio(plain_ms: list[float], timed_ms: list[float]) -> TimedRatio:
    """The ratio of the medians, with a bootstrap interval over processes (needs at least two of each)."""
    if len(plain_ms) < 2 or len(timed_ms) < 2:
        raise ValueError("at least two processes of each kind are needed for an interval")
    plain, timed = np.asarray(plain_ms, dtype=float), np.asarray(timed_ms, dtype=float)
    rng = np.random.default_rng(SEED)
    plain_medians = np.median(rng.choice(plain, size=(RESAMPLES, len(plain))), axis=1)
    timed_medians = np.median(rng.choice(timed, size=(RESAMPLES, len(timed))), axis=1)
    ratios = timed_medians / plain_medians
    return TimedRatio(
        plain_ms=list(plain_ms),
        timed_ms=list(timed_ms),
        ratio=float(np.median(timed) / np.median(plain)),
        low=float(np.quantile(ratios, 0.05)),
        high=float(np.quantile(ratios, 0.95)),
    )


def paired_ratio(pairs: list[tuple[float, float]]) -> TimedRatio:
    """Rounds that each ran a plain process and a tenprof run and compared the same step numbers
    (benchmarks/step_clocks.py): (plain, timed) per round. The ratio is the geometric mean of the rounds'
    ratios, with a bootstrap interval over rounds: pairing takes out what one round's machine and compile
    cache share, which the unpaired ratio above leaves in its interval."""
    if len(pairs) < 2:
        raise ValueError("at least two rounds are needed for an interval")
    logs = np.log(np.asarray([timed / plain for plain, timed in pairs], dtype=float))
    rng = np.random.default_rng(SEED)
    means = np.exp(np.mean(rng.choice(logs, size=(RESAMPLES, len(logs))), axis=1))
    return TimedRatio(
        plain_ms=[plain for plain, _ in pairs],
        timed_ms=[timed for _, timed in pairs],
        ratio=float(np.exp(np.mean(logs))),
        low=float(np.quantile(means, 0.05)),
        high=float(np.quantile(means, 0.95)),
    )


# The plan of a timed run whose results do not name it (overhead.py before 2026-12-02), by its configuration:
# tenprof-timed then had one settling step and one timed (tenprof's default until 2026-12-01).
PLAN_OF_CONFIG = {
    "tenprof-timed": OverheadPlan(settling=1, timed_run=1).label,
    "tenprof-timed-s3t3": OverheadPlan(settling=3, timed_run=3).label,
}


def processes(documents: list[dict]) -> dict[tuple[str, str, str], tuple[list[float], list[float]]]:
    """(card, workload, plan) -> (each plain process's step, each timed run's un-profiled step under that
    plan), in ms; the plans (as OverheadPlan.label names them: "3 settling, 3 timed", ...) each set
    against the same plain processes."""
    plain: dict[tuple[str, str], list[float]] = {}
    timed: dict[tuple[str, str, str], list[float]] = {}
    for document in documents:
        card = str(document.get("machine", {}).get("card") or "no GPU")
        for run in document.get("runs", []):
            key = (card, run["workload"])
            if run["config"] == "plain" and run.get("loop_s") and run.get("steps"):
                plain.setdefault(key, []).append(1e3 * run["loop_s"] / run["steps"])
            elif run["config"].startswith("tenprof-timed"):
                plan = run.get("plan") or PLAN_OF_CONFIG.get(run["config"], run["config"])
                mine = timed.setdefault((*key, plan), [])
                if run.get("timed_step_s"):
                    mine.append(1e3 * run["timed_step_s"])
    return {
        (card, workload, config): (plain.get((card, workload), []), steps)
        for (card, workload, config), steps in timed.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results", nargs="+", type=Path, help="benchmarks/overhead.py results (JSON)")
    args = parser.parse_args()
    documents = [json.loads(path.read_text()) for path in args.results]
    print(
        "| card | workload | plan | plain processes: step (ms) | tenprof runs: un-profiled step (ms) | "
        "ratio of medians | 90% interval | within 10%? |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for (card, workload, plan), (plain, timed) in sorted(processes(documents).items()):
        workload = f"{workload} | {plan}"
        each = f"{len(plain)}: {', '.join(f'{v:.2f}' for v in plain)}"
        mine = f"{len(timed)}: {', '.join(f'{v:.2f}' for v in timed)}"
        if len(plain) < 2 or len(timed) < 2:
            print(f"| {card} | {workload} | {each} | {mine} | - | - | too few processes |")
            continue
        r = timed_ratio(plain, timed)
        spread = (max(plain) - min(plain)) / statistics.median(plain)
        print(
            f"| {card} | {workload} | {each} (spread {100 * spread:.0f}%) | {mine} | {r.ratio:.3f} | "
            f"{r.low:.3f}-{r.high:.3f} | {r.verdict} |"
        )


if __name__ == "__main__":
    main()
