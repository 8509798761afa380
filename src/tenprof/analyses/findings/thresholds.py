"""Named thresholds of the findings, with their meaning; `--threshold NAME=VALUE` overrides any."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, fields

from tenprof.analyses.kernels.roofline import RooflineLimits
from tenprof.errors import UsageError


@dataclass
class Thresholds:
    launch_bound_max_gpu_busy: float = 0.75
    """launch-bound: fires when the GPU is busy less than this share of the steps ..."""
    launch_bound_max_median_kernel_us: float = 20.0
    """... and the median kernel is shorter than this (tiny kernels, so launches dominate)."""
    launch_bound_min_kernels_per_step: float = 8.0
    """... with at least this many kernels launched per step (a step of one or two kernels has nothing to
    fuse or to batch into a graph: its time is the loop's own) ..."""
    launch_bound_min_dispatch_share: float = 0.3
    """... and the host's time while the GPU idles is at least this share op dispatch (in torch ops), the
    largest of its named causes (not data loading, allocator calls, synchronizations, compiling): a host
    busy in its own Python or waiting for batches is not helped by fewer launches."""
    data_loading_min_share: float = 0.1
    """data-loading: fires when the steps wait this share of their time for a DataLoader's batches."""
    exposed_communication_min_share: float = 0.1
    """exposed-communication: fires when the GPU runs collectives and nothing else this share of the steps."""
    allocator_min_share: float = 0.05
    """allocator-churn: fires when the GPU idles this share of the steps while the host is in cudaMalloc,
    cudaFree and the like."""
    memory_growth_min_bytes_per_step: float = 1 << 20
    """memory-growth: fires when the blocks a step allocates and never frees reach this many bytes (the
    median over the steps judged) ..."""
    memory_growth_min_share: float = 0.75
    """... in at least this share of the steps judged (every analysed step but the last two, whose blocks
    may still be in use), and allocated memory at the step ends rises with them."""
    memory_fragmentation_min_share: float = 0.25
    """memory-fragmentation: fires when, at the peak of reserved memory, the caching allocator holds this
    share of it in free blocks ..."""
    memory_fragmentation_min_bytes: float = 1 << 30
    """... and at least this many bytes."""
    idle_min_gap_us: float = 100.0
    """idle-gaps: a gap on a GPU stream shorter than this is ignored."""
    idle_min_share: float = 0.2
    """idle-gaps: fires when such gaps add up to this share of the steps' GPU time span."""
    sync_min_per_step: float = 1.0
    """sync-in-loop: fires when host-device synchronizations per step reach this ..."""
    sync_min_share: float = 0.005
    """... and the GPU idle they cost (less what pageable-transfer takes: causes.py) is at least this share of
    the analysed steps' time: a benchmark's three timing syncs in a 12.8 s pass cost 40 us, nothing to fix."""
    transfers_min_pageable_bytes_per_step: float = 1 << 20
    """pageable-transfer: fires when copies from/to pageable host memory move this much per step."""
    copies_min_share: float = 0.05
    """hidden-copies: fires when copy kernels under contiguous/to/clone/copy_ take this share of GPU time."""
    cold_start_min_ratio: float = 2.0
    """cold-start: fires when the first step takes this many times the median of the others."""
    cold_start_min_pass_share: float = 0.1
    """cold-start, in a recording judged as one pass: fires when its first uses (module loads, libraries'
    slow first calls: cold_start.first_uses) hold the GPU idle for this share of the pass; torch-compile-time
    there likewise, for the host's compiling (compiled._compile_in_one_pass): both one-time costs of a pass."""
    slow_step_min_ratio: float = 3.0
    """slow-step: a step taking this many times the median of the analysed steps is a one-off stall,
    reported on its own and left out of the steps the other checks judge ..."""
    slow_step_min_excess_ms: float = 1.0
    """... when it also takes this many milliseconds more than the median (shorter hiccups are noise) ..."""
    slow_step_max_share: float = 0.2
    """... and such steps are at most this share of the steps: more often, the long steps are a periodic
    cost of the steady state (every other step waits for a DataLoader whose workers deliver in pairs), and
    the other checks judge them with the rest."""
    variance_max_cv: float = 0.25
    """variance: fires when one kernel with one launch shape has a coefficient of variation above this ..."""
    variance_min_share: float = 0.01
    """... and it accounts for at least this share of kernel time."""
    names_min_share: float = 0.05
    """gemm-without-tensor-cores (from kernel names), layout-conversions and strided-elementwise: the time
    they cost must be this share of the GPU time of the steps."""
    counters_min_share: float = 0.05
    """counters (Nsight Compute) findings: an op must take this share of kernel time to be named."""
    counters_max_tensor_pct: float = 5.0
    """gemm-without-tensor-cores: a matrix-multiply op whose tensor-core pipe is busy less than this %."""
    counters_max_dram_pct: float = 30.0
    """memory-bound-slow: a memory-bound-looking op (< 1 FLOP per DRAM byte) below this % of DRAM peak ..."""
    counters_min_launch_us: float = 20.0
    """... whose launches average at least this long (shorter ones are launch-bound, a different problem)."""
    counters_max_occupancy_pct: float = 25.0
    """register-limited: achieved occupancy below this %, with registers capping blocks per SM."""
    sol_min_share: float = 0.05
    """far-below-speed-of-light: an op must take this share of the analysed steps' kernel time ..."""
    sol_max_percent: float = 40.0
    """... and run below this % of its speed of light (performance model: ideal time / kernel time) ..."""
    sol_min_call_us: float = 20.0
    """... in calls averaging at least this much kernel time (shorter ones are launch-bound)."""
    roofline_launch_us: float = 5.0
    """roofline verdicts (counters pass): a kernel shorter than this is launch-bound ..."""
    roofline_bound_pct: float = 60.0
    """... a unit busy this % of its peak or more is near its peak (compute- or memory-bound) ..."""
    roofline_low_occupancy_pct: float = 30.0
    """... and below both peaks, fewer active warps than this % of the SM's slots is occupancy-bound."""

    def roofline(self) -> RooflineLimits:
        """The roofline verdicts' limits, as set here (the counters section and findings share them)."""
        return RooflineLimits(
            launch_ns=self.roofline_launch_us * 1000,
            bound_pct=self.roofline_bound_pct,
            low_occupancy_pct=self.roofline_low_occupancy_pct,
        )

    @classmethod
    def describe(cls) -> list[tuple[str, float, str]]:
        docs = _docs(cls)
        return [(_public(f.name), float(f.default), docs.get(f.name, "")) for f in fields(cls)]  # type: ignore[arg-type]

    def with_overrides(self, pairs: list[str]) -> Thresholds:
        known = {_public(f.name): f.name for f in fields(self)}
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        for pair in pairs:
            name, _, value = pair.partition("=")
            if name.strip() not in known:
                raise UsageError(f"unknown threshold {name!r}; `tenprof report --list-thresholds` lists them")
            try:
                values[known[name.strip()]] = float(value)
            except ValueError as exc:
                raise UsageError(f"threshold {name} needs a number, got {value!r}") from exc
        return Thresholds(**values)


def _public(field_name: str) -> str:
    """launch_bound_max_gpu_busy -> launch_bound.max_gpu_busy (check name, then the threshold)."""
    for check in (
        "launch_bound",
        "data_loading",
        "allocator",
        "memory_growth",
        "memory_fragmentation",
        "idle",
        "sync",
        "transfers",
        "copies",
        "cold_start",
        "slow_step",
        "variance",
        "names",
        "counters",
        "roofline",
    ):
        if field_name.startswith(check + "_"):
            return f"{check}.{field_name[len(check) + 1 :]}"
    return field_name


def _docs(cls: type) -> dict[str, str]:
    """The docstring under each field (dataclass fields keep none, so read them from the source)."""
    import ast
    import inspect

    tree = ast.parse(inspect.getsource(cls))
    body = tree.body[0].body  # type: ignore[attr-defined]
    docs: dict[str, str] = {}
    for node, nxt in itertools.pairwise(body):
        if isinstance(node, ast.AnnAssign) and isinstance(nxt, ast.Expr) and isinstance(nxt.value, ast.Constant):
            docs[node.target.id] = str(nxt.value.value)  # type: ignore[union-attr]
    return docs
