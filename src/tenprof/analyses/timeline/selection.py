"""Step selection (`--steps 2:`, `--steps 1,3-5`): the same profile restricted to some steps.

Ops keep the step that covers their start; kernels, transfers and API calls follow their op, or the
step covering their start when they have none. The steps table keeps only the chosen steps. Kept ops
and API calls are renumbered so that ids stay row indexes; links to dropped rows become -1.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tenprof.core.intervals import take
from tenprof.errors import UsageError
from tenprof.store.profile import Profile, with_tables


def parse_steps(spec: str, available: list[int]) -> set[int]:
    """'2:' (from 2 on), ':3' (before 3, as in a Python slice), '1,3-5' (3 to 5 inclusive), '4'."""
    chosen: set[int] = set()
    for part in spec.split(","):
        part = part.strip()
        try:
            if ":" in part:
                lo_text, hi_text = part.split(":", 1)
                lo = int(lo_text) if lo_text else min(available, default=0)
                hi = int(hi_text) - 1 if hi_text else max(available, default=0)
                chosen |= {s for s in available if lo <= s <= hi}
            elif "-" in part[1:]:
                lo_text, hi_text = part.split("-", 1)
                chosen |= {s for s in available if int(lo_text) <= s <= int(hi_text)}
            else:
                chosen.add(int(part))
        except ValueError as exc:
            raise UsageError(f"bad --steps {spec!r}; use e.g. 2: or :3 or 1,3-5") from exc
    chosen &= set(available)
    if not chosen:
        raise UsageError(f"--steps {spec!r} selects none of the recorded steps {sorted(available)}")
    return chosen


def select_steps(profile: Profile, spec: str) -> Profile:
    steps = profile.table("steps")
    available = steps.column("step").to_pylist()
    chosen = parse_steps(spec, available)
    chosen_arr = pa.array(sorted(chosen), pa.int64())
    ops = profile.table("ops")
    op_step = ops.column("step").to_numpy()
    st = steps.filter(pc.is_in(steps.column("step"), chosen_arr))
    s_start, s_end, s_num = (st.column(c).to_numpy() for c in ("start_ns", "end_ns", "step"))
    order = np.argsort(s_start)
    s_start, s_end, s_num = s_start[order], s_end[order], s_num[order]

    def step_at(times: np.ndarray) -> np.ndarray:
        pos = np.searchsorted(s_start, times, side="right") - 1
        ok = (pos >= 0) & (times < s_end[np.clip(pos, 0, None)])
        return np.where(ok, s_num[np.clip(pos, 0, None)], -1)

    keep_op = np.isin(op_step, list(chosen))
    new_id = np.full(len(op_step), -1, dtype=np.int64)
    new_id[keep_op] = np.arange(int(keep_op.sum()), dtype=np.int64)

    def remap(values: np.ndarray) -> pa.Array:
        return pa.array(take(new_id, values))

    def relink(table: pa.Table, columns: tuple[str, ...]) -> pa.Table:
        for column in columns:
            index = table.schema.get_field_index(column)
            table = table.set_column(index, column, remap(table.column(column).to_numpy()))
        return table

    def keep_linked(table: pa.Table) -> pa.Table:
        op = table.column("op_id").to_numpy()
        via_op = take(op_step, op)
        step = np.where(via_op >= 0, via_op, step_at(table.column("start_ns").to_numpy()))
        return relink(table.filter(pa.array(np.isin(step, list(chosen)))), ("op_id",))

    kept_ops = relink(ops.filter(pa.array(keep_op)), ("op_id", "parent_op_id", "top_op_id", "forward_op_id"))
    api = profile.table("api_calls")
    api_step = np.where(api.column("op_id").to_numpy() >= 0, take(op_step, api.column("op_id").to_numpy()), -1)
    api_step = np.where(api_step >= 0, api_step, step_at(api.column("start_ns").to_numpy()))
    keep_api = np.isin(api_step, list(chosen))
    new_api_id = np.full(api.num_rows, -1, dtype=np.int64)
    new_api_id[keep_api] = np.arange(int(keep_api.sum()), dtype=np.int64)
    kernels = keep_linked(profile.table("kernels"))
    kernels = kernels.set_column(
        kernels.schema.get_field_index("api_call_id"),
        "api_call_id",
        pa.array(take(new_api_id, kernels.column("api_call_id").to_numpy())),
    )
    kept_api = relink(api.filter(pa.array(keep_api)), ("op_id",))
    kept_api = kept_api.set_column(0, "api_call_id", pa.array(np.arange(kept_api.num_rows, dtype=np.int64)))
    memory = profile.table("memory")
    samples = profile.table("host_samples")
    sample_ts = samples.column("ts_ns").to_numpy()
    derived = with_tables(
        profile,
        {
            "ops": kept_ops,
            "kernels": kernels,
            "transfers": keep_linked(profile.table("transfers")),
            "api_calls": kept_api,
            "memory": relink(memory.filter(pa.array(step_at(memory.column("ts_ns").to_numpy()) >= 0)), ("op_id",)),
            "host_samples": relink(samples.filter(pa.array(step_at(sample_ts) >= 0)), ("op_id",)),
            "steps": st,
        },
    )
    derived.meta.timeline.trace_span_ns = None  # the window is now the chosen steps'
    derived.meta.run.wall_time_s = 0.0
    return derived
