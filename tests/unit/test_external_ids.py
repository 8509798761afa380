"""Kernels and CUDA calls joined to the op they were launched in: by Kineto's External id where it names an op
running on the call's thread at the call, else by the call's innermost enclosing op. Two public traces (a torch 2.3
Switch Transformer trace of an A100, param's linear_kineto on an RTX 2080 Ti) carry External ids that name
unrelated ops (all 225 and 5412 launches: one set equal to the CUPTI correlation ids), which gave aten::view GPU
time and put a 322 ms first launch in an op that ran 25 ms later."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tenprof.store.profile import Profile
from tests.helpers import imported_events, launch

CALLS = 4


def _trace(tmp_path: Path, ids_right: bool) -> Profile:
    """Four aten::mm ops, each launching one kernel, then four aten::view ops that launch nothing. With
    `ids_right`, each launch's External id is its mm's; else it is the id of a view (a number naming an
    unrelated op, as the broken traces have it)."""
    events: list[dict[str, object]] = []
    for i in range(CALLS):
        events += launch("aten::mm", 1000.0 * i, 50.0, 8.0, 300.0, 10 + i, None if ids_right else 20 + i)
    for i in range(CALLS):
        events.append({"ph": "X", "cat": "cpu_op", "name": "aten::view", "pid": 1, "tid": 1,
                       "ts": 5000.0 + 100 * i, "dur": 5.0, "args": {"External id": 20 + i}})  # fmt: skip
    return imported_events(tmp_path, events)


def _launching_ops(profile: Profile) -> tuple[list[str], list[str]]:
    names = profile.strings("ops", "name")
    kernels = [names.at(int(op)) for op in profile.column("kernels", "op_id")]
    calls = [names.at(int(op)) for op in profile.column("api_calls", "op_id")]
    return kernels, calls


def test_external_ids_naming_ops_not_running_at_the_launch_are_not_trusted(tmp_path: Path) -> None:
    profile = _trace(tmp_path, ids_right=False)
    kernels, calls = _launching_ops(profile)
    assert kernels == ["aten::mm"] * CALLS and calls == ["aten::mm"] * CALLS
    # each kernel goes to the mm it was launched in, not to the first: the enclosing op, call by call
    assert len(np.unique(profile.column("kernels", "op_id"))) == CALLS


def test_right_external_ids_join_as_before(tmp_path: Path) -> None:
    kernels, calls = _launching_ops(_trace(tmp_path, ids_right=True))
    assert kernels == ["aten::mm"] * CALLS and calls == ["aten::mm"] * CALLS
