"""Print every (kernel, tensor) access pattern of a profile and how long the analysis took (GPU recordings).

python scripts/access_patterns_dump.py PROFILE [--limit N]
"""

from __future__ import annotations

import argparse
import time

from tenprof.analyses.tensors.access_patterns import describe, load_patterns
from tenprof.analyses.tensors.tensor_forest import Forest
from tenprof.store.profile import load_profile


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("profile")
    parser.add_argument("--limit", type=int, default=60)
    args = parser.parse_args()
    profile = load_profile(args.profile)
    start = time.perf_counter()
    patterns = load_patterns(profile)
    took = time.perf_counter() - start
    forest = Forest(profile)
    rows = profile.table("accesses").num_rows
    print(f"load_patterns: {took:.2f} s for {rows} access rows, {len(patterns.patterns)} patterns")
    for p in patterns.patterns[: args.limit]:
        t = p.tensor_id
        what = f"T{t} {forest.describe(t)} {forest.creator_op(t)} {forest.creator_line(t)}"
        rw = "write" if p.is_write else "read"
        print(f"{p.kernel[:60]:60s} {rw:5s} {what}\n    {describe(p)}; stride={p.stride} even={p.even_share:.2f}")


if __name__ == "__main__":
    main()
