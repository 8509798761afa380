"""Speed of the address -> tensor lookup on a real recording (the GPT-2 tensors pass in tests/data).

    python benchmarks/address_lookup.py [--queries 2000000] [--profile tests/data/tensors/gpt2]

Queries are addresses a kernel of each op could touch: for random (op, tensor it used) pairs, a random
byte inside the tensor's span (so strided views are hit in their gaps too) at that op. Prints the time to
build the index and lookups per second, and how many queries found a tensor.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from tenprof.analyses.address_lookup import AddressIndex
from tenprof.store.profile import load_profile

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--queries", type=int, default=2_000_000)
    parser.add_argument("--profile", default=str(ROOT / "tests" / "data" / "tensors" / "gpt2"))
    args = parser.parse_args()
    profile = load_profile(args.profile)
    started = time.perf_counter()
    index = AddressIndex.from_profile(profile)
    built = time.perf_counter() - started
    uses = profile.table("tensor_uses")
    tensors = profile.table("tensors")
    rng = np.random.default_rng(0)
    pick = rng.integers(0, uses.num_rows, args.queries)
    tid = uses.column("tensor_id").to_numpy()[pick]
    seq = uses.column("op_seq").to_numpy()[pick]
    start = tensors.column("byte_start").to_numpy()[tid]
    span = np.maximum(tensors.column("byte_end").to_numpy()[tid] - start, 1)
    addresses = start + (rng.random(args.queries) * span).astype(np.int64)
    started = time.perf_counter()
    matches = index.lookup(addresses, seq)
    took = time.perf_counter() - started
    answered = len(np.unique(matches.query))
    print(
        f"{tensors.num_rows} tensors on {profile.table('storages').num_rows} storages; index built in {built:.3f}s\n"
        f"{args.queries} lookups in {took:.3f}s = {args.queries / took / 1e6:.2f} M lookups/s; "
        f"{answered / args.queries:.1%} found a tensor, {len(matches.query) / max(answered, 1):.2f} tensors each"
    )


if __name__ == "__main__":
    main()
