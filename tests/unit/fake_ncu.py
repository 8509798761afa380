"""A stand-in for Nsight Compute's `ncu_report` module (which needs Nsight Compute or `pip install
ncu-report`): just the calls tenprof's reader makes, over one made-up kernel. The reader's use of the
real module was exercised on the GPU machine by the counters and stalls passes."""

from __future__ import annotations

import types
from typing import Any

BASE = 0x7F0000000000


class Ids:
    def __init__(self, pcs: list[int]) -> None:
        self.pcs = pcs

    def as_uint64(self, i: int) -> int:
        return self.pcs[i]


class Metric:
    def __init__(self, value: float, per_pc: dict[int, float] | None = None) -> None:
        self.value = value
        self.per_pc = per_pc

    def as_double(self, i: int | None = None) -> float:
        if i is None:
            return self.value
        assert self.per_pc is not None
        return list(self.per_pc.values())[i]

    def as_string(self) -> str:
        return str(self.value)

    def has_correlation_ids(self) -> bool:
        return self.per_pc is not None

    def correlation_ids(self) -> Ids:
        assert self.per_pc is not None
        return Ids(list(self.per_pc))

    def num_instances(self) -> int:
        return len(self.per_pc or {})


SASS = {
    BASE + 0x00: "LDG.E R4, desc[UR4][R2.64]",
    BASE + 0x10: "FADD R5, R4, R4",
    BASE + 0x20: "EXIT",
}


class Action:
    def __init__(self, name: str, metrics: dict[str, Metric]) -> None:
        self._name = name
        self.metrics = metrics
        self.nvtx: list[str] = []

    def name(self, base: Any = None) -> str:
        return self._name

    def nvtx_state(self) -> Any:
        if not self.nvtx:
            return None
        ranges = self.nvtx
        domain = types.SimpleNamespace(push_pop_ranges=lambda: ranges)
        return types.SimpleNamespace(domains=lambda: [0], domain_by_id=lambda i: domain)

    def metric_names(self) -> list[str]:
        return list(self.metrics)

    def metric_by_name(self, name: str) -> Metric | None:
        return self.metrics.get(name)

    def sass_by_pc(self, pc: int) -> str:
        return SASS.get(pc, "")

    def source_info(self, pc: int) -> Any:
        if pc not in SASS:
            return None
        return types.SimpleNamespace(file_name=lambda: "/tmp/kernel.py", line=lambda: 10 + (pc - BASE) // 16)


class Range:
    def __init__(self, actions: list[Action]) -> None:
        self.actions = actions

    def num_actions(self) -> int:
        return len(self.actions)

    def action_by_idx(self, i: int) -> Action:
        return self.actions[i]


class Context:
    def __init__(self, ranges: list[Range]) -> None:
        self.ranges = ranges

    def num_ranges(self) -> int:
        return len(self.ranges)

    def range_by_idx(self, i: int) -> Range:
        return self.ranges[i]


def fake_module(nvtx: list[str] | None = None) -> types.ModuleType:
    module = types.ModuleType("ncu_report")
    stalled = {BASE + 0x10: 30.0}
    actions = [
        Action(
            "gather_kernel",
            {
                "gpu__time_duration.sum": Metric(80_000.0),
                "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed": Metric(75.0),
                "launch__grid_size": Metric(1024.0),
                "launch__block_size": Metric(128.0),
                "smsp__pcsamp_warps_issue_stalled_long_scoreboard": Metric(30.0, stalled),
                "smsp__pcsamp_warps_issue_stalled_not_selected": Metric(5.0, {BASE + 0x20: 5.0}),
                "smsp__pcsamp_sample_count": Metric(35.0, {pc: 1.0 for pc in SASS}),
            },
        )
    ]
    for action in actions:
        action.nvtx = nvtx or []
    module.load_report = lambda path: Context([Range(actions)])  # type: ignore[attr-defined]
    module.IAction = types.SimpleNamespace(NameBase_DEMANGLED=1)  # type: ignore[attr-defined]
    return module
