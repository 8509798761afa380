"""The numbers the user attaches: tenprof.scope(name, flops=..., bytes=..., **metrics) per entry of a scope,
tenprof.step(tokens=N) per step, and a Triton kernel's launch_metadata per launch, through Triton's launch
hook (here a stand-in `triton`: the real one runs in tests/gpu/test_user_metrics_gpu.py). They land in
the user_metrics table (owner scope | launch) and steps.tokens; the ops keep Kineto's Concrete Inputs."""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pyarrow as pa
import pytest

import tenprof
from tenprof.capture.frames import new_interner
from tenprof.capture.own_launches import JIT_MODULE, LaunchMetadataHook, OwnLaunches, launch_numbers
from tenprof.capture.runtime import checked_tokens
from tenprof.importers.callsites import Callsites, read_callsites
from tenprof.importers.formats.kineto_events import decode_events
from tenprof.importers.timeline_builder import build_timeline
from tenprof.importers.timeline_columns import Collector


def test_a_scope_refuses_what_is_not_a_number_and_names_the_keyword() -> None:
    with pytest.raises(TypeError, match="flops="):
        tenprof.scope("attn", flops="1e9")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="tiles="):
        tenprof.scope("attn", bytes=4096, tiles=[1, 2])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="flops="):
        tenprof.scope("attn", flops=True)
    scope = tenprof.scope("attn", flops=np.int64(10), bytes=None, tiles=3)
    assert scope.metrics == {"flops": 10.0, "tiles": 3.0} and all(type(v) is float for v in scope.metrics.values())


def test_scope_and_step_without_a_session_do_nothing() -> None:
    @tenprof.scope("work", flops=2.0)
    def work(x: int) -> int:
        return x + 1

    with tenprof.scope("block", bytes=8):
        assert work(1) == 2
    tenprof.step()
    tenprof.step(tokens=512)
    with pytest.raises(TypeError, match="tokens="):
        tenprof.step(tokens=1.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="tokens="):
        tenprof.step(tokens=-1)
    assert checked_tokens(np.int32(7)) == 7


class _LazyDict:
    """Triton's LazyDict: `get()` runs the kernel's launch_metadata function once."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data
        self.extras: list[Any] = []

    def get(self) -> dict[str, Any]:
        for fn, args in self.extras:
            self.data = self.data | fn(*args)
        self.extras.clear()
        return self.data

    def add(self, fn: Any, args: Any) -> None:
        self.extras.append((fn, args))


class _HookChain:
    """Triton 3.5+'s knobs.runtime.launch_enter_hook."""

    def __init__(self) -> None:
        self.calls: list[Any] = []

    def add(self, fn: Any) -> None:
        if fn not in self.calls:
            self.calls.append(fn)

    def remove(self, fn: Any) -> None:
        if fn in self.calls:
            self.calls.remove(fn)

    def __call__(self, metadata: Any) -> None:
        for fn in self.calls:
            fn(metadata)


class _FakeTriton:
    """sys.modules' triton, triton.knobs and triton.runtime.jit, with JITFunction.run launching as Triton
    does: the LazyDict (with the kernel's launch_metadata function added) handed to the enter hook."""

    def __init__(self, chain: bool) -> None:
        self.chain = chain
        self.runtime = types.SimpleNamespace(launch_enter_hook=_HookChain() if chain else None)
        fake = self

        class JITFunction:
            def __init__(self, fn: Any, launch_metadata: Any = None) -> None:
                self.fn = fn
                self.__name__ = fn.__name__
                self.launch_metadata = launch_metadata

            def __getitem__(self, grid: Any) -> Any:
                return lambda *args: self.run(*args, grid=grid)

            def run(self, *args: Any, grid: Any = None) -> Any:
                hook = fake.runtime.launch_enter_hook
                metadata = _LazyDict({"name": self.__name__, "function": 1234, "stream": 7})
                if self.launch_metadata is not None:
                    metadata.add(self.launch_metadata, (grid, None, dict(enumerate(args))))
                if hook is not None:
                    hook(metadata)
                return self.fn(*args)

        self.JITFunction = JITFunction

    @classmethod
    def installed(cls, chain: bool = True) -> Iterator[_FakeTriton]:
        fake = cls(chain)
        jit = types.ModuleType(JIT_MODULE)
        jit.JITFunction = fake.JITFunction  # type: ignore[attr-defined]
        knobs = types.ModuleType("triton.knobs")
        knobs.runtime = fake.runtime  # type: ignore[attr-defined]
        saved = {name: sys.modules.get(name) for name in (JIT_MODULE, "triton.knobs")}
        sys.modules[JIT_MODULE], sys.modules["triton.knobs"] = jit, knobs
        try:
            yield fake
        finally:
            for name, module in saved.items():
                if module is None:
                    sys.modules.pop(name, None)
                else:
                    sys.modules[name] = module


@pytest.fixture
def triton_chain() -> Iterator[_FakeTriton]:
    yield from _FakeTriton.installed(chain=True)


@pytest.fixture
def triton_single_hook() -> Iterator[_FakeTriton]:
    yield from _FakeTriton.installed(chain=False)


def _flops(grid: Any, metadata: Any, args: dict[int, Any]) -> dict[str, Any]:
    n = args[0]
    return {"name": f"gather n={n}", "flops32": 2.0 * n, "bytes": 8 * n, "tiles": np.int64(4), "mode": "fast"}


def test_a_launch_gets_the_numbers_its_launch_metadata_gives(triton_chain: _FakeTriton) -> None:
    launches = OwnLaunches(new_interner(None))
    launches.start()
    plain = triton_chain.JITFunction(lambda n: n)
    plain.__name__ = "plain"
    measured = triton_chain.JITFunction(lambda n: n * 2, launch_metadata=_flops)
    measured.__name__ = "measured"
    assert plain[(1,)](3) == 3
    assert triton_chain.runtime.launch_enter_hook.calls == []  # no kernel declared any: no hook
    assert measured[(1,)](5) == 10
    assert triton_chain.runtime.launch_enter_hook.calls == [launches.hook]
    assert plain[(1,)](4) == 4  # the hook runs for it too, and finds no record waiting
    assert measured[(1,)](6) == 12
    launches.stop()
    assert triton_chain.runtime.launch_enter_hook.calls == []  # removed at the end
    assert launches.names == ["plain", "measured", "plain", "measured"]
    # Triton's own keys (name, function, stream) and what is not a number are left out
    assert launches.metrics == [
        [1, "flops32", 10.0],
        [1, "bytes", 40.0],
        [1, "tiles", 4.0],
        [3, "flops32", 12.0],
        [3, "bytes", 48.0],
        [3, "tiles", 4.0],
    ]
    assert len(launches.records) == 16


def test_a_launch_metadata_function_that_raises_costs_the_launch_nothing(triton_chain: _FakeTriton) -> None:
    def broken(grid: Any, metadata: Any, args: dict[int, Any]) -> dict[str, Any]:
        raise ZeroDivisionError("no flops today")

    launches = OwnLaunches(new_interner(None))
    launches.start()
    kernel = triton_chain.JITFunction(lambda n: n + 1, launch_metadata=broken)
    assert kernel[(1,)](1) == 2 and kernel[(1,)](2) == 3
    launches.stop()
    assert launches.metrics == [] and len(launches.names) == 2
    assert launches.hook.error == "ZeroDivisionError: no flops today"


def test_an_older_tritons_single_hook_is_chained_and_put_back(triton_single_hook: _FakeTriton) -> None:
    seen: list[Any] = []
    proton = seen.append  # another tool's hook, there before the capture
    triton_single_hook.runtime.launch_enter_hook = proton
    launches = OwnLaunches(new_interner(None))
    launches.start()
    kernel = triton_single_hook.JITFunction(lambda n: n, launch_metadata=_flops)
    kernel[(1,)](2)
    assert triton_single_hook.runtime.launch_enter_hook is launches.hook and len(seen) == 1
    launches.stop()
    assert triton_single_hook.runtime.launch_enter_hook is proton
    assert [m[1:] for m in launches.metrics] == [["flops32", 4.0], ["bytes", 16.0], ["tiles", 4.0]]


def test_the_hook_without_a_waiting_launch_reads_nothing() -> None:
    import threading

    local = threading.local()
    hook = LaunchMetadataHook(local)
    metadata = _LazyDict({"name": "triton_poi_fused_0"})
    metadata.add(lambda: pytest.fail("the metadata function ran"), ())
    hook(metadata)  # Inductor's launch: no own launch on this thread
    assert metadata.extras
    assert launch_numbers({"flops": 3, "ok": False, "bytes": 2.5}) == {"flops": 3.0, "bytes": 2.5}


def _trace_events() -> bytes:
    """A Kineto trace on the trace clock (us): a clock-sync marker at 10, a step, a scope around an aten
    op with Concrete Inputs, and a launch call outside every op with its kernel."""
    events = [
        {"ph": "X", "cat": "user_annotation", "name": "tenprof::clock_sync#0", "pid": 1, "tid": 1, "ts": 10, "dur": 1},
        {"ph": "X", "cat": "cpu_op", "name": "ProfilerStep#0", "pid": 1, "tid": 1, "ts": 20, "dur": 300},
        {"ph": "X", "cat": "user_annotation", "name": "attn", "pid": 1, "tid": 1, "ts": 30, "dur": 40},
        {"ph": "X", "cat": "user_annotation", "name": "attn", "pid": 1, "tid": 1, "ts": 200, "dur": 40},
        {
            "ph": "X",
            "cat": "cpu_op",
            "name": "aten::add",
            "pid": 1,
            "tid": 1,
            "ts": 40,
            "dur": 10,
            "args": {"Input Dims": [[4], [4], []], "Concrete Inputs": ["", "", "1"]},
        },
        {
            "ph": "X",
            "cat": "cuda_runtime",
            "name": "cudaLaunchKernel",
            "pid": 1,
            "tid": 1,
            "ts": 100,
            "dur": 5,
            "args": {"correlation": 7},
        },
        {
            "ph": "X",
            "cat": "kernel",
            "name": "gather_kernel",
            "pid": 0,
            "tid": 7,
            "ts": 110,
            "dur": 20,
            "args": {"correlation": 7, "device": 0, "stream": 7, "grid": [1, 1, 1], "block": [128, 1, 1]},
        },
    ]
    return msgspec.json.encode(events)


def _sidecar(**more: Any) -> Callsites:
    """The call-site log of that run on a perf clock 1 ms behind the trace's."""
    behind = 1_000_000
    return Callsites(
        frames=[[0, -1, "/work/x.py", 3, "<module>", 0, True]],
        syncs=[["0", 10_000 - behind - 500, 10_000 - behind + 500]],
        scopes=[
            ["attn", 1, 29_000 - behind, 71_000 - behind, 0, 0, {"flops": 1e9, "bytes": 4096.0}],
            ["attn", 1, 199_000 - behind, 241_000 - behind, 0, 0, {"flops": 1e9, "bytes": 4096.0}],
        ],
        step_calls=1,
        step_bounds=[[330_000 - behind, 331_000 - behind, 0]],
        started_ns=15_000 - behind,
        stopped_ns=400_000 - behind,
        launch_thread=np.array([1], dtype=np.int64),
        launch_start=np.array([95_000 - behind], dtype=np.int64),
        launch_end=np.array([140_000 - behind], dtype=np.int64),
        launch_frame=np.array([0], dtype=np.int64),
        launch_name=["gather_kernel"],
        **more,
    )


def _build(callsites: Callsites | None) -> dict[str, pa.Table]:
    col = Collector()
    col.add_batch(decode_events(_trace_events()))
    tables: dict[str, pa.Table] = {}
    build_timeline(col, 0, tables.__setitem__, callsites)
    return tables


def test_the_records_become_user_metrics_tokens_and_input_values() -> None:
    sidecar = _sidecar(launch_metrics=[[0, "flops32", 2e6], [0, "bytes", 8e3]], step_tokens=[512])
    tables = _build(sidecar)
    ops = tables["ops"].to_pydict()
    launch_op = ops["name"].index("(user kernel) gather_kernel")
    assert ops["input_values"][ops["name"].index("aten::add")] == '["","","1"]'
    assert ops["input_values"][launch_op] == ""
    rows = sorted(zip(*tables["user_metrics"].to_pydict().values(), strict=True))
    assert rows == [
        ("launch", launch_op, "bytes", 8e3),
        ("launch", launch_op, "flops32", 2e6),
        ("scope", 0, "bytes", 4096.0),
        ("scope", 0, "flops", 1e9),
        ("scope", 1, "bytes", 4096.0),
        ("scope", 1, "flops", 1e9),
    ]
    assert tables["steps"].column("tokens").to_pylist() == [512]
    kernels = tables["kernels"].to_pydict()
    assert ops["op_id"][launch_op] == kernels["op_id"][0]  # the numbers' op is the one holding the kernel


def test_a_recording_without_the_new_records_builds_empty_tables() -> None:
    old = _sidecar()
    old.scopes = [row[:6] for row in old.scopes]  # scope records before they carried numbers
    for callsites in (old, None):
        tables = _build(callsites)
        assert tables["user_metrics"].num_rows == 0 and tables["gpu_samples"].num_rows == 0
        assert tables["steps"].column("tokens").to_pylist() == [-1]
    events = msgspec.json.decode(_trace_events())
    del events[4]["args"]["Concrete Inputs"]
    col = Collector()
    col.add_batch(decode_events(msgspec.json.encode(events)))
    tables = {}
    build_timeline(col, 0, tables.__setitem__, None)
    assert set(tables["ops"].column("input_values").to_pylist()) == {""}


def test_the_timeline_passs_own_sidecar_keys_are_read(tmp_path: Path) -> None:
    import gzip

    import orjson

    main_file = tmp_path / "callsites.json.gz"
    main_file.write_bytes(gzip.compress(orjson.dumps({"version": 1, "scopes": [["s", 1, 5, 9, -1, -1]]})))
    assert read_callsites(main_file).step_tokens == []  # a recording made before these keys
    extra = {"step_tokens": [3, -1], "launch_metrics": [[0, "flops", 1.5]], "gpu_samples_warning": "no NVML"}
    base = {"version": 1, "scopes": [["s", 1, 5, 9, -1, -1]]}
    main_file.write_bytes(gzip.compress(orjson.dumps(base | extra)))
    log = read_callsites(main_file)
    assert log.step_tokens == [3, -1] and log.launch_metrics == [[0, "flops", 1.5]] and log.gpu_warning == "no NVML"
    assert log.shifted(100).scopes == [["s", 1, 105, 109, -1, -1]]
