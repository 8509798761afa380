"""The caching allocator's own time around its driver calls (pure; no I/O).

An op that takes fresh device memory calls cudaMalloc (or gives memory back with cudaFree), and around the
driver call PyTorch's caching allocator does work of its own: it looks for a cached block, frees cached
blocks to retry, splits and records the new one. The driver call's own time leaves that out; the op's time
does not. So each top-level op that calls the allocator is compared with its name's other top-level calls
that did not: what it takes beyond their median is the allocator's, at least its driver calls' time (only
that where every call of its name allocated: nothing then says what it takes without).

Used by the step decomposition (analyses.timeline.step_time: in the steady steps that time is the
`allocator` part's, placed in the op just before its first allocator call, where the allocator searches its
cache before going to the driver, and what does not fit there after its last) and by the allocator-churn
finding (its cost)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from tenprof.store.profile import Profile

I64 = npt.NDArray[np.int64]


@dataclass(frozen=True)
class SlowPath:
    """Per top-level op that called the allocator: its row in `ops`, its allocator calls' time, and its time
    beyond its name's usual (at least the calls' time)."""

    ops: I64
    in_calls_ns: I64
    beyond_ns: I64

    @property
    def total_ns(self) -> int:
        return int(self.beyond_ns.sum())


def slow_path(profile: Profile, call_ops: I64, call_ns: I64, top_level: I64) -> SlowPath:
    """The allocating top-level ops among `top_level` (rows of `ops`, the ones compared), from the allocator
    calls made in ops (`call_ops`: each call's op row, `call_ns`: its time); see the module."""
    if not len(call_ops):
        empty = np.zeros(0, dtype=np.int64)
        return SlowPath(empty, empty, empty)
    top_of = profile.column("ops", "top_op_id")
    tops, inverse = np.unique(top_of[call_ops], return_inverse=True)
    in_calls = np.bincount(inverse.reshape(-1), weights=call_ns, minlength=len(tops)).astype(np.int64)
    took = profile.column("ops", "duration_ns")
    names = profile.strings("ops", "name").codes
    reusing = np.setdiff1d(top_level, tops)
    usual = median_by_name(names[reusing], took[reusing])
    # an op whose name never ran without allocating: only its allocator calls are charged
    usual_of_tops = np.array([usual.get(int(c), float(took[t])) for c, t in zip(names[tops], tops, strict=True)])
    beyond = np.maximum(in_calls, (took[tops] - usual_of_tops).astype(np.int64))
    return SlowPath(tops.astype(np.int64), in_calls, beyond)


def median_by_name(codes: npt.NDArray[np.integer], took: npt.NDArray[np.integer]) -> dict[int, float]:
    """The median of `took` for each name code (one sort, not one pass per name)."""
    order = np.lexsort((took, codes))
    codes, took = codes[order], took[order]
    distinct, first, counts = np.unique(codes, return_index=True, return_counts=True)
    low, high = first + (counts - 1) // 2, first + counts // 2
    return {int(c): (float(took[a]) + float(took[b])) / 2 for c, a, b in zip(distinct, low, high, strict=True)}
