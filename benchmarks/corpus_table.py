"""The corpus table of docs/FINDINGS.md: for each pair of examples/findings/corpus.json, the first finding
tenprof gives on its GPU recordings (tenprof run; plain torch.profiler without and with with_stack,
imported), whether the fixed twin raises the planted finding, and the first finding's cost per step
against the time the fix saved per step un-profiled (measured on the same card by
benchmarks/corpus_record.py).

    python benchmarks/corpus_table.py [--timings benchmarks/results/<file>.jsonl ...]

Reads the recordings in tests/data (tenprof run: finding_<...>; torch.profiler: corpus_traces/); prints
markdown. Nothing here is typed in: every cell is computed from a recording or a timing.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from statistics import median

from tenprof.analyses.findings import Finding, find_all
from tenprof.analyses.findings.context import Context
from tenprof.analyses.findings.thresholds import Thresholds
from tenprof.importers.timeline_import import import_trace
from tenprof.store.profile import Profile, load_profile

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
CORPUS = ROOT / "examples" / "findings" / "corpus.json"


def pairs() -> list[dict]:
    return list(json.loads(CORPUS.read_text())["pairs"])


def twin_of(pair: dict) -> str:
    return str(pair.get("twin", pair["recording"] + "_fixed"))


def first(profile: Profile) -> Finding | None:
    """The first finding as a user reads them: those paid every step first, then the one-offs other than
    cold start (which every recording's first step has); as tests/unit/test_corpus.py judges it."""
    return next((f for f in find_all(profile) if not f.once or f.id != "cold-start"), None)


def rebuilt(case: str, into: Path) -> Profile | None:
    """A tenprof recording of tests/data with its tables rebuilt from its raw files by this tenprof (some
    were stored before a column they now have, such as the ops' input strides), as the tests read them."""
    if not (DATA / case / "meta.json").exists():
        return None
    if (into / case).exists():  # a twin two pairs share
        return load_profile(into / case)
    sys.path.insert(0, str(ROOT))
    from tests.conftest import rebuild

    return rebuild(case, into)


def imported(name: str, into: Path) -> Profile | None:
    trace = DATA / "corpus_traces" / f"{name}.json.gz"
    if not trace.exists():
        return None
    import_trace(trace, into / name, force=True, max_workers=1)
    return load_profile(into / name)


def read_timings(paths: list[Path]) -> tuple[dict[tuple[str, bool], list[float]], set[str]]:
    """Each (pair, fixed)'s step times over the files in order, and the cards they were timed on: repeats of
    one command are pooled (their median is taken), a command with other arguments starts afresh."""
    timed: dict[tuple[str, bool], tuple[list[str], list[float]]] = {}
    cards: set[str] = set()
    for path in paths:
        for line in path.read_text().splitlines():
            row = json.loads(line)
            key, argv = (row["pair"], row["fixed"]), list(row.get("args", []))
            if key not in timed or timed[key][0] != argv:
                timed[key] = (argv, [])
            timed[key][1].append(row["step_ms"])
            cards.add(row["card"])
    return {key: times for key, (_, times) in timed.items()}, cards


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--timings",
        type=Path,
        action="append",
        default=[],
        help="a timings file (repeatable): timings of a pair run with the same arguments add up across files; "
        "a later file that ran it with other arguments replaces the earlier ones' (its script changed)",
    )
    args = parser.parse_args()
    steps_ms, cards = read_timings(args.timings)
    card = ", ".join(sorted(cards))
    print(
        "| pair | planted | first: tenprof run | first: torch.profiler | first: + with_stack | twin raises it "
        "| cost / step | saved / step (un-profiled) | cost / saved |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    right = total = alarms = 0
    with tempfile.TemporaryDirectory() as tmp:
        for pair in pairs():
            planted = pair["finding"]
            cells: list[str] = []
            recorded = rebuilt(pair["recording"], Path(tmp))
            top = first(recorded) if recorded is not None else None
            sources = [recorded, *(imported(pair["name"] + suffix, Path(tmp)) for suffix in ("", "_stack"))]
            for k, profile in enumerate(sources):
                if profile is None:
                    cells.append("not kept (size)" if k == 2 and pair.get("stack_trace_not_kept") else "not recorded")
                    continue
                if k == 1 and pair.get("needs_shapes"):  # a plain trace has no shapes: said, and not judged
                    cells.append("not judged (no shapes)")
                    continue
                found = first(profile)
                total += 1
                right += found is not None and found.id == planted
                cells.append(
                    "(none)" if found is None else found.id if found.id == planted else f"**{found.id}** (wrong)"
                )
            twin = rebuilt(twin_of(pair), Path(tmp))
            raised = twin is not None and any(f.id == planted for f in find_all(twin))
            alarms += raised
            cost = "n/a"
            if top is not None and recorded is not None and top.id == planted:
                cost_ms = top.cost_ns / 1e6 / max(Context(recorded, Thresholds()).step_count, 1)
                cost = f"{cost_ms:.2f} ms"
            bad, good = steps_ms.get((pair["name"], False)), steps_ms.get((pair["name"], True))
            saved = f"{median(bad) - median(good):.2f} ms" if bad and good else "n/a"
            ratio = "n/a"
            if bad and good and cost != "n/a" and pair["same_work"]:
                ratio = f"{float(cost.split()[0]) / (median(bad) - median(good)):.2f}"
            elif not pair["same_work"]:
                ratio = "twin does other work"
            print(
                f"| {pair['name']} | {planted} | {' | '.join(cells)} | {'yes' if raised else 'no'} "
                f"| {cost} | {saved} | {ratio} |"
            )
    print(
        f"\nfirst finding right: {right} of {total}; twins raising the planted finding: {alarms} of "
        f"{len(pairs())}; timings on {card or '(none)'}"
    )


if __name__ == "__main__":
    main()
