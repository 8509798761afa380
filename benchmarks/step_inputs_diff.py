"""Which ops' inputs differ between a profile's recorded steps: why the native captures' input sampling
(capture/input_sampling.py) kept asking in every step of a run.

    python benchmarks/step_inputs_diff.py PROFILE [--shown 8]

For each recorded step after the first, its ops (by thread, in start order, with their name, input shapes,
dtypes, strides and scalar values) set beside those of the step before it: how many ops differ, and the
first few of them, both ways. The input sampling settles a kind of step only once two of its asked steps
have the same inputs, so a value that changes every step keeps it asking; this names the op and the
argument. It found fp32 GPT-2's (2026-11-29, H200): aten::scalar_tensor given the random generator's offset
for attention's dropout, an int that grows every step; since then the sampling leaves ints' values out as
it did doubles'. Ints' and doubles' values are left out of the comparison likewise (`--values` keeps
them: what made the sampling ask before).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from itertools import pairwise
from pathlib import Path

from tenprof.store.profile import load_profile

COLUMNS = ("name", "input_shapes", "input_dtypes", "input_strides", "input_values")


def without_scalars(values: str | None) -> str | None:
    """An op's scalar values (a JSON list of strings) with each int's and double's replaced by "scalar"."""
    if not values:
        return values
    try:
        parsed = json.loads(values)
    except ValueError:
        return values
    return json.dumps(["scalar" if isinstance(v, str) and _is_number(v) else v for v in parsed])


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def step_sequences(profile_dir: Path, values: bool = False) -> dict[int, list[tuple[int, tuple[object, ...]]]]:
    """Each step's ops as (thread, (name, shapes, dtypes, strides, values)), in start order per thread."""
    ops = load_profile(profile_dir).table("ops").to_pydict()
    if not values:
        ops["input_values"] = [without_scalars(v) for v in ops["input_values"]]
    steps: dict[int, list[tuple[int, int, tuple[object, ...]]]] = defaultdict(list)
    for i, step in enumerate(ops["step"]):
        if step >= 0:
            key = tuple(ops[c][i] for c in COLUMNS)
            steps[step].append((ops["thread_id"][i], ops["start_ns"][i], key))
    return {s: [(t, k) for t, _, k in sorted(rows, key=lambda r: (r[0], r[1]))] for s, rows in steps.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("profile", type=Path)
    parser.add_argument("--shown", type=int, default=8)
    parser.add_argument("--values", action="store_true", help="compare ints' and doubles' values too")
    args = parser.parse_args()
    steps = step_sequences(args.profile, args.values)
    numbers = sorted(steps)
    for before, after in pairwise(numbers):
        a, b = steps[before], steps[after]
        names_alike = [k[0] for _, k in a] == [k[0] for _, k in b]
        differ = [(x, y) for x, y in zip(a, b, strict=False) if x != y] if names_alike else []
        what = "the same op names" if names_alike else f"other ops ({len(a)} against {len(b)})"
        print(f"step {before} -> {after}: {what}; {len(differ)} ops with other inputs")
        if not names_alike:  # the ops one step has more of than the other (the input sampling's kinds)
            counts = Counter(k[0] for _, k in a)
            counts.subtract(Counter(k[0] for _, k in b))
            changed = sorted(((n, c) for n, c in counts.items() if c), key=lambda nc: -abs(nc[1]))
            print("  " + ", ".join(f"{name} {count:+d}" for name, count in changed[: args.shown]))
        for (_, x), (_, y) in differ[: args.shown]:
            print(f"  {x[0]}")
            for column, u, v in zip(COLUMNS[1:], x[1:], y[1:], strict=True):
                if u != v:
                    print(f"    {column}: {u}  ->  {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
