"""The GPUs' clocks during the timeline pass (capture.gpu_clocks, on a stand-in NVML), their table on the
trace clock, their Perfetto counters, and the gpu-clocks-throttled finding on synthetic profiles: a
throttled GPU fires it, full clocks, low clocks while idle, clocks held by a setting, and profiles
without samples do not."""

from __future__ import annotations

import io
import sys
import threading
import types
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pytest

from tenprof.analyses.findings import clocks
from tenprof.analyses.findings.context import Context
from tenprof.analyses.findings.thresholds import Thresholds
from tenprof.capture.gpu_clocks import NOT_INSTALLED, GpuClockSampler, NvmlDevice, _visible
from tenprof.core.rawfiles import GPU_FLOAT_COLUMNS
from tenprof.importers.callsites import Callsites
from tenprof.importers.timeline_builder import build_timeline
from tenprof.importers.timeline_columns import Collector
from tenprof.renderers.perfetto import write_perfetto
from tenprof.store.meta import Meta, write_meta
from tenprof.store.profile import Profile, load_profile, with_tables
from tenprof.store.schema import TABLES
from tests.conftest import DATA

# -- sampling, on a stand-in pynvml


class _NVMLError(Exception):
    pass


def _fake_nvml(
    count: int = 2, sm: float = 1980.0, throttle_only: bool = False, power: bool = True, fail_init: bool = False
) -> types.ModuleType:
    nvml = types.ModuleType("pynvml")
    nvml.NVML_CLOCK_SM, nvml.NVML_CLOCK_MEM, nvml.NVML_TEMPERATURE_GPU = 1, 2, 0  # type: ignore[attr-defined]
    nvml.calls = {"init": 0, "shutdown": 0}  # type: ignore[attr-defined]

    def init() -> None:
        if fail_init:
            raise _NVMLError("Driver Not Loaded")
        nvml.calls["init"] += 1  # type: ignore[attr-defined]

    def shutdown() -> None:
        nvml.calls["shutdown"] += 1  # type: ignore[attr-defined]

    def power_usage(h: int) -> int:
        if not power:
            raise _NVMLError("Not Supported")
        return 350_000 + h  # mW

    nvml.nvmlInit, nvml.nvmlShutdown = init, shutdown  # type: ignore[attr-defined]
    nvml.nvmlDeviceGetCount = lambda: count  # type: ignore[attr-defined]
    nvml.nvmlDeviceGetHandleByIndex = lambda i: i  # type: ignore[attr-defined]
    nvml.nvmlDeviceGetPciInfo = lambda h: types.SimpleNamespace(domain=0, bus=0x10 + h, device=0)  # type: ignore[attr-defined]
    nvml.nvmlDeviceGetUUID = lambda h: f"GPU-{h}abc-{h}"  # type: ignore[attr-defined]
    nvml.nvmlDeviceGetMaxClockInfo = lambda h, kind: 1980 if kind == 1 else 2619  # type: ignore[attr-defined]
    nvml.nvmlDeviceGetClockInfo = lambda h, kind: sm if kind == 1 else 2619  # type: ignore[attr-defined]
    nvml.nvmlDeviceGetPowerUsage = power_usage  # type: ignore[attr-defined]
    nvml.nvmlDeviceGetEnforcedPowerLimit = lambda h: 700_000  # type: ignore[attr-defined]
    nvml.nvmlDeviceGetTemperature = lambda h, kind: 60 + h  # type: ignore[attr-defined]
    reasons = lambda h: 0x4  # noqa: E731
    if throttle_only:  # drivers before 535 name it so
        nvml.nvmlDeviceGetCurrentClocksThrottleReasons = reasons  # type: ignore[attr-defined]
    else:
        nvml.nvmlDeviceGetCurrentClocksEventReasons = reasons  # type: ignore[attr-defined]
    return nvml


def test_the_sampler_reads_each_gpu_at_start_stop_and_between(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    nvml = _fake_nvml(sm=1410.0, throttle_only=True)
    sampler = GpuClockSampler(interval_s=0.01, nvml=nvml)
    sampler.start()
    assert any(t.name == "tenprof-gpu-clocks" and t.daemon for t in threading.enumerate())
    threading.Event().wait(0.08)
    sampler.stop(cuda_index=lambda devices: {1: 0, 0: 1})  # CUDA's order is not NVML's here
    assert not any(t.name == "tenprof-gpu-clocks" for t in threading.enumerate())
    assert nvml.calls == {"init": 1, "shutdown": 1}  # type: ignore[attr-defined]
    columns = sampler.columns()
    assert sampler.warning == "" and len(columns["ts_ns"]) >= 6  # twice per GPU at least, and the thread's
    assert columns["ts_ns"] == sorted(columns["ts_ns"])
    first = {d: i for i, d in reversed(list(enumerate(columns["device"])))}
    assert columns["power_w"][first[1]] == 350.0 and columns["power_w"][first[0]] == 350.001  # NVML 1 is CUDA 0
    assert set(columns["sm_clock_mhz"]) == {1410.0} and set(columns["max_sm_clock_mhz"]) == {1980.0}
    assert set(columns["power_limit_w"]) == {700.0} and set(columns["clock_reasons"]) == {4}
    assert set(columns["memory_clock_mhz"]) == {2619.0}


def _wait_for(sampler: GpuClockSampler, rows: int) -> None:
    """Until the sampler holds `rows` rows (a stalled thread fails the test, after a minute)."""
    for _ in range(6000):
        if len(sampler.ts_ns) >= rows:
            return
        threading.Event().wait(0.01)
    raise AssertionError(f"the sampler took {len(sampler.ts_ns)} rows, not {rows}")


def test_a_paused_sampler_reads_nothing_until_resumed_and_stops_while_paused(monkeypatch: pytest.MonkeyPatch) -> None:
    # The steps timed un-profiled run with the reader paused. It may finish the round it is in when the
    # pause comes (2 rows, one per GPU), never more: at 5 ms a round, the 0.1 s paused would hold ~40.
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    sampler = GpuClockSampler(interval_s=0.005, nvml=_fake_nvml())
    sampler.start()
    _wait_for(sampler, 6)
    sampler.paused = True
    paused_at = len(sampler.ts_ns)
    threading.Event().wait(0.1)
    assert sampler.paused and len(sampler.ts_ns) - paused_at <= 2
    held = len(sampler.ts_ns)
    sampler.paused = False
    _wait_for(sampler, held + 4)  # resumed, it reads again
    sampler.paused = True
    sampler.stop(cuda_index=lambda devices: {0: 0, 1: 1})  # returns although paused
    assert not any(t.name == "tenprof-gpu-clocks" for t in threading.enumerate())


def test_what_nvml_cannot_read_is_nan_and_gpus_cuda_does_not_see_are_left_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    sampler = GpuClockSampler(nvml=_fake_nvml(power=False))
    sampler.start()
    sampler.stop(cuda_index=lambda devices: {})  # torch cannot tell: CUDA_VISIBLE_DEVICES' order
    columns = sampler.columns()
    assert set(columns["device"]) == {0} and np.isnan(columns["power_w"]).all()
    assert set(columns["temperature_c"]) == {61.0}  # NVML's GPU 1


def test_cuda_visible_devices_picks_the_gpus_as_cuda_does() -> None:
    devices = [NvmlDevice(i, i, (0, i, 0), f"GPU-{i}{i}{i}-x", 1980.0) for i in range(4)]
    assert _visible(devices, None) == devices
    assert [d.index for d in _visible(devices, "2,0")] == [2, 0]
    assert [d.index for d in _visible(devices, "3,7,1")] == [3]  # CUDA stops at an invalid entry
    assert [d.index for d in _visible(devices, "GPU-111,GPU-222")] == [1, 2]  # UUIDs, by a unique prefix
    assert _visible(devices, "MIG-abc") == devices
    assert _visible(devices, "") == []


def test_without_nvidia_ml_py_or_a_driver_there_is_one_warning_and_no_samples(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml raises ImportError
    sampler = GpuClockSampler()
    sampler.start()
    sampler.stop()
    assert sampler.warning == NOT_INSTALLED and sampler.columns()["ts_ns"] == []
    broken = GpuClockSampler(nvml=_fake_nvml(fail_init=True))
    broken.start()
    broken.stop()
    assert broken.warning == "GPU clocks not sampled: NVML could not start (_NVMLError: Driver Not Loaded)"


# -- the importer: on the trace clock, nulls where NVML could not read


def _sidecar(**gpu: Any) -> Callsites:
    return Callsites(
        frames=[[0, -1, "/work/x.py", 1, "<module>", 0, True]],
        syncs=[["0", 9_000_000, 9_001_000]],  # perf clock: 1 ms behind the trace's
        **gpu,
    )


def _build(callsites: Callsites) -> tuple[dict[str, pa.Table], list[str]]:
    col = Collector()
    from tenprof.importers.formats.kineto_events import decode_events

    sync = {"ph": "X", "cat": "user_annotation", "name": "tenprof::clock_sync#0", "pid": 1, "tid": 1}
    col.add_batch(decode_events(orjson.dumps([{**sync, "ts": 10_000.5, "dur": 1}])))
    tables: dict[str, pa.Table] = {}
    report = build_timeline(col, 0, tables.__setitem__, callsites)
    return tables, report.warnings


def test_samples_are_placed_on_the_trace_clock() -> None:
    values = {name: np.array([1.0, np.nan]) for name in GPU_FLOAT_COLUMNS}
    tables, warnings = _build(
        _sidecar(
            gpu_ts=np.array([9_500_000, 9_400_000]),
            gpu_device=np.array([0, 1]),
            gpu_values=values,
            gpu_reasons=np.array([4, -1]),
        )
    )
    samples = tables["gpu_samples"].to_pydict()
    assert samples["ts_ns"] == [10_400_000, 10_500_000] and samples["device"] == [1, 0]  # in time order
    assert samples["sm_clock_mhz"] == [None, 1.0] and samples["clock_reasons"] == [None, 4]
    assert warnings == []
    no_lines = _sidecar(gpu_ts=np.array([9_500_000]), gpu_device=np.array([0]), gpu_reasons=np.array([0]))
    no_lines.frames = []  # recorded with lines off: no call paths to join, the markers still place them
    assert _build(no_lines)[0]["gpu_samples"].column("ts_ns").to_pylist() == [10_500_000]
    tables, warnings = _build(_sidecar(gpu_warning=NOT_INSTALLED))
    assert tables["gpu_samples"].num_rows == 0 and warnings == [NOT_INSTALLED]


# -- the finding, on synthetic profiles

MS = 1_000_000


def _table(table: str, **columns: Any) -> pa.Table:
    """A table of `table`'s schema: the columns given, every other one a default (-1, '', False, NaN)."""
    schema = TABLES[table]
    n = len(next(iter(columns.values())))
    filled = {}
    for field in schema:
        if field.name in columns:
            filled[field.name] = pa.array(columns[field.name], field.type)
        elif pa.types.is_string(field.type):
            filled[field.name] = pa.array([""] * n, field.type)
        elif pa.types.is_boolean(field.type):
            filled[field.name] = pa.array([False] * n, field.type)
        elif pa.types.is_floating(field.type):
            filled[field.name] = pa.array([float("nan")] * n, field.type)
        else:
            filled[field.name] = pa.array([-1] * n, field.type)
    return pa.table(filled, schema=schema)


def _profile(tmp_path: Path, sm: list[float], reasons: list[int], idle_after_ms: float = 100.0) -> Profile:
    """5 steps of 100 ms on GPU 0, each running kernels for its first `idle_after_ms`; NVML read every 50 ms
    (SM clock `sm[i]` of 1980 MHz, `reasons[i]`) from the first step's start."""
    write_meta(tmp_path, Meta())
    starts = [k * 100 * MS for k in range(5)]
    steps = _table(
        "steps",
        step=list(range(5)),
        start_ns=starts,
        end_ns=[s + 100 * MS for s in starts],
        duration_ns=[100 * MS] * 5,
        complete=[True] * 5,
        capture_on=[True] * 5,
    )
    k_start = [s + 1 * MS for s in starts]
    k_end = [s + int(idle_after_ms * MS) - 1 * MS for s in starts]
    kernels = _table(
        "kernels",
        kernel_id=list(range(5)),
        name=["gemm"] * 5,
        device=[0] * 5,
        stream=[7] * 5,
        start_ns=k_start,
        end_ns=k_end,
        duration_ns=[e - s for s, e in zip(k_start, k_end, strict=True)],
    )
    ts = [int(25 * MS + 50 * MS * i) for i in range(len(sm))]
    samples = _table(
        "gpu_samples",
        ts_ns=ts,
        device=[0] * len(ts),
        sm_clock_mhz=sm,
        max_sm_clock_mhz=[1980.0] * len(ts),
        memory_clock_mhz=[2619.0] * len(ts),
        power_w=[699.0] * len(ts),
        power_limit_w=[700.0] * len(ts),
        temperature_c=[71.0] * len(ts),
        clock_reasons=reasons,
    )
    return with_tables(load_profile(tmp_path), {"steps": steps, "kernels": kernels, "gpu_samples": samples})


def _check(profile: Profile) -> list[Any]:
    return clocks.check(Context(profile, Thresholds()))


def test_a_gpu_slowed_for_its_temperature_is_reported(tmp_path: Path) -> None:
    # 10 samples over the 5 steps, every other one at 1410 MHz with the software thermal slowdown asserted
    sm = [1410.0 if i % 2 else 1980.0 for i in range(10)]
    found = _check(_profile(tmp_path, sm, [0x20 if i % 2 else 0 for i in range(10)]))
    assert len(found) == 1
    f = found[0]
    assert f.id == "gpu-clocks-throttled" and "thermal" in f.title and "temperature" in f.fix
    # the analysed steps are 1..4 (step 0 is start-up): 8 samples, 4 throttled
    assert f.numbers["busy_samples"] == 8 and f.numbers["throttled_samples"] == 4
    assert f.numbers["throttled_share"] == 0.5 and f.numbers["lowest_sm_clock_mhz"] == 1410.0
    assert f.numbers["power_w"] == 699.0 and f.numbers["power_limit_w"] == 700.0 and f.numbers["temperature_c"] == 71
    text = " ".join(f.seen)
    assert "1410 MHz" in text and "699 W" in text and "700 W limit" in text and "71 C" in text
    # the kernel time of steps 1..4 (4 x 98 ms), half of it at 1410 of 1980 MHz
    assert f.cost_ns == int(4 * 98 * MS * 0.5 * (1 - 1410 / 1980))


def test_running_at_the_power_cap_is_not_reported(tmp_path: Path) -> None:
    """Dense kernels on a Hopper card sit at the board's power limit below the top clock as a matter of
    course: the power cap alone is not a fault to report."""
    sm = [1410.0 if i % 2 else 1980.0 for i in range(10)]
    assert not _check(_profile(tmp_path, sm, [0x4 if i % 2 else 0 for i in range(10)]))


def test_full_clocks_are_not_reported(tmp_path: Path) -> None:
    assert _check(_profile(tmp_path, [1980.0] * 10, [0] * 10)) == []


def test_low_clocks_while_the_gpu_idles_are_not_reported(tmp_path: Path) -> None:
    # kernels run the first 20 ms of each step; the samples (at 25 and 75 ms) all fall in the idle rest
    assert _check(_profile(tmp_path, [345.0] * 10, [0x1] * 10, idle_after_ms=20)) == []


def test_clocks_held_by_a_setting_are_not_throttling(tmp_path: Path) -> None:
    assert _check(_profile(tmp_path, [1410.0] * 10, [0x2] * 10)) == []  # applications clocks
    assert len(_check(_profile(tmp_path, [1410.0] * 10, [-1] * 10))) == 1  # no reasons recorded: reported


def test_profiles_without_samples_say_nothing() -> None:
    profile = load_profile(DATA / "matmul64")  # recorded before the table existed
    assert profile.table("gpu_samples").num_rows == 0
    assert clocks.check(Context(profile, Thresholds())) == []


# -- Perfetto: a counter track per GPU and quantity, only with samples


def test_perfetto_has_clock_power_and_temperature_tracks_only_with_samples(tmp_path: Path) -> None:
    profile = _profile(tmp_path, [1410.0, 1980.0], [4, 0])
    out = io.BytesIO()
    write_perfetto(profile, out)
    events = orjson.loads(out.getvalue())["traceEvents"]
    counters = [e for e in events if e["ph"] == "C"]
    assert {e["name"] for e in counters} == {"GPU 0 SM clock", "GPU 0 power", "GPU 0 temperature"}
    assert [e["args"] for e in counters if e["name"] == "GPU 0 SM clock"] == [{"MHz": 1410.0}, {"MHz": 1980.0}]
    assert all(e["pid"] == 1_000_000 for e in counters)
    bare = with_tables(profile, {"gpu_samples": TABLES["gpu_samples"].empty_table()})
    out = io.BytesIO()
    write_perfetto(bare, out)
    assert not [e for e in orjson.loads(out.getvalue())["traceEvents"] if e["ph"] == "C"]
