"""The counters pass's replays (kernel_metrics), one row each, judged now: every row gets its roofline
`verdict` and `occupancy_limiter` computed from the stored metrics (tenprof.analyses.kernels.roofline).

Nothing judged is read from the profile: the importer stores only what Nsight Compute measured, so a
changed limit applies to profiles already recorded, without importing them again. Profiles imported
before this had `verdict` and `occupancy_limiter` columns in kernel_metrics; the table's declaration no
longer names them, so they are never read, and the computed ones (equal to them for the default
limits) take their place. The limiter is computed from ncu's launch__occupancy_limit_* values, which
ncu_metrics keeps under ncu's own names in old and new profiles alike.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from tenprof.analyses.kernels.roofline import DEFAULT_LIMITS, RooflineLimits, occupancy_limiter, verdict
from tenprof.core.ncu_names import METRICS
from tenprof.store.profile import Profile

# ncu's launch__occupancy_limit_<what> -> <what> (registers, shared_mem, warps, blocks)
_LIMIT_PREFIX = "occupancy_limit_"
_LIMIT_OF = {name: col.removeprefix(_LIMIT_PREFIX) for name, col in METRICS.items() if col.startswith(_LIMIT_PREFIX)}


def judged_replays(profile: Profile, limits: RooflineLimits = DEFAULT_LIMITS) -> dict[int, dict[str, Any]]:
    """replay_id -> its kernel_metrics row, plus `verdict` and `occupancy_limiter` under `limits`."""
    blocks_per_sm = _occupancy_limits(profile.table("ncu_metrics"))
    rows: dict[int, dict[str, Any]] = {}
    for row in profile.table("kernel_metrics").to_pylist():
        replay = int(row["replay_id"])
        row["verdict"] = verdict(
            row["duration_ns"],
            row["sm_throughput_pct"],
            row["memory_throughput_pct"],
            row["tensor_pipe_pct"],
            row["achieved_occupancy_pct"],
            limits,
        )
        row["occupancy_limiter"] = occupancy_limiter(blocks_per_sm.get(replay, {}))
        rows[replay] = row
    return rows


def _occupancy_limits(raw: pa.Table) -> dict[int, dict[str, float]]:
    """replay_id -> {registers | shared_mem | warps | blocks: the blocks per SM that resource allows}."""
    wanted = raw.filter(pc.is_in(raw.column("metric"), pa.array(list(_LIMIT_OF), type=pa.string())))
    out: dict[int, dict[str, float]] = defaultdict(dict)
    for replay, metric, value in zip(
        wanted.column("replay_id").to_pylist(),
        wanted.column("metric").to_pylist(),
        wanted.column("value").to_pylist(),
        strict=True,
    ):
        out[int(replay)][_LIMIT_OF[metric]] = value
    return out
