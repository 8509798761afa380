"""idle-gaps leaves out a single step's leading wait for work queued before the recording (analyses.findings.idle):
a kernel launched at the step's start that runs only 30 ms later, with nothing recorded running meanwhile, waited
behind work the recording did not see (a public 114 ms pass read "GPU idle 31%, mostly work launched, waiting to
start"). The same 30 ms with the host launching nothing is still the step's own idle time."""

from __future__ import annotations

from pathlib import Path

from tenprof.analyses.findings import find_all
from tenprof.store.profile import Profile
from tests.helpers import imported_events, launch

WAIT_US = 30_000.0


def _step(tmp_path: Path, queued: bool) -> Profile:
    """One marked step of 20 matmuls of 1 ms kernels back to back; its first kernel launched at the step's start
    and starting WAIT_US later (`queued`), or launched WAIT_US into the step (the host busy elsewhere)."""
    events: list[dict[str, object]] = []
    base = 0.0 if queued else WAIT_US
    for number in range(1, 21):
        events += launch("aten::mm", base, 30.0, 8.0, 1000.0, number)
        base += 40.0
    first_kernel = events[2]
    first_kernel["ts"] = WAIT_US + 50.0
    for later in range(1, 20):
        events[3 * later + 2]["ts"] = WAIT_US + 50.0 + 1000.0 * later
    end = WAIT_US + 50.0 + 20_000.0
    events.append({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#0", "pid": 1, "tid": 1, "ts": -1.0,
                   "dur": end + 1.0})  # fmt: skip
    return imported_events(tmp_path, events)


def test_a_first_kernel_waiting_behind_unrecorded_work_is_no_idle_gap(tmp_path: Path) -> None:
    assert "idle-gaps" not in {f.id for f in find_all(_step(tmp_path, queued=True))}


def test_the_host_launching_nothing_at_the_steps_start_is_one(tmp_path: Path) -> None:
    found = {f.id: f for f in find_all(_step(tmp_path, queued=False))}
    assert "idle-gaps" in found
    assert any("host not launching work" in line for line in found["idle-gaps"].seen)
