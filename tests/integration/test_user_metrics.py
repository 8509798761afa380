"""Numbers given to tenprof.scope and tenprof.step carried through real captures: a tenprof run and an in-process
profile (the rest is in tests/unit/test_user_metrics.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

import tenprof
from tenprof.store.profile import load_profile
from tests.integration.conftest import Recorded


@pytest.mark.xdist_group("scopes_run")
def test_scopes_and_steps_carry_their_numbers_through_a_run(scopes_run: Recorded) -> None:
    # six steps of an "attn" scope given three numbers and an "mlp" given one, each step given its tokens
    # (and 40 "proj" scopes given none, before the first step)
    assert scopes_run.ran.code == 0
    profile = load_profile(scopes_run.profile)
    steps = profile.table("steps").to_pydict()
    for number, tokens in zip(steps["step"], steps["tokens"], strict=True):
        assert tokens == (128 * (number + 1) if number < 6 else -1)  # the last, cut by the end, has none
    scopes = profile.table("scopes").to_pydict()
    metrics = profile.table("user_metrics").to_pydict()
    assert set(metrics["owner"]) == {"scope"}
    by_scope: dict[int, dict[str, float]] = {}
    for owner_id, name, value in zip(metrics["owner_id"], metrics["metric"], metrics["value"], strict=True):
        by_scope.setdefault(owner_id, {})[name] = value
    # every entry of a scope that the trace recorded carries the numbers given to it, and only those
    numbered = {scope_id: name for scope_id, name in enumerate(scopes["name"]) if name != "proj"}
    for scope_id, name in numbered.items():
        expected = {"flops": 1.5e9, "bytes": 4096.0, "heads": 8.0} if name == "attn" else {"flops": 2.0e6}
        assert by_scope[scope_id] == expected
    assert len(by_scope) == len(numbered) >= 8  # 6 steps of 2 scopes, less those run with the capture off


def test_the_in_process_profiles_step_takes_tokens(tmp_path: Path) -> None:
    import torch

    with tenprof.profile(str(tmp_path / "p"), overhead_steps=0) as p:
        for i in range(3):
            with tenprof.scope("work", flops=10):
                torch.ones(8, 8).sum()
            p.step(tokens=i + 1)
    profile = p.profile
    assert profile.table("steps").column("tokens").to_pylist()[:3] == [1, 2, 3]
    assert profile.table("user_metrics").column("value").to_pylist() == [10.0, 10.0, 10.0]
