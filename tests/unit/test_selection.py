"""--steps: parsing, and that a selection keeps exactly the chosen steps' work with consistent ids."""

from __future__ import annotations

import numpy as np
import pytest

from tenprof.analyses.timeline.calltree import build_tree
from tenprof.analyses.timeline.selection import parse_steps, select_steps
from tenprof.errors import UsageError
from tenprof.store.profile import Profile


def test_parse_steps() -> None:
    available = [0, 1, 2, 3, 4, 5]
    assert parse_steps("2:", available) == {2, 3, 4, 5}
    assert parse_steps(":3", available) == {0, 1, 2}
    assert parse_steps("1,3-4", available) == {1, 3, 4}
    with pytest.raises(UsageError):
        parse_steps("9", available)
    with pytest.raises(UsageError):
        parse_steps("x", available)


def test_selecting_warm_steps_keeps_their_kernels(rebuilt: dict[str, Profile]) -> None:
    profile = rebuilt["mlp"]
    ops = profile.table("ops")
    op_step = ops.column("step").to_numpy()
    k_op = profile.column("kernels", "op_id")
    expected = int(profile.column("kernels", "duration_ns")[np.isin(op_step[k_op], [3, 4])].sum())
    selected = select_steps(profile, "3-4")
    assert int(selected.column("kernels", "duration_ns").sum()) == expected
    assert selected.table("steps").column("step").to_pylist() == [3, 4]
    # op ids are renumbered to stay row indexes, and every link stays inside the selection
    assert selected.column("ops", "op_id").tolist() == list(range(selected.table("ops").num_rows))
    assert (selected.column("kernels", "op_id") < selected.table("ops").num_rows).all()
    assert sum(n.self_gpu_ns for n in build_tree(selected).walk() if n.kind == "kernel") == expected


def test_sql_over_the_tables(rebuilt: dict[str, Profile]) -> None:
    profile = rebuilt["conv"]
    result = profile.sql("SELECT count(*) AS n, sum(duration_ns) AS t FROM kernels").to_pylist()[0]
    assert result == {"n": profile.table("kernels").num_rows, "t": int(profile.column("kernels", "duration_ns").sum())}
