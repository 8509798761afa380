"""A trace replicated three times (tests/trace_replica.py: copies shifted in time and in every linking
id) imports to three times the original's totals, exactly: kernels, copies, ops, API calls, steps, and
every kernel still joined to its op and its launch."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tenprof.importers.timeline_import import import_trace
from tenprof.store.profile import load_profile
from tests.conftest import DATA
from tests.trace_replica import replicate

SOURCE = DATA / "finding_sync_in_loop" / "timeline" / "raw" / "kineto_trace.json.gz"


def _totals(profile_dir: Path) -> dict[str, int]:
    profile = load_profile(profile_dir)
    kernels, transfers = profile.table("kernels"), profile.table("transfers")
    return {
        "kernels": kernels.num_rows,
        "kernel_ns": int(kernels.column("duration_ns").to_numpy().sum()),
        "kernels_with_op": int(np.count_nonzero(kernels.column("op_id").to_numpy() >= 0)),
        "kernels_with_launch": int(np.count_nonzero(kernels.column("api_call_id").to_numpy() >= 0)),
        "transfers": transfers.num_rows,
        "transfer_ns": int(transfers.column("duration_ns").to_numpy().sum()),
        "ops": profile.table("ops").num_rows,
        "api_calls": profile.table("api_calls").num_rows,
        "steps": profile.table("steps").num_rows,
    }


def test_three_copies_import_to_three_times_the_totals(tmp_path: Path) -> None:
    import_trace(SOURCE, tmp_path / "one", force=False)
    big = tmp_path / "three.json"
    assert replicate(SOURCE, big, copies=3) == 3
    import_trace(big, tmp_path / "three", force=False)
    one, three = _totals(tmp_path / "one"), _totals(tmp_path / "three")
    assert one["kernels"] > 10 and one["kernels_with_op"] == one["kernels"]
    assert three == {key: 3 * value for key, value in one.items()}
    # each kernel joined within its own copy: its op started before it ran (ids left unshifted would join
    # the kernels of one copy to the ops of another)
    profile = load_profile(tmp_path / "three")
    kernels, ops = profile.table("kernels"), profile.table("ops")
    op_start = ops.column("start_ns").to_numpy()[kernels.column("op_id").to_numpy()]
    assert np.all(op_start <= kernels.column("start_ns").to_numpy())
