"""Kernels launched outside any torch op (a Triton kernel the script calls itself, a CUDA extension's
kernel with no aten op, a ctypes library, CuPy) get an op of their own: "(user kernel) NAME"; in a trace that
recorded no op at all (`activities=[ProfilerActivity.CUDA]`), whose kernels are torch's as much as the user's,
"(no op recorded) NAME".

Such a kernel has no op to take a name and a line from, so tallies showed it with an empty name and
attribution left it out. Before the ops are built, each kernel launch call (cudaLaunchKernel, cuLaunchKernel,
...) that runs in no op on its thread is given an op, appended to the trace's op columns:
- when the capture recorded the script's own launch around it (a Triton `kernel[grid](...)`, a CUDA
  extension's function: tenprof.capture.own_launches), the op spans that launch, and the launch's record
  joins the call-site records, so the op gets the line of the call the way every op gets its line; one
  op per launch, whatever it launched (an autotuner's benchmark runs included);
- otherwise it spans the launch call alone, named after the kernel, and gets no line from the records;
  but not in a step run without op records that no recorded step's ops could be copied into
  (TENPROF_OPS=sampled; op_copy's `unmatched`, mostly the stretch after the last step mark): its launches
  are torch's ops' whose records were off, and their kernels stay without an op, as those of a step run
  with the capture off do.
A recorded launch's op is named after what the script called (the Triton kernel, the extension's
function), as the counters and tensors passes name it, so their rows meet the timeline's.
The kernel then joins its op through its launch call, as every kernel does. Graph replays
(cudaGraphLaunch) are not kernel launches of the script's: their kernels stay outside ops.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tenprof.core.intervals import I64Array, merged
from tenprof.core.kernel_names import NO_OP_RECORDED_PREFIX, USER_KERNEL_PREFIX
from tenprof.importers.callsites import Callsites
from tenprof.importers.timeline_columns import Clock, Collector

KERNEL_LAUNCH_CALLS = frozenset(
    {
        "cudaLaunchKernel",
        "cudaLaunchKernelExC",
        "cudaLaunchCooperativeKernel",
        "cuLaunchKernel",
        "cuLaunchKernelEx",
        "cuLaunchCooperativeKernel",
    }
)


# the op columns an added op has no value for
_NO_ARGS = (("ext", -1), ("seq", -1), ("fwd_tid", 0), ("shapes", ""), ("dtypes", ""), ("strides", ""), ("values", ""))


@dataclass(frozen=True)
class UserLaunches:
    """What was added: the op count, and the launch records that now hold an op (perf clock): which
    records (indices into the call-site log's launches) and the row of the op columns each one's op is."""

    ops: int
    records: tuple[I64Array, I64Array, I64Array, I64Array]  # thread, start, end, frame
    record_index: I64Array = field(default_factory=lambda: np.zeros(0, np.int64))
    op_row: I64Array = field(default_factory=lambda: np.zeros(0, np.int64))


def add_user_launch_ops(
    col: Collector, clock: Clock, callsites: Callsites | None, offset_ns: int | None
) -> UserLaunches:
    """Append an op to `col.ops` for each kernel launched outside every op (see the module docstring).
    `offset_ns` maps the call-site log's perf clock onto the trace's (None: not known)."""
    empty = np.zeros(0, np.int64)
    none = UserLaunches(0, (empty, empty, empty, empty))
    api = col.api.data
    if not api["name"]:
        return none
    kernel_of = dict(zip(col.kernels.ints("corr").tolist(), col.kernels.data["name"], strict=True))
    tid = col.api.ints("tid")
    start, end = clock.span(col.api)
    corr = col.api.ints("corr")
    launch = np.array([n in KERNEL_LAUNCH_CALLS for n in api["name"]], dtype=bool)
    launch &= np.array([c in kernel_of for c in corr.tolist()], dtype=bool)
    launch &= ~_inside_ops(col, clock, tid, start)
    launch &= ~_in_capture_off_steps(callsites, offset_ns, start)
    if not launch.any():
        return none
    record_of = _own_record_of(callsites, offset_ns, tid, start, launch)
    uncopied = _in_uncopied_steps(callsites, offset_ns, start)
    ops = col.ops.data
    prefix = NO_OP_RECORDED_PREFIX if not ops["name"] and callsites is None else USER_KERNEL_PREFIX
    held: dict[int, int] = {}  # the records that hold an op, each once: the row of its op
    added = 0
    for i in np.flatnonzero(launch).tolist():
        r = int(record_of[i])
        if (r >= 0 and r in held) or (r < 0 and uncopied[i]):
            continue
        if r >= 0 and callsites is not None and offset_ns is not None:
            held[r] = len(ops["name"])
            lo, hi = int(callsites.launch_start[r]) + offset_ns, int(callsites.launch_end[r]) + offset_ns
        else:
            lo, hi = int(start[i]), int(end[i])
        # named after what the script called (a Triton kernel, an extension's function: the same name
        # the counters and tensors passes give it), else after the kernel
        called = callsites.launch_name[r] if r >= 0 and callsites is not None and r < len(callsites.launch_name) else ""
        ops["name"].append(prefix + (called or _short(kernel_of[int(corr[i])])))
        ops["tid"].append(int(tid[i]))
        ops["ts"].append((lo - clock.base_ns) / 1000.0)
        ops["dur"].append((hi - lo) / 1000.0)
        for key, value in _NO_ARGS:
            ops[key].append(value)
        added += 1
    if callsites is None or not held:
        return UserLaunches(added, none.records)
    kept = np.array(sorted(held), dtype=np.int64)
    rows = np.array([held[r] for r in kept.tolist()], dtype=np.int64)
    c = callsites
    records = (c.launch_thread[kept], c.launch_start[kept], c.launch_end[kept], c.launch_frame[kept])
    return UserLaunches(added, records, kept, rows)


def _in_windows(windows: list[tuple[int, int]], offset_ns: int, at: I64Array) -> np.ndarray:
    """Whether each time falls in one of the call-site log's [start, end] windows (its perf clock)."""
    found = np.zeros(len(at), dtype=bool)
    for began, ended in windows:
        found |= (at >= began + offset_ns) & (at <= ended + offset_ns)
    return found


def _in_capture_off_steps(callsites: Callsites | None, offset_ns: int | None, at: I64Array) -> np.ndarray:
    """Whether each time falls in a step run with the capture off (its ops were not recorded, its kernels
    were: they are torch's, not the script's own launches)."""
    if callsites is None or offset_ns is None:
        return np.zeros(len(at), dtype=bool)
    return _in_windows(callsites.capture_off_windows(), offset_ns, at)


def _in_uncopied_steps(callsites: Callsites | None, offset_ns: int | None, at: I64Array) -> np.ndarray:
    """Whether each time falls in a step run without op records that the op copy left without ops."""
    if callsites is None or offset_ns is None:
        return np.zeros(len(at), dtype=bool)
    return _in_windows(callsites.uncopied_step_windows(), offset_ns, at)


def _inside_ops(col: Collector, clock: Clock, tid: I64Array, at: I64Array) -> np.ndarray:
    """Whether each time `at` on thread `tid` falls inside an op of that thread."""
    inside = np.zeros(len(at), dtype=bool)
    if not col.ops.data["name"]:
        return inside
    op_tid = col.ops.ints("tid")
    op_start, op_end = clock.span(col.ops)
    for thread in np.unique(tid).tolist():
        mine = op_tid == thread
        if not mine.any():
            continue
        lo, hi = merged(op_start[mine], op_end[mine])
        which = np.flatnonzero(tid == thread)
        k = np.searchsorted(lo, at[which], side="right") - 1
        inside[which] = (k >= 0) & (at[which] <= hi[np.clip(k, 0, None)])
    return inside


def _own_record_of(
    callsites: Callsites | None, offset_ns: int | None, tid: I64Array, at: I64Array, which: np.ndarray
) -> I64Array:
    """For each launch call picked by `which`: the script's own launch record holding it (same thread,
    start <= call <= end, on the trace clock), or -1."""
    found = np.full(len(at), -1, dtype=np.int64)
    if callsites is None or offset_ns is None or not len(callsites.launch_start):
        return found
    r_thread = callsites.launch_thread
    for thread in np.unique(tid[which]).tolist():
        mine = np.flatnonzero(r_thread == thread)
        mine = mine[np.argsort(callsites.launch_start[mine], kind="stable")]
        if not len(mine):
            continue
        r_start = callsites.launch_start[mine] + offset_ns
        r_end = callsites.launch_end[mine] + offset_ns
        calls = np.flatnonzero(which & (tid == thread))
        k = np.searchsorted(r_start, at[calls], side="right") - 1  # records do not overlap on a thread
        ok = (k >= 0) & (at[calls] <= r_end[np.clip(k, 0, None)])
        found[calls[ok]] = mine[k[ok]]
    return found


def _short(kernel_name: str) -> str:
    """A kernel's name without its return type and parameter list (C++ kernels carry them; Triton's
    have none): `void at::native::f<4, g(int)>(char*, int)` -> `at::native::f<4, g(int)>`."""
    name = kernel_name.strip().removeprefix("void ")
    if name.endswith(")"):
        depth = 0
        for i in range(len(name) - 1, -1, -1):
            depth += {")": 1, "(": -1}.get(name[i], 0)
            if depth == 0:
                name = name[:i]
                break
    return name.strip() or kernel_name
