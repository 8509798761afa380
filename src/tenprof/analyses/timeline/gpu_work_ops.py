"""Which ops hand the GPU work: one answer for every finding that asks (an op that runs on CPU tensors alone,
the first call of an op that loads a module). Pure; torch-free.

An op hands the GPU work when a kernel, a copy or a call that hands the GPU work (a launch, an async copy or
set, an event: step_time.hands_work) is attributed to it or to an op nested in it, or when such a call falls
inside its time on its own thread: a trace attributes no op to some launches (a compiled region's, a library's
own), and an op holding them still hands the GPU work. Enclosing ops are followed up `parent_op_id` to the top.
"""

from __future__ import annotations

import weakref

import numpy as np
import numpy.typing as npt

from tenprof.analyses.timeline.step_time import hands_work
from tenprof.store.profile import Profile

# idle-gaps and cold-start both ask, per report: the answer is kept per profile
_FOUND: weakref.WeakKeyDictionary[Profile, npt.NDArray[np.bool_]] = weakref.WeakKeyDictionary()


def ops_handing_gpu_work(profile: Profile) -> npt.NDArray[np.bool_]:
    """Per op (row of the ops table, which is its op_id): whether it hands the GPU work (read-only)."""
    if profile not in _FOUND:
        found = _handing(profile)
        found.flags.writeable = False  # shared by every caller
        _FOUND[profile] = found
    return _FOUND[profile]


def _handing(profile: Profile) -> npt.NDArray[np.bool_]:
    count = profile.table("ops").num_rows
    handing = np.zeros(count, dtype=bool)
    if count == 0:
        return handing
    calls = profile.strings("api_calls", "name").where(hands_work)
    for op in (
        profile.column("kernels", "op_id"),
        profile.column("transfers", "op_id"),
        profile.column("api_calls", "op_id")[calls],
    ):
        handing[op[(op >= 0) & (op < count)]] = True
    _contained_calls(profile, calls, handing)
    _up_to_the_top(profile, handing)
    return handing


def _contained_calls(profile: Profile, calls: npt.NDArray[np.bool_], handing: npt.NDArray[np.bool_]) -> None:
    """Mark the ops inside whose time, on their own thread, a call that hands the GPU work starts."""
    call_threads = profile.column("api_calls", "thread_id")[calls]
    call_starts = profile.column("api_calls", "start_ns")[calls]
    op_threads = profile.column("ops", "thread_id")
    op_starts, op_ends = profile.column("ops", "start_ns"), profile.column("ops", "end_ns")
    for thread in np.unique(call_threads).tolist():
        at = np.sort(call_starts[call_threads == thread])
        rows = np.flatnonzero(op_threads == thread)
        inside = np.searchsorted(at, op_ends[rows], side="left") > np.searchsorted(at, op_starts[rows], side="left")
        handing[rows[inside]] = True


def _up_to_the_top(profile: Profile, handing: npt.NDArray[np.bool_]) -> None:
    """An op whose nested op hands the GPU work hands it too: deepest first, each marked op marks its parent."""
    parents = profile.column("ops", "parent_op_id")
    depths = profile.column("ops", "depth")
    for depth in range(int(depths.max(initial=0)), 0, -1):
        marked = np.flatnonzero(handing & (depths == depth))
        up = parents[marked]
        handing[up[(up >= 0) & (up < len(handing))]] = True
