"""What a recording profiler cost its host per step, read from the trace itself (pure; no I/O).

Where no step ran with the capture off (an imported torch.profiler trace, a short run), the un-profiled step
is the recorded one less the profiler's own host work. That work is not a constant: on the H100's host the
corpus's plain torch.profiler traces cost 5.9 to 9.9 us an op (their recorded steps against the same
scripts timed un-profiled), and a slower or faster host pays in proportion. The trace shows the host's
pace at the profiler's callbacks in one place: two aten ops called one after the other from inside a third
(C++ calling C++, nothing of Python between them) are apart by the first one's exit callback, the next
one's entry callback and a few hundred ns of dispatch. So the cost is read as that gap (the median over
the steps, `back_to_back_gap_ns`) times a count of what was recorded: each op, and each launch of GPU work,
whose CUPTI callback and activity record cost more again (`host_cost_ns`).

The two multipliers were fitted on two host-bound plain traces of the corpus (foreach_off and empty_cache:
H100, torch 2.11, 2026-11-27; their un-profiled steps the medians of one and eight timings). The estimated
un-profiled step against the plain loop's (docs/FINDINGS.md, "The profiler's cost, read from the trace"):
the H100's other host-bound plain traces 1.01 and 1.02 (empty_cache's twin, launch_graph); on an H200's
host, whose callbacks ran up to 1.9 times faster (the gap 1.06 to 1.93 times smaller), 0.78 to 1.11. An
estimate, not a bound: it errs either way.

Recorded input shapes add work to every op's entry, inside the gap, which the multipliers would count
three times over; so in a trace with shapes (or Python stacks) a share of the gap, SHAPES_SHARE, is read
as that recording, charged once an op, and the rest as the host's pace. The share is the smallest that
reads two traces of one eager forward on two hosts alike (TraceLens 171dd747's ViT image classifier on an
H100 and an MI300X, 7.89 and 7.45 ms recorded: 2.30 and 3.44 ms un-profiled, within 1.5x; 1.30 and 2.75
without it, the H100's at its GPU time); the Python tracer showed no cost of its own outside the gap
(docs/FINDINGS.md, "The profiler's cost, read from the trace"). On the corpus's host-bound traces with
shapes and stacks it reads 0.86 to 1.53 of the plain loops (H100, 2026-11-27 and 2026-12-07; the fixed
lower bound there 0.68 to 2.41), launch_bound's one timing aside (0.41; docs/FINDINGS.md).

`back_to_back_gap_ns` is None where the trace has fewer than MIN_GAPS such pairs (compiled code, loops of
top-level ops alone): the caller then keeps its fixed per-op model.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from tenprof.core.intervals import take
from tenprof.store.profile import Profile

# multiples of the back-to-back gap each recorded op and each launch of GPU work costs the host (fitted as
# the module docstring says)
GAPS_PER_OP = 3.04
GAPS_PER_LAUNCH = 6.27
MIN_GAPS = 50  # fewer pairs say little about the host's pace
# the share of the back-to-back gap that is one op's shape recording, in a trace with shapes (module docstring)
SHAPES_SHARE = 0.20
ATEN = "aten::"
# runtime calls that put work on the GPU: each one also runs CUPTI's callback and writes an activity record
_LAUNCH_WORDS = ("Launch", "Memcpy", "Memset")


def back_to_back_gap_ns(profile: Profile, step_numbers: npt.NDArray[np.int64]) -> float | None:
    """The median time between two aten ops run one after the other inside another aten op, over the ops of
    the steps `step_numbers`; None where fewer than MIN_GAPS such pairs were recorded."""
    ops = profile.table("ops")
    if ops.num_rows == 0:
        return None
    in_steps = np.isin(ops.column("step").to_numpy(zero_copy_only=False), step_numbers)
    aten = profile.strings("ops", "name").where(lambda name: name.startswith(ATEN))
    parents = np.asarray(ops.column("parent_op_id").fill_null(-1).to_numpy(), dtype=np.int64)
    parent_is_aten = take(aten, parents, False)  # an op's id is its row
    chosen = np.flatnonzero(in_steps & aten & parent_is_aten)
    if len(chosen) < 2:
        return None
    starts = ops.column("start_ns").to_numpy()[chosen]
    ends = ops.column("end_ns").to_numpy()[chosen]
    by_parent = np.lexsort((starts, parents[chosen]))
    same_parent = parents[chosen][by_parent][1:] == parents[chosen][by_parent][:-1]
    gaps = starts[by_parent][1:] - ends[by_parent][:-1]
    gaps = gaps[same_parent & (gaps >= 0)]
    if len(gaps) < MIN_GAPS:
        return None
    return float(np.median(gaps))


def launches(profile: Profile) -> npt.NDArray[np.bool_]:
    """Per runtime call: whether it launched GPU work (a kernel, copy, set or graph)."""
    return profile.strings("api_calls", "name").where(lambda name: any(w in name for w in _LAUNCH_WORDS))


def host_cost_ns(gap_ns: float, ops_per_step: float, launches: float, shapes_share: float = 0.0) -> float:
    """The profiler's host work per step: each op and each launch, at this host's pace (`gap_ns`). Where the
    trace recorded input shapes (or Python stacks, which the corpus's traces record with them) the gap also
    holds one op entry's shape recording: `shapes_share` of it (SHAPES_SHARE for such traces, 0 for others)
    is read as that, charged once an op, and the rest as the host's pace."""
    pace = (1.0 - shapes_share) * gap_ns
    return pace * (GAPS_PER_OP * ops_per_step + GAPS_PER_LAUNCH * launches) + shapes_share * gap_ns * ops_per_step
