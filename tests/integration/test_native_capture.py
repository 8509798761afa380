"""`tenprof run --capture native` (experimental, CPU only so far): no torch.profiler session; the native
recorder records every op and tenprof writes the trace. Set against the default capture's run of the same
script (conftest's `cpu_steps_run`): the same ops in each step, with the same input shapes, each at the
same line. And `--capture native-cupti`'s session with a stand-in for its CUPTI client: on in each
recorded window, off in the steps timed un-profiled, closed at the end, its records written into the trace."""

from __future__ import annotations

import bisect
import functools
import gzip
import json
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest
import torch

import tenprof
from tenprof.analyses.timeline.summary import attribution, summarize
from tenprof.analyses.timeline.tally import op_gpu_tally
from tenprof.capture.schedule import Schedule
from tenprof.capture.timeline import NativeCaptureUnavailable, TimelineOptions, TimelineSession
from tenprof.cli.main import main
from tenprof.core.rawfiles import CALLSITES_FILE, CHECKS_FILE, trace_part_name
from tenprof.importers.callsites import read_callsites
from tenprof.store.profile import Profile, load_profile
from tests.conftest import CPU_STEPS_SCRIPT, shared_recording


@pytest.fixture(scope="module")
def native_steps_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    def record(folder: Path) -> None:
        (folder / "loop.py").write_text(CPU_STEPS_SCRIPT)
        argv = ["run", "--quiet", "--capture", "native", "-o", str(folder / "prof"), str(folder / "loop.py")]
        assert main([*argv, str(folder / "flags.txt")]) == 0

    return shared_recording(tmp_path_factory, "cpu-steps-native-run", record)


def _ops_by_step(profile: Profile) -> dict[int, Counter[tuple[str, str, str, int]]]:
    """Each step's ops as (name, input shapes, file, line) counts; the line is the op's innermost frame's."""
    ops, frames = profile.table("ops"), profile.table("frames")
    files, lines = frames.column("file").to_pylist(), frames.column("line").to_pylist()
    by_step: dict[int, Counter[tuple[str, str, str, int]]] = {}
    columns = (ops.column(c).to_pylist() for c in ("name", "input_shapes", "step", "frame_id"))
    for name, shapes, step, frame in zip(*columns, strict=True):
        where = (Path(files[frame]).name, lines[frame]) if frame >= 0 else ("", -1)
        by_step.setdefault(step, Counter())[(name, shapes, *where)] += 1
    return by_step


@pytest.mark.xdist_group("cpu_steps_run")
def test_the_native_capture_records_the_ops_and_lines_the_default_one_does(
    native_steps_run: Path, cpu_steps_run: Path
) -> None:
    native, default = load_profile(native_steps_run / "prof"), load_profile(cpu_steps_run / "prof")
    assert native.meta.options["capture"] == "native"
    by_step = _ops_by_step(native)
    assert by_step == _ops_by_step(default)
    assert by_step[1][("aten::mm", "[[64,64],[64,64]]", "loop.py", 8)] == 20
    assert by_step[1][("aten::tanh", "[[64,64]]", "loop.py", 8)] == 20
    assert (native.column("ops", "frame_id") >= 0).all()
    steps = ("step", "complete", "capture_on")
    assert native.table("steps").select(steps).to_pylist() == default.table("steps").select(steps).to_pylist()
    # torch's profiler flag is up in the recorded steps and down in those run un-profiled, under both
    # captures (code that records more under a profiler, compiled code above all, records alike)
    flags = (native_steps_run / "flags.txt").read_text()
    assert flags == (cpu_steps_run / "flags.txt").read_text() == "111111000000111"
    status = json.loads((native_steps_run / "prof" / "timeline" / "raw" / "child_status.json").read_text())
    assert status["trace_written"]
    # most steps' input shapes were copied from sampled ones (and are the default capture's, above), and the
    # summary says so
    sampling = native.meta.timeline.input_sampling
    assert sampling is not None and sampling["filled"] > 0 and sampling["left"] == 0, sampling
    assert sampling["asked_steps"] < sampling["steps"] and default.meta.timeline.input_sampling is None
    assert summarize(native).shapes_note.startswith(f"input shapes asked in {sampling['asked_steps']} of ")
    assert summarize(default).shapes_note == ""


def _memory_by_op(profile: Profile, totals: bool) -> Counter[tuple[str, int, int, int]]:
    """The allocator samples as (op name, bytes, step, total allocated after it or 0 unless `totals`) counts."""
    memory, ops = profile.table("memory"), profile.table("ops")
    names, steps = ops.column("name").to_pylist(), ops.column("step").to_pylist()
    samples: Counter[tuple[str, int, int, int]] = Counter()
    columns = (memory.column(c).to_pylist() for c in ("op_id", "bytes", "total_allocated_bytes"))
    for op, size, total in zip(*columns, strict=True):
        samples[(names[op] if op >= 0 else "", size, steps[op] if op >= 0 else -1, total if totals else 0)] += 1
    return samples


def _outside_ops_by_step(profile: Profile, below: int) -> dict[int, int]:
    """The allocator samples outside any op, counted by the step they fall in, for steps before `below`."""
    memory, steps = profile.table("memory"), profile.table("steps")
    starts, numbers = steps.column("start_ns").to_pylist(), steps.column("step").to_pylist()
    counts: Counter[int] = Counter()
    for op, ts in zip(memory.column("op_id").to_pylist(), memory.column("ts_ns").to_pylist(), strict=True):
        at = bisect.bisect_right(starts, ts) - 1
        if op < 0 and at >= 0 and numbers[at] < below:
            counts[numbers[at]] += 1
    return dict(counts)


@pytest.mark.xdist_group("cpu_steps_run")
def test_the_native_capture_records_the_memory_the_default_one_does(
    native_steps_run: Path, cpu_steps_run: Path
) -> None:
    native, default = load_profile(native_steps_run / "prof"), load_profile(cpu_steps_run / "prof")
    samples = _memory_by_op(native, totals=False)
    in_ops = [Counter({k: v for k, v in c.items() if k[0]}) for c in (samples, _memory_by_op(default, totals=False))]
    assert in_ops[0] == in_ops[1]
    # outside ops (the frees at `x = ...`), the same in the steps before the first window run un-profiled;
    # after one, whether the first free of a tensor made in it is reported depends on when reporting resumed
    assert _outside_ops_by_step(native, 3) == _outside_ops_by_step(default, 3) == {0: 40, 1: 40, 2: 40}
    # each recorded step's 20 matmuls and tanhs allocate their 64x64 fp32 output in the op
    assert samples[("aten::mm", 64 * 64 * 4, 1, 0)] == samples[("aten::tanh", 64 * 64 * 4, 1, 0)] == 20

    # The CPU allocator's total counts the allocations made while memory is profiled, so after the first
    # window run un-profiled (steps 6-11) each capture's totals depend on when its reporting paused; before
    # it, the same.
    def before_off(profile: Profile) -> Counter[tuple[str, int, int, int]]:
        return Counter({k: v for k, v in _memory_by_op(profile, totals=True).items() if 0 <= k[2] < 3})

    assert before_off(native) == before_off(default) != Counter()


def test_the_native_capture_refuses_a_schedule_in_one_line(tmp_path: Path) -> None:
    options = TimelineOptions(capture="native", schedule=Schedule(wait=1, warmup=1, active=2), sample_interval_ns=0)
    session = TimelineSession(tmp_path, options)
    try:
        with pytest.raises(NativeCaptureUnavailable, match="does not take --schedule"):
            session.start()
    finally:
        if session.log.recorder is not None:
            session.log.recorder.__exit__(None, None, None)


def test_tenprof_capture_names_the_default_capture_and_a_wrong_name_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tenprof.cli.run_command import default_capture

    monkeypatch.delenv("TENPROF_CAPTURE", raising=False)
    assert default_capture() == "kineto"
    monkeypatch.setenv("TENPROF_CAPTURE", "native")
    assert default_capture() == "native"
    monkeypatch.setenv("TENPROF_CAPTURE", "nsys")
    script = tmp_path / "s.py"
    script.write_text("print('ran')\n")
    assert main(["run", "--quiet", "-o", str(tmp_path / "prof"), str(script)]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "TENPROF_CAPTURE='nsys'" in err[0] and "kineto, native" in err[0], err
    assert not (tmp_path / "prof").exists()


class _GpuActivitySession:
    """Stands in for the native capture's GPU-activity session (a CUDA-only torch.profiler session) on a
    machine without a GPU, noting each call and the thread it came on."""

    calls: ClassVar[list[tuple[str, str]]] = []  # every session's, in order

    def __init__(self, **_: object) -> None:
        pass

    def _note(self, name: str) -> None:
        self.calls.append((name, threading.current_thread().name))

    def prepare_trace(self) -> None:
        self._note("prepare")

    def start_trace(self) -> None:
        self._note("start")

    def step(self) -> None:
        self._note("step")

    def stop(self) -> None:
        self._note("stop")

    def export_chrome_trace(self, path: str) -> None:
        self._note("export")
        Path(path).write_bytes(gzip.compress(json.dumps({"traceEvents": []}).encode()))


def test_the_native_capture_on_a_gpu_marks_every_step_and_keeps_its_session_off_the_script_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # What the first runs on an H100 showed: the step ranges of all but a window's first step went missing
    # (the boundary stepped the GPU-activity session, which marks nothing, instead of opening tenprof's
    # range); and a session started on the script's thread stands above the memory reporter there.
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a: None)
    monkeypatch.setattr(torch.profiler, "profile", _GpuActivitySession)
    monkeypatch.setenv("TENPROF_GPU_CLOCKS", "0")
    _GpuActivitySession.calls = []
    session = TimelineSession(tmp_path, TimelineOptions(capture="native", sample_interval_ns=0))
    session.start()
    flags = []
    for _ in range(14):  # steps 6-11 run un-profiled
        torch.ones(3).add_(1)
        flags.append(torch.autograd.profiler._is_profiler_enabled)
        session.step()
    session.stop()
    assert flags == [True] * 6 + [False] * 6 + [True] * 2 and not torch.autograd.profiler._is_profiler_enabled
    main, own = threading.current_thread().name, "tenprof-gpu-session_0"
    window = [("prepare", main), ("start", own), ("stop", own), ("export", main)]
    assert _GpuActivitySession.calls == window * 2
    recorder = session.log.recorder
    assert recorder is not None
    names = recorder.ops["names"]
    marked = [names[n] for n in recorder.ops["name_id"] if names[n].startswith("ProfilerStep#")]
    assert marked == [f"ProfilerStep#{k}" for k in (0, 1, 2, 3, 4, 5, 12, 13, 14)]
    memory = recorder.ops["memory"]
    assert set(memory["thread_id"]) == {threading.get_native_id()}
    assert memory["bytes"].count(12) == 8  # torch.ones(3) of each recorded step (0-5, 12-13), none of 6-11


class _FakeCuptiClient:
    """Stands for tenprof's CUPTI client (capture.cupti_client.CuptiClient) where there is no GPU: notes what
    the session asks of it and hands over one kernel and its launch per recorded window, on the perf clock."""

    calls: ClassVar[list[str]] = []

    def __init__(self) -> None:
        self.closed = False
        self._windows = 0
        self._on_since = 0

    @classmethod
    def load(cls) -> _FakeCuptiClient:
        return cls()

    def enable(self, on: bool) -> None:
        self.calls.append("on" if on else "off")
        if on:
            self._on_since = time.perf_counter_ns()

    def collect(self) -> None:
        self.calls.append("collect")
        self._windows += 1

    def close(self) -> None:
        self.calls.append("close")
        self.closed = True

    def detach(self) -> None:
        self.calls.append("detach")
        self._windows += 1

    def launch_digest(self) -> int:
        return 0  # as the client where CUDA calls come as activity records: not known

    def records(self) -> tuple[Any, list[str]]:
        from tenprof.capture.cupti_client import KIND_CONCURRENT_KERNEL, KIND_RUNTIME, RECORD

        records = np.zeros(2 * self._windows, dtype=RECORD)
        start = self._on_since
        for w in range(self._windows):
            launch, kernel = records[2 * w], records[2 * w + 1]
            launch["kind"], launch["name"], launch["correlation"] = KIND_RUNTIME, 1, 100 + w
            launch["start"], launch["end"], launch["thread"] = start + 10 * w, start + 10 * w + 5, 1
            kernel["kind"], kernel["name"], kernel["correlation"] = KIND_CONCURRENT_KERNEL, 0, 100 + w
            kernel["start"], kernel["end"], kernel["stream"] = start + 10 * w + 6, start + 10 * w + 9, 7
        return records, ["fake_kernel", "cudaLaunchKernel"]


def _as_if_on_a_gpu(monkeypatch: pytest.MonkeyPatch, client: type) -> None:
    """The session believes a GPU is there and records it with `client` in place of tenprof's CUPTI client."""
    from tenprof.capture import timeline

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a: None)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    monkeypatch.setattr(timeline, "CuptiClient", client)
    monkeypatch.setenv("TENPROF_GPU_CLOCKS", "0")


def test_native_cupti_turns_its_client_on_in_each_recorded_window_and_writes_what_it_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _as_if_on_a_gpu(monkeypatch, _FakeCuptiClient)
    _FakeCuptiClient.calls = []
    options = TimelineOptions(capture="native-cupti", sample_interval_ns=0, verify=True)
    session = TimelineSession(tmp_path, options)
    session.start()
    for _ in range(14):  # steps 6-11 run un-profiled: the client is off in them
        torch.ones(3).add_(1)
        session.step()
    session.stop()
    assert _FakeCuptiClient.calls == ["on", "off", "collect", "on", "off", "collect", "close"]
    trace = json.loads((tmp_path / trace_part_name(0)).read_bytes())
    kernels = [e for e in trace["traceEvents"] if e.get("cat") == "kernel"]
    launches = [e for e in trace["traceEvents"] if e.get("cat") == "cuda_runtime"]
    assert [e["name"] for e in kernels] == ["fake_kernel"] * 2 and [e["args"]["correlation"] for e in kernels] == [
        100,
        101,
    ]
    assert [e["name"] for e in launches] == ["cudaLaunchKernel"] * 2
    # --verify: no torch.profiler session ran, so there are no totals of torch's to check against
    assert json.loads((tmp_path / CHECKS_FILE).read_bytes()) == {}
    assert not any(p.name.startswith("gpu_trace.") for p in tmp_path.iterdir())  # no Kineto parts under it
    # TENPROF_CUPTI_DETACH=1 (experimental): detached (CUPTI finalized) for the steps run un-profiled, its
    # records collected as by `collect`; the next window's enable attaches it again
    _FakeCuptiClient.calls = []
    monkeypatch.setenv("TENPROF_CUPTI_DETACH", "1")
    (tmp_path / "detached").mkdir()
    session = TimelineSession(tmp_path / "detached", options)
    session.start()
    for _ in range(14):
        torch.ones(3).add_(1)
        session.step()
    session.stop()
    assert _FakeCuptiClient.calls == ["on", "off", "detach", "on", "off", "detach", "close"]
    kernels = [e for e in json.loads((tmp_path / "detached" / trace_part_name(0)).read_bytes())["traceEvents"]]
    assert [e["name"] for e in kernels if e.get("cat") == "kernel"] == ["fake_kernel"] * 2


def _sampled_loop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, inputs: str) -> tuple[list[list[Any]], Any]:
    """40 steps of a tiny training loop under the native capture (TENPROF_INPUTS=`inputs`): its learning rate
    changes every step, an int argument too (as the random generator's offset attention's dropout takes), its
    batch from step 25 on, and another thread runs ops of random sizes all along (as a pin-memory thread
    does). Each step's ops on the loop's thread as (name, signature) in start order, and the session's
    sampling summary."""
    monkeypatch.setenv("TENPROF_INPUTS", inputs)
    monkeypatch.setenv("TENPROF_GPU_CLOCKS", "0")
    torch.manual_seed(0)
    w = torch.randn(16, 16, requires_grad=True)
    opt = torch.optim.SGD([w], lr=0.1, foreach=False)
    schedule = torch.optim.lr_scheduler.LambdaLR(opt, lambda n: 1 / (1 + n))
    (tmp_path / inputs).mkdir()
    options = TimelineOptions(capture="native", sample_interval_ns=0, overhead_steps=0)
    session = TimelineSession(tmp_path / inputs, options)
    session.start()
    done = threading.Event()

    def other_thread() -> None:
        sizes = iter(range(10**9))
        while not done.is_set():
            torch.ones(next(sizes) % 7 + 1).add_(1.0)
            time.sleep(0.0002)

    beside = threading.Thread(target=other_thread)
    beside.start()
    for step in range(40):
        loss = (torch.ones(4 if step < 25 else step, 16) @ w).tanh().sum()
        torch.scalar_tensor(1000 * step + 7, dtype=torch.int64)
        loss.backward()
        opt.step()
        opt.zero_grad()
        schedule.step()
        session.step()
    done.set()
    beside.join()
    session.stop()
    recorder = session.log.recorder
    assert recorder is not None
    ops = recorder.ops
    names, signatures = ops["names"], ops["signatures"]
    starts = sorted(
        (ops["start_ns"][i], ops["end_ns"][i])
        for i, n in enumerate(ops["name_id"])
        if names[n].startswith("ProfilerStep#")
    )
    steps: list[list[Any]] = [[] for _ in starts]
    for i in sorted(range(len(ops["name_id"])), key=ops["start_ns"].__getitem__):
        k = bisect.bisect_right([s for s, _ in starts], ops["start_ns"][i]) - 1
        if k >= 0 and ops["scope"][i] != USER_SCOPE_VALUE and ops["thread_id"][i] == threading.get_native_id():
            sig = ops["signature_id"][i]
            steps[k].append((names[ops["name_id"][i]], signatures[sig] if sig >= 0 else None))
    return steps, session.log.extra.get("input_sampling")


USER_SCOPE_VALUE = torch._C._profiler.RecordScope.USER_SCOPE.value


def test_sampled_inputs_are_those_every_step_records_or_none_never_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sampled, summary = _sampled_loop(tmp_path, monkeypatch, "sampled")
    every, none_ = _sampled_loop(tmp_path, monkeypatch, "every")
    assert none_ is None and len(sampled) == len(every) == 41
    blanked = blanked_ints = left = 0
    for step, (mine, truth) in enumerate(zip(sampled, every, strict=True)):
        assert [name for name, _ in mine] == [name for name, _ in truth], step
        for (name, got), (_, want) in zip(mine, truth, strict=True):
            if got is None:
                left += 1
                continue
            assert got[:3] == want[:3], (step, name)  # shapes, dtypes, strides
            for value, true_value in zip(got[3], want[3], strict=True):
                changing = "." in true_value or name == "aten::scalar_tensor"  # the lr; the int
                assert value == true_value or (value == "" and changing), (step, name)
                blanked += value != true_value
                blanked_ints += value != true_value and name == "aten::scalar_tensor"
    # the learning rate's doubles and the changing int are unknown where copied, not wrong; the one step
    # whose batch changed unasked is left without inputs, then every step asks
    assert blanked > blanked_ints > 0
    # the other thread's ops stay out of the step digests: without that every step but a few asked (32 of 40);
    # and the int that changes every step stays out of them too: with it in, each of the first 26 steps asked
    assert summary["every_step"] and 5 < summary["asked_steps"] <= 20 and summary["left"] >= left
    # the steps listed as asked hold what every-step recording gives, float arguments too
    assert len(summary["asked"]) == summary["asked_steps"] and 26 in summary["asked"]
    assert all(sampled[k] == every[k] for k in summary["asked"])
    # where the batch changed (step 25, unasked); the steps before it kept the allocator sizes of the asked
    # ones, and the step after it asks
    assert [k for k, step in enumerate(sampled) if any(got is None for _, got in step)] == [25]


class _LaunchingCuptiClient(_FakeCuptiClient):
    """A stand-in CUPTI client whose launches the script makes: `launch(kernel)`, called from inside an op,
    notes a launch call there and a kernel after it, as the client's callbacks and activity records would."""

    launches: ClassVar[list[tuple[int, int, int, int]]] = []  # (start, end, pthread, kernel)
    on: ClassVar[bool] = False  # recording (off in the steps run un-profiled, as the client is)
    shift: ClassVar[int] = 0  # added to every kernel launched: other work with the same ops and inputs
    _digested = 0  # the launches the last launch_digest() counted

    def enable(self, on: bool) -> None:
        super().enable(on)
        type(self).on = on

    def launch_digest(self) -> int:
        """The kernels launched since the last call, order-free, as the client's digest (0: none)."""
        launched = type(self).launches[self._digested :]
        self._digested = len(type(self).launches)
        return sum((1 + kernel) * 1_000_003 for *_, kernel in launched)

    @classmethod
    def launch(cls, kernel: int) -> None:
        start = time.perf_counter_ns()
        if cls.on:
            cls.launches.append((start, time.perf_counter_ns(), threading.get_ident(), kernel + cls.shift))

    def records(self) -> tuple[Any, list[str]]:
        from tenprof.capture.cupti_client import KIND_CONCURRENT_KERNEL, KIND_RUNTIME, RECORD

        records = np.zeros(2 * len(self.launches), dtype=RECORD)
        for k, (start, end, pthread, kernel) in enumerate(self.launches):
            call, work = records[2 * k], records[2 * k + 1]
            call["kind"], call["name"], call["correlation"] = KIND_RUNTIME, 0, 1000 + k
            call["start"], call["end"], call["thread"] = start, end, pthread & 0xFFFFFFFF
            work["kind"], work["name"], work["correlation"] = KIND_CONCURRENT_KERNEL, 1 + kernel, 1000 + k
            work["start"], work["end"], work["stream"] = end + 100, end + 200, 7
        kernels = 1 + max((kernel for *_, kernel in self.launches), default=0)
        return records, ["cudaLaunchKernel", *(f"kernel_{k}" for k in range(kernels))]


@torch.library.custom_op("tenprof_test::launching", mutates_args=())
def _launching(x: torch.Tensor, kernel: int) -> torch.Tensor:
    _LaunchingCuptiClient.launch(kernel)
    return x.clone()


def _each_launch_inside_its_op(calls: list[dict[str, Any]], ops: list[dict[str, Any]]) -> None:
    """Each launch call of the trace inside an op that launches (`tenprof_test::launching`) on its thread."""
    for call in calls:
        assert any(
            op["name"] == "tenprof_test::launching"
            and op["tid"] == call["tid"]
            and op["ts"] <= call["ts"]
            and call["ts"] + call["dur"] <= op["ts"] + op["dur"]
            for op in ops
        ), call


@pytest.mark.parametrize("overhead_steps", [0, 3])
def test_ops_recorded_in_sampled_steps_are_copied_into_the_others_by_their_launches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, overhead_steps: int
) -> None:
    # TENPROF_OPS=sampled: the op callbacks are off in the steps the sampling does not ask in; after the run
    # those steps get their ProfilerStep ranges, and the ops of a recorded step that made the same launches,
    # placed so that each launch is inside its op again (capture/op_copy.py).
    _as_if_on_a_gpu(monkeypatch, _LaunchingCuptiClient)
    monkeypatch.setenv("TENPROF_OPS", "sampled")
    _LaunchingCuptiClient.launches, _LaunchingCuptiClient.on = [], False
    options = TimelineOptions(capture="native-cupti", sample_interval_ns=0, overhead_steps=overhead_steps)
    session = TimelineSession(tmp_path, options)
    session.start()
    x = torch.ones(8)
    flag_up: list[bool] = []  # torch's profiler flag in each step
    for _ in range(30):
        flag_up.append(torch.autograd.profiler._is_profiler_enabled)
        y = torch.ops.tenprof_test.launching(x, 0)
        torch.ops.tenprof_test.launching(y * 2, 1)
        session.step()
    session.stop()

    copy = session.log.extra["op_copy"]
    # the flag is up in the steps that record their ops alone: in the others compiled code takes its
    # un-profiled path (Inductor's cached launcher), and the ranges the flag adds are copied with the ops
    without_ops = {w.step for w in session._without_ops}
    asked = set(session.log.extra["input_sampling"]["asked"])
    assert without_ops and asked
    assert [n for n, up in enumerate(flag_up) if up] == sorted(asked - {30})
    assert not torch.autograd.profiler._is_profiler_enabled  # put back when the run ended
    # all recorded steps but the asked ones ran without op records; the tail after the last step() launched
    # nothing
    assert copy["unmatched"] == [30] and 15 <= copy["copied_steps"] == copy["steps_without_ops"] - 1 < 30, copy
    assert copy["launches_changed"] == 0  # the client's launch digest seen, every step's its kind's
    events = json.loads((tmp_path / trace_part_name(0)).read_bytes())["traceEvents"]
    steps = sorted(int(e["name"].split("#")[1]) for e in events if e["name"].startswith("ProfilerStep#"))
    off = set(range(6, 12)) if overhead_steps else set()  # run un-profiled: no range, no launch recorded
    assert steps == sorted(set(range(31)) - off)  # the 30 steps and the tail
    ops = [e for e in events if e.get("cat") == "cpu_op"]
    calls = [e for e in events if e.get("cat") == "cuda_runtime"]
    assert len(calls) == 2 * (30 - len(off))
    _each_launch_inside_its_op(calls, ops)  # in every step, copied or recorded
    copied = [e for e in ops if "tenprof copied from step" in e["args"]]
    assert copied and {e["name"] for e in copied} >= {"tenprof_test::launching", "aten::mul"}
    # what was done reaches the sidecar the importer reads (and from it the profile's meta and summary)
    assert read_callsites(tmp_path / CALLSITES_FILE).op_copy == copy


@_launching.register_fake
def _launching_fake(x: torch.Tensor, kernel: int) -> torch.Tensor:
    return torch.empty_like(x)


# torch 2.13's compiler imports modules that use its own deprecated torch.jit.script_method
@pytest.mark.filterwarnings("ignore:`torch.jit.script_method` is deprecated:DeprecationWarning")
def test_compiled_code_gets_its_ranges_copied_into_the_steps_it_ran_on_its_unprofiled_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # TENPROF_OPS=sampled on compiled code: torch's profiler flag is down in the steps without op records,
    # so the compiled region runs as un-profiled (no compiled-region ranges, Inductor's fast launch path);
    # the ranges the flag adds come with the copied ops, and every launch is inside its op again.
    def body(x: torch.Tensor) -> torch.Tensor:
        y = torch.ops.tenprof_test.launching(x, 0)
        return torch.ops.tenprof_test.launching(torch.relu(y * 2), 1)

    compiled = torch.compile(body)
    compiled(torch.ones(8))  # compiled before the session believes a GPU is there (Dynamo saves CUDA's RNG)
    _as_if_on_a_gpu(monkeypatch, _LaunchingCuptiClient)
    monkeypatch.setenv("TENPROF_OPS", "sampled")
    _LaunchingCuptiClient.launches, _LaunchingCuptiClient.on, _LaunchingCuptiClient.shift = [], False, 0
    session = TimelineSession(tmp_path, TimelineOptions(capture="native-cupti", sample_interval_ns=0, overhead_steps=0))
    session.start()
    for _ in range(16):
        compiled(torch.ones(8))
        session.step()
    session.stop()
    copy = session.log.extra["op_copy"]
    # every step but the asked ones (the first two or three) copied; the tail launched nothing like a step
    assert copy["unmatched"] == [16] and 10 <= copy["copied_steps"] == copy["steps_without_ops"] - 1, copy
    assert copy["launches_changed"] == 0, copy
    events = json.loads((tmp_path / trace_part_name(0)).read_bytes())["traceEvents"]
    ops = [e for e in events if e.get("cat") in ("cpu_op", "user_annotation")]
    calls = [e for e in events if e.get("cat") == "cuda_runtime"]
    assert len(calls) == 2 * 16
    _each_launch_inside_its_op(calls, ops)
    copied = Counter(e["name"] for e in ops if "tenprof copied from step" in e["args"])
    regions = [name for name in copied if name.startswith("Torch-Compiled Region")]
    # recorded with the flag up, copied into each step that ran without it
    assert regions and all(copied[name] == copy["copied_steps"] for name in regions)


def test_kernels_of_a_step_no_recorded_step_matched_have_no_op_and_are_not_called_the_scripts_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The stretch after the last step mark runs with the op callbacks off when the step before it did not
    # ask (it cannot be foreseen) and is like no recorded step: its launches are torch ops', whose records
    # were off. Found on an H200 (2026-11-29, examples/matmul_add.py, 5 steps: its final checksum's two
    # kernels, 12% of the run's kernel time, were named "(user kernel) ..." as if the script had launched
    # them itself). They now stay without an op, and the summary and the tally say why.
    _as_if_on_a_gpu(monkeypatch, _LaunchingCuptiClient)
    monkeypatch.setenv("TENPROF_OPS", "sampled")
    from tenprof.record import inprocess

    # tenprof.profile() records with the default capture: here the native one, to import what it recorded
    monkeypatch.setattr(
        inprocess, "TimelineOptions", functools.partial(TimelineOptions, capture="native-cupti", sample_interval_ns=0)
    )
    _LaunchingCuptiClient.launches, _LaunchingCuptiClient.on, _LaunchingCuptiClient.shift = [], False, 0
    x = torch.ones(8)
    with tenprof.profile(str(tmp_path / "prof"), overhead_steps=0):
        for _ in range(12):
            y = torch.ops.tenprof_test.launching(x, 0)
            torch.ops.tenprof_test.launching(y * 2, 1)
            tenprof.step()
        torch.ops.tenprof_test.launching(x, 3)  # after the last mark, as a script's final checksum
    profile = load_profile(tmp_path / "prof")
    assert (profile.meta.timeline.op_copy or {}).get("unmatched") == [12]
    names = profile.strings("ops", "name").values
    assert not any(n.startswith("(user kernel)") for n in names)
    kernels = profile.table("kernels")
    tail = [k for k, name in enumerate(kernels.column("name").to_pylist()) if name == "kernel_3"]
    assert len(tail) == 1 and kernels.column("op_id").to_pylist()[tail[0]] == -1
    assert "[no op: a step recorded without ops]" in {row.name for row in op_gpu_tally(profile).rows}
    a = attribution(profile)
    assert a.to_user_kernel_ns == 0 and 0 < a.uncopied_ns == a.kernel_time_ns - a.to_op_ns


def test_a_step_that_launches_other_work_with_the_same_ops_makes_the_next_one_record_its_ops(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # From step 12 on the ops launch other kernels (the same ops, inputs and allocations): step 12, run
    # without op records, matches no step recorded before it; its launch digest differs from its kind's, so
    # step 13 records its ops, and step 12 and those after 13 are copied from it. Without the digest the
    # steps from 12 on would wait for the next check (step 22), after this run's end: none would get ops.
    _as_if_on_a_gpu(monkeypatch, _LaunchingCuptiClient)
    monkeypatch.setenv("TENPROF_OPS", "sampled")
    _LaunchingCuptiClient.launches, _LaunchingCuptiClient.on, _LaunchingCuptiClient.shift = [], False, 0
    session = TimelineSession(tmp_path, TimelineOptions(capture="native-cupti", sample_interval_ns=0, overhead_steps=0))
    session.start()
    x = torch.ones(8)
    try:
        for step in range(20):
            _LaunchingCuptiClient.shift = 5 if step >= 12 else 0
            y = torch.ops.tenprof_test.launching(x, 0)
            torch.ops.tenprof_test.launching(y * 2, 1)
            session.step()
    finally:
        _LaunchingCuptiClient.shift = 0
    session.stop()
    copy = session.log.extra["op_copy"]
    assert copy["unmatched"] == [20] and copy["launches_changed"] == 1, copy  # the tail launched nothing
    assert session.log.extra["input_sampling"]["asked"] == [0, 1, 2, 13]
    events = json.loads((tmp_path / trace_part_name(0)).read_bytes())["traceEvents"]
    ranges = {e["name"]: (e["ts"], e["ts"] + e["dur"]) for e in events if e["name"].startswith("ProfilerStep#")}
    source: dict[int, set[int]] = defaultdict(set)  # step -> the steps its ops were copied from
    for e in events:
        if "tenprof copied from step" in e.get("args", {}):
            step = next(int(n.split("#")[1]) for n, (a, b) in ranges.items() if a <= e["ts"] <= b)
            source[step].add(e["args"]["tenprof copied from step"])
    assert all(source[k] <= {1, 2} for k in range(3, 12)) and all(source[k] == {13} for k in (12, *range(14, 20)))
