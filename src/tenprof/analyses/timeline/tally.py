"""Tallies in the iprof shape: Name | Time | Time(%) | Calls | Average | Min | Max.

Every tally's total is the plain sum of the durations of the events it groups, so totals can be checked
against the tables. Rows are sorted by total time, longest first.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from tenprof.analyses.timeline.overhead import in_uncopied_steps, in_unrecorded_steps, kernel_launch_ns
from tenprof.core.intervals import take
from tenprof.store.profile import Profile


@dataclass(frozen=True)
class TallyRow:
    name: str
    total_ns: int
    percent: float
    calls: int
    average_ns: float
    min_ns: int
    max_ns: int


@dataclass(frozen=True)
class Tally:
    title: str
    time_meaning: str
    rows: list[TallyRow]
    total_ns: int
    total_calls: int


def tally(title: str, time_meaning: str, names: pa.Array, durations: pa.Array) -> Tally:
    table = pa.table({"name": names, "d": durations})
    if table.num_rows == 0:
        return Tally(title, time_meaning, [], 0, 0)
    grouped = table.group_by("name").aggregate([("d", "sum"), ("d", "count"), ("d", "min"), ("d", "max")])
    total = int(pa.compute.sum(table.column("d")).as_py())
    sums = grouped.column("d_sum").to_numpy()
    order = np.lexsort((np.array(grouped.column("name").to_pylist(), dtype=object), -sums))
    rows = []
    names_col = grouped.column("name").to_pylist()
    counts = grouped.column("d_count").to_numpy()
    mins = grouped.column("d_min").to_numpy()
    maxs = grouped.column("d_max").to_numpy()
    for i in order:
        rows.append(
            TallyRow(
                name=names_col[i],
                total_ns=int(sums[i]),
                percent=100.0 * float(sums[i]) / total if total else 0.0,
                calls=int(counts[i]),
                average_ns=float(sums[i]) / int(counts[i]),
                min_ns=int(mins[i]),
                max_ns=int(maxs[i]),
            )
        )
    return Tally(title, time_meaning, rows, total, table.num_rows)


def kernel_tally(profile: Profile) -> Tally:
    k = profile.table("kernels")
    return tally("GPU kernels", "GPU time", k.column("name"), k.column("duration_ns"))


def transfer_tally(profile: Profile) -> Tally:
    t = profile.table("transfers")
    return tally("Transfers (memcpy/memset)", "GPU time", t.column("name"), t.column("duration_ns"))


def api_tally(profile: Profile) -> Tally:
    a = profile.table("api_calls")
    return tally("CUDA API calls", "CPU time", a.column("name"), a.column("duration_ns"))


def op_cpu_tally(profile: Profile) -> Tally:
    o = profile.table("ops")
    return tally("aten ops (CPU self time)", "CPU self time", o.column("name"), o.column("self_duration_ns"))


def op_gpu_tally(profile: Profile) -> Tally:
    """Kernel time grouped by the op that launched it (a kernel the script launched itself has an op of its
    own, "(user kernel) NAME"); kernels with no op are grouped by why: launched in a step run with the
    capture off (its ops were not recorded), in a step run without op records that no recorded step's ops
    could be copied into (TENPROF_OPS=sampled), or outside any op (a CUDA graph's replay, an imported
    trace)."""
    k = profile.table("kernels")
    ops = profile.strings("ops", "name")
    why = ("[no op: a step run with the capture off]", "[no op: a step recorded without ops]", "[no op]")
    labels = [*ops.values, *why]
    op_ids = k.column("op_id").to_numpy()
    launched = kernel_launch_ns(profile)
    unrecorded = in_unrecorded_steps(profile, launched)
    uncopied = in_uncopied_steps(profile, launched)
    no_op = np.select([unrecorded, uncopied], [len(ops.values), len(ops.values) + 1], len(ops.values) + 2)
    label = np.where(op_ids >= 0, take(ops.codes, op_ids, 0), no_op).astype(np.int32)
    launch_names = pa.DictionaryArray.from_arrays(label, pa.array(labels, pa.string())).cast(pa.string())
    return tally("aten ops (GPU time of their kernels)", "GPU time", launch_names, k.column("duration_ns"))
