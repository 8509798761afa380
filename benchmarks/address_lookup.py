"""Speed of the address -> tensor lookup on a real recording (the GPT-2 tensors pass in tests/data).

    python benchmarks/address_lookup.py [--queries 2000000] [--profile tests/data/tensors/gpt2]

Queries are addresses a kernel of each op could touch: for random (op, tensor it used) pairs, a random
byte inside the tensor's span (so strided views are hit in their gaps too) at that op. Prints the time to
build the index and lookups per second, and how many queries found a tensor.

Then the same for a synthetic worst case of address reuse: 20k storages cycling through 2000 slots of
4 KiB, each seen through three views (contiguous, transposed, half), queried at uniformly random
(address, op) pairs. (This was a timing assertion in the unit tests; timings belong here, not in CI.)
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from tenprof.analyses.tensors.address_lookup import AddressIndex
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
    synthetic(args.queries)


def reuse_index(storages: int = 20_000, slots: int = 2000, slot_bytes: int = 4096) -> AddressIndex:
    """Storage i takes slot i % slots from op i until op i + slots, so every address is reused
    storages / slots times; each storage holds a 32x32 float32 tensor, its transpose and its left half."""
    i = np.arange(storages, dtype=np.int64)
    address = (i % slots) * slot_bytes
    views = [([32, 32], [32, 1]), ([32, 32], [1, 32]), ([32, 16], [32, 1])]
    return AddressIndex(
        storage_id=i,
        address=address,
        nbytes=np.full(storages, slot_bytes, dtype=np.int64),
        alloc_op_seq=i,
        free_op_seq=i + slots,
        tensor_storage=np.repeat(i, len(views)),
        data_ptr=np.repeat(address, len(views)),
        itemsize=np.full(storages * len(views), 4, dtype=np.int64),
        shape=[shape for _ in range(storages) for shape, _ in views],
        stride=[stride for _ in range(storages) for _, stride in views],
        first_use_op_seq=np.repeat(i, len(views)),
    )


def synthetic(queries: int) -> None:
    started = time.perf_counter()
    index = reuse_index()
    built = time.perf_counter() - started
    rng = np.random.default_rng(0)
    seqs = rng.integers(0, 20_000, queries)
    addresses = rng.integers(0, 2000 * 4096, queries)
    started = time.perf_counter()
    matches = index.lookup(addresses, seqs)
    took = time.perf_counter() - started
    print(
        f"synthetic reuse (20000 storages on 2000 slots, 3 views each): index built in {built:.3f}s\n"
        f"{queries} lookups in {took:.3f}s = {queries / took / 1e6:.2f} M lookups/s; "
        f"{len(matches.query) / queries:.2f} tensors per query"
    )


if __name__ == "__main__":
    main()
