"""Kernels and CUDA calls joined to the op they were launched in: by Kineto's External id where it names an op
running on the call's thread at the call, else by the call's innermost enclosing op. Two public traces (a torch 2.3
Switch Transformer trace of an A100, param's linear_kineto on an RTX 2080 Ti) carry External ids that name
unrelated ops (all 225 and 5412 launches: one set equal to the CUPTI correlation ids), which gave aten::view GPU
time and put a 322 ms first launch in an op that ran 25 ms later."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import orjson

from tenprof.cli.main import main
from tenprof.store.profile import Profile, load_profile

CALLS = 4


def _trace(tmp_path: Path, ids_right: bool) -> Profile:
    """Four aten::mm ops, each launching one kernel, then four aten::view ops that launch nothing. With
    `ids_right`, each launch's External id is its mm's; else it is the id of a view (a number naming an
    unrelated op, as the broken traces have it)."""
    events: list[dict[str, object]] = []
    for i in range(CALLS):
        base = 1000.0 * i
        events += [
            {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": base, "dur": 50.0,
             "args": {"External id": 10 + i}},
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": base + 10,
             "dur": 8.0, "args": {"correlation": 100 + i, "External id": 10 + i if ids_right else 20 + i}},
            {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": base + 30, "dur": 300.0,
             "args": {"correlation": 100 + i, "device": 0, "stream": 7,
                      "External id": 10 + i if ids_right else 20 + i}},
        ]  # fmt: skip
    for i in range(CALLS):
        events.append({"ph": "X", "cat": "cpu_op", "name": "aten::view", "pid": 1, "tid": 1,
                       "ts": 5000.0 + 100 * i, "dur": 5.0, "args": {"External id": 20 + i}})  # fmt: skip
    trace = tmp_path / "trace.json"
    trace.write_bytes(orjson.dumps({"schemaVersion": 1, "traceEvents": events, "baseTimeNanoseconds": 0}))
    assert main(["import", "--quiet", str(trace), "-o", str(tmp_path / "out")]) == 0
    return load_profile(tmp_path / "out")


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
