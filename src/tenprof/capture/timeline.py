"""The timeline pass: torch.profiler (Kineto/CUPTI) for ops, kernels, copies, API calls and memory,
plus tenprof's call-site log for Python lines. Produces raw files; the importer builds the tables.

Some steps run with the capture off, to time the program as it runs un-profiled (see
`tenprof.capture.overhead_plan`); the call-site log keeps each step boundary's clock reads. For those
steps the torch.profiler session is stopped, not toggled off: in one process, a small MLP's steps ran
at 1.10-1.26x the plain loop's with a session toggled off, and at 0.96-1.06x once it was stopped
(docs/BENCHMARKS.md). A new session starts with the next recorded step, numbering its steps on; each
session writes a part of the trace, which the importer joins.

Raw files written into `raw_dir`:
    kineto_trace.json   Kineto's chrome trace (the parent gzips it after import); kineto_trace.1.json, ...
                        the parts recorded after each stretch of steps run un-profiled
    callsites.json.gz   the call-site sidecar (see tenprof.importers.callsites), with the script's own
                        Triton and extension launches (tenprof.capture.own_launches) and the host
                        sampler's samples (tenprof.capture.host_sampler), the DataLoader workers' too;
                        a scope's record carries the numbers given to tenprof.scope; and the
                        tokens given to tenprof.step, the numbers of the script's Triton launches
                        (their launch_metadata) and the GPUs' clocks (tenprof.capture.gpu_clocks)
    workers/            the workers' samples while they run (tenprof.capture.worker_sampler); merged
                        into the sidecar and removed when the capture stops
    checks.json         torch.profiler's own totals, when asked to verify
"""

from __future__ import annotations

import gzip
import os
import shutil
import sys
import threading
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from types import CodeType
from typing import Any

import orjson
import torch
from torch.autograd.profiler import record_function

from tenprof.capture import cupti_api_filter, kineto_teardown, profiler_guard, runtime, worker_sampler
from tenprof.capture.callsites import CallsiteLog
from tenprof.capture.cupti_client import CuptiClient, CuptiClientUnavailable, gpu_trace
from tenprof.capture.gpu_clocks import GpuClockSampler
from tenprof.capture.host_sampler import DEFAULT_INTERVAL_NS, HostSampler
from tenprof.capture.input_sampling import InputSampling
from tenprof.capture.log_filter import profiler_lines_kept_out
from tenprof.capture.native_lines import USER_SCOPE, NativeCallsiteRecorder, SamplerGate
from tenprof.capture.native_trace import trace_document, trace_minus_perf_ns, write_trace_document
from tenprof.capture.op_copy import OPS_VAR, StepWindow, fill_trace
from tenprof.capture.overhead_plan import DEFAULT_COUNT, RECORDED, TIMED, OverheadPlan
from tenprof.capture.own_launches import OwnLaunches
from tenprof.capture.schedule import Schedule
from tenprof.capture.session_thread import SessionThread
from tenprof.capture.step_clocks import StepClocks
from tenprof.capture.timed_gpu_periods import TimedGpuPeriods
from tenprof.core.rawfiles import (
    CALLSITES_FILE,
    CHECKS_FILE,
    PROFILER_LOG_FILE,
    STEPPED_ASIDE_FILE,
    SYNC_PREFIX,
    WORKER_SAMPLES_DIR,
    trace_part_name,
)
from tenprof.errors import TenprofError

STEP_RANGE_PREFIX = "ProfilerStep#"  # the name torch.profiler gives each step's range
GPU_PART_PREFIX = "gpu_trace."  # the native capture's GPU-only sessions' exports, until merged
NATIVE_CAPTURES = ("native", "native-cupti")  # the captures whose ops are the native recorder's
INPUTS_VAR = "TENPROF_INPUTS"  # "every": the native captures ask for every op's inputs in every step
_OWN_CUPTI_WINDOW = "tenprof's CUPTI client"  # `_prof` while that client records a window


class NativeCaptureUnavailable(TenprofError):
    """--capture native cannot record this run: a GPU before it is checked there, --schedule, or no native
    recorder (no compiler)."""


@dataclass(frozen=True)
class TimelineOptions:
    lines: bool = True
    shapes: bool = True
    memory: bool = True
    schedule: Schedule | None = None
    verify: bool = False
    overhead_steps: int = DEFAULT_COUNT  # steps run with the capture off to time the un-profiled program
    sample_interval_ns: int = DEFAULT_INTERVAL_NS  # the host sampler's period (0: no sampling)
    # "kineto": torch.profiler records ops, GPU activity, shapes, memory; "native" (experimental): the native
    # recorder records every op, its inputs and the allocators' reports, a CUDA-only session the GPU
    # activity, and tenprof writes the trace (tenprof.capture.native_trace)
    capture: str = "kineto"
    # the profiler library's own lines kept out of this process's stderr (into raw/profiler.log): for a
    # process that profiles itself; under `tenprof run` the launcher filters the child's stderr
    keep_profiler_lines_out: bool = False


def _sample_interval_ns(default: int) -> int:
    """TENPROF_HOST_SAMPLE_HZ, the host sampler's rate (0: off; for measuring what it costs), as a period;
    the default where it is unset or not a number."""
    try:
        rate = float(os.environ.get("TENPROF_HOST_SAMPLE_HZ", ""))
    except ValueError:
        return default
    return int(1e9 / rate) if rate > 0 else 0


# 1 (experimental): tenprof's CUPTI client detached (CUPTI finalized) in the steps run un-profiled and attached
# again for the next recorded ones, as the Kineto capture tears CUPTI down at its stops: attached with nothing
# enabled, CUPTI slowed an H100's MLP steps 1.17-1.37x there (docs/BENCHMARKS.md, "CUPTI torn down").
CUPTI_DETACH_VAR = "TENPROF_CUPTI_DETACH"
# Experimental (issue 36): each stop sees its CUPTI teardown through inside the step boundary, rather than
# leaving it to the next runtime call of the un-profiled steps; a teardown still waiting after
# TEARDOWN_AT_STOP_S is left to the run's end as before
TEARDOWN_AT_STOP_VAR = "TENPROF_TEARDOWN_AT_STOP"
TEARDOWN_AT_STOP_S = 0.2
SAMPLER_GATE_VAR = "TENPROF_SAMPLER_GATE"  # 1: the host sampler skips rounds while the script runs ops; 0: not


def _sampler_gate(recorder: Any, native: bool) -> SamplerGate | None:
    """The host sampler's gate, where the native recorder (whose op callbacks it reads) records and
    TENPROF_SAMPLER_GATE=1 asks for it, or it is unset and the capture is a native one (their cost is
    measured with it; the Kineto capture keeps the sampler as it was measured there)."""
    wanted = os.environ.get(SAMPLER_GATE_VAR, "1" if native else "0") == "1"
    if not wanted or not isinstance(recorder, NativeCallsiteRecorder):
        return None
    return SamplerGate(recorder.lib)


def _input_sampling(recorder: Any) -> InputSampling | None:
    """The native capture asks for every op's inputs in sampled steps alone (capture/input_sampling.py), where
    its recorder can leave them out; TENPROF_INPUTS=every asks in every step. The recorder reads which
    steps' allocator sizes were unchanged from it when it fills the others."""
    if not isinstance(recorder, NativeCallsiteRecorder) or not recorder.samples_inputs:
        return None
    if os.environ.get(INPUTS_VAR, "sampled") == "every":
        return None
    sampling = InputSampling()
    recorder.unchanged_steps = sampling.unchanged
    return sampling


def _samples_ops(sampling: InputSampling | None) -> bool:
    """TENPROF_OPS=sampled: the native captures record ops in the steps the input sampling asks in alone and
    copy them into the others after the run from a recorded step that launched the same work (op_copy.py;
    docs/design/cheaper_capture.md 3.6; not yet the default: measured on an H200 alone)."""
    return sampling is not None and os.environ.get(OPS_VAR, "") == "sampled"


def _device_properties() -> list[dict[str, Any]]:
    """The GPUs as Kineto's trace lists them (deviceProperties), for a GPU side written by tenprof: the keys
    an import of the trace reads (timeline_import.gpus_from_device_properties)."""
    devices = []
    for k in range(torch.cuda.device_count()):
        p = torch.cuda.get_device_properties(k)
        devices.append({"id": k, "name": p.name, "totalGlobalMem": p.total_memory, "computeMajor": p.major,
                        "computeMinor": p.minor, "numSms": p.multi_processor_count})  # fmt: skip
    return devices


def _record_every_step(step: int) -> Any:
    return torch.profiler.ProfilerAction.RECORD


class TimelineSession:
    def __init__(self, raw_dir: Path, options: TimelineOptions, stop_code: CodeType | None = None) -> None:
        self.raw_dir = raw_dir
        self.options = options
        # TENPROF_LINES_RECORDER=native|python: which call-site recorder (see tenprof.capture.native_lines);
        # native unless asked otherwise, the Python one where native cannot be built.
        recorder = os.environ.get("TENPROF_LINES_RECORDER", "native")
        self._native = options.capture in NATIVE_CAPTURES
        # "native-cupti": the GPU activity from tenprof's own CUPTI client (capture/cupti_client.py), enabled
        # while a window records, in place of a CUDA-only torch.profiler session per window
        self._own_cupti = options.capture == "native-cupti"
        self._cupti: CuptiClient | None = None
        # TENPROF_NATIVE_OPS=1: the native recorder records every op too, beside the profiler's (to compare
        # the two); the native capture needs them, and the lines with them
        every_op = self._native or os.environ.get("TENPROF_NATIVE_OPS", "") == "1"
        record_calls = options.lines or self._native
        self.log = CallsiteLog(
            stop_code,
            record_calls=record_calls,
            recorder=recorder,
            every_op=every_op,
            inputs=options.shapes,
            memory=options.memory,
            stand_in=self._native,
        )
        self._step_range: Any = None  # the native capture's open ProfilerStep#N range
        self._step_number = -1  # its N
        self._sampling = _input_sampling(self.log.recorder) if self._native else None
        self._opened_ns = 0  # when the open step range began
        self._without_ops: list[StepWindow] = []  # the steps run with the op callbacks off (TENPROF_OPS)
        self.clock_pairs: list[list[int]] = []  # the native capture's [perf before, wall, perf after] reads
        self._gpu_parts = 0  # the native capture's GPU-only sessions exported so far
        self._session_thread: SessionThread | None = None  # where those start and stop
        self._flag_before: bool | None = None  # torch's profiler flag before the native capture raised it
        # TENPROF_CUPTI_API_FILTER=1 (experimental): the native capture's sessions leave out the API records of
        # calls no analysis reads (capture/cupti_api_filter.py); what each session turned off
        self._api_filter_wanted = os.environ.get(cupti_api_filter.ENV_VAR) == "1"
        self._api_filter: cupti_api_filter.ApiFilter | None = None
        self.api_filter_log: list[dict[str, Any]] = []
        if options.lines:
            self.log.own_launches = OwnLaunches(self.log.interner)
        interval = _sample_interval_ns(options.sample_interval_ns)
        if interval > 0:
            self.log.sampler = HostSampler(self.log.interner, interval, _sampler_gate(self.log.recorder, self._native))
        self.trace_written = False
        self._parts_written = 0
        self._device_totals_us: dict[str, float] = {}  # torch's own totals over every part, for --verify
        self._sync_count = 0
        self._prof: Any = None  # the torch.profiler session, None while stopped for steps run un-profiled
        self._plan = OverheadPlan.for_run(options.overhead_steps, options.schedule)
        self._capture_on = True
        # the session stops for the steps timed un-profiled, GPU activity and all (see `_set_capture`)
        self._gpu_activity = torch.cuda.is_available() and options.schedule is None
        # the copy finds a step's ops by its CUDA launches: a run without them keeps every step's ops
        self._ops_sampled = self._gpu_activity and _samples_ops(self._sampling)
        self._set_teardown = False
        self._teardown_threads: set[int] = set()  # Kineto's CUPTI teardowns the session's stops started
        self._teardown_wait: dict[str, float] = {}  # how the last of them was seen through, for the sidecar
        # per session start (and the run's end): [step, teardowns still waiting, teardowns started so far]
        self._teardowns_pending: list[list[int]] = []
        self._teardowns_started = 0
        if self._gpu_activity and self._plan.count > 0:
            # Kineto leaves CUPTI attached after a session stops unless told to tear it down, and an
            # attached CUPTI slows every CUDA call after it: the steps timed after a stop ran at 1.17-1.33x
            # the same process's plain steps on an H100, 0.98-1.03x with the teardown
            # (benchmarks/toggle_probe.py, 2026-11-27). The next session's start then takes ~13 ms more,
            # between steps. torch turns it off itself where CUDA graphs need it; a user's setting stands.
            # Set for this session only: an in-process profile runs in the user's own process.
            self._set_teardown = "TEARDOWN_CUPTI" not in os.environ
            os.environ.setdefault("TEARDOWN_CUPTI", "1")
        # one per tenprof.step(): the tokens the step it ended held, -1 when not given
        self.step_tokens: list[int] = []
        self._tokens = -1
        # the main thread's CPU time per step and the GC's collections (capture/step_clocks.py: a diagnostic
        # of the steps timed un-profiled against a plain run's)
        self.step_clocks = StepClocks()
        # the timed steps as the GPU saw them (capture/timed_gpu_periods.py: the host's clock reads how fast a
        # step queued its work)
        self.timed_gpu = TimedGpuPeriods()
        self.gpu_clocks: GpuClockSampler | None = None
        self.stepped_aside = ""  # the script's line that started its own profiler, where it did

    # -- lifecycle
    def start(self) -> None:
        # torch warns that a schedule drops events between cycles; tenprof records one cycle.
        warnings.filterwarnings("ignore", message=".*Profiler clears events at the end of each cycle.*")
        profiler_guard.refuse_if_recording()
        if self._native:
            self._check_native()
            if self._gpu_activity:
                self._start_session(0)  # GPU activity alone
        else:
            self._start_session(0)
            self._sync()
        if self.log.recorder is not None:
            self.log.recorder.__enter__()
        if self._native:
            self._set_profiler_flag(True)
            self._sync()
            self._open_step(0)
        runtime.activate(self)
        if self.log.own_launches is not None:
            self.log.own_launches.start()
        if self.log.sampler is not None:
            worker_sampler.install(self.raw_dir / WORKER_SAMPLES_DIR, self.log.sampler.interval_ns)
            self.log.sampler.start()
        # a run with no GPU has no clocks to explain it; TENPROF_GPU_CLOCKS=0 leaves the NVML thread out
        # (for measuring what it costs, as TENPROF_HOST_SAMPLE_HZ=0 does the host sampler)
        if torch.cuda.is_available() and os.environ.get("TENPROF_GPU_CLOCKS", "1") != "0":
            self.gpu_clocks = GpuClockSampler()
            self.gpu_clocks.start()
        self.step_clocks.start()
        self.log.started_ns = time.perf_counter_ns()
        # last: a start that failed leaves no catch behind it (tenprof's own sessions are prepared in own())
        profiler_guard.install(self._step_aside)

    def stop(self) -> None:
        profiler_guard.uninstall()
        self.log.stopped_ns = time.perf_counter_ns()
        self.step_clocks.stop()
        if self._native and self._capture_on:
            self._close_step()
            self._sync()
        if self.log.sampler is not None:
            self.log.sampler.stop()
            self._collect_worker_samples()
        if not self._capture_on:  # the run ended in a step run un-profiled: no session to start for it
            self._set_recorders(True)
        if self.log.own_launches is not None:
            self.log.own_launches.stop()
        runtime.deactivate(self)
        if self.gpu_clocks is not None:
            self.gpu_clocks.stop()
        if self.log.recorder is not None:
            self.log.recorder.close()
            runtime.leave_mode(self.log.recorder)
        if self._prof is not None:
            self._sync()
            self._stop_session()
        if self._teardowns_started:
            self._note_pending_teardowns()
        if self._teardown_threads:  # before the script goes on, or exits (kineto_teardown says why)
            began = time.perf_counter_ns()
            waited_for = len(self._teardown_threads)
            left = kineto_teardown.see_through(self._teardown_threads, torch.cuda.synchronize)
            self._teardown_wait = {
                "threads": waited_for,
                "left": len(left),
                "ms": (time.perf_counter_ns() - began) / 1e6,
            }
        self._close_cupti()
        if self._session_thread is not None:
            self._session_thread.close()
        if self._flag_before is not None:
            torch.autograd.profiler._set_is_profiler_enabled(self._flag_before)
        if self._set_teardown:
            os.environ.pop("TEARDOWN_CUPTI", None)
        self.log.extra = self._extra_keys()
        if self._native:
            self._write_native_trace()
        self.log.to_file(self.raw_dir / CALLSITES_FILE)
        if self.options.verify and self.trace_written:
            self._write_checks()

    # -- the Session protocol used by tenprof.scope / tenprof.step
    def step(self) -> None:
        if self.stepped_aside:  # the script's own profiler records now (`_step_aside`)
            return
        ended = time.perf_counter_ns()
        self.step_clocks.ended()
        state = self._plan.state(self.log.step_calls + 1)  # how the step beginning here runs
        ending_timed = bool(self.log.step_bounds) and self.log.step_bounds[-1][2] == TIMED
        if ending_timed or state == TIMED:
            self.timed_gpu.ended(self.log.step_calls)
        sampler = self.log.sampler
        if sampler is not None:  # tenprof's own work at the boundary is not the script's
            sampler.at_boundary = True
        self.log.step_calls += 1
        off = state != RECORDED
        if off == self._capture_on:
            self._set_capture(not off)  # stops or starts the session in place of torch's step
        elif self._native:  # its session (GPU activity alone) marks no steps: tenprof's own ranges do
            if not off:
                self._native_step()
        elif self._prof is not None:
            self._torch_step()
        if state == TIMED:
            self.timed_gpu.began(self.log.step_calls)
        if sampler is not None:  # (paused by _set_capture where the capture went off)
            sampler.at_boundary = False
        # The clock reads bracket tenprof's own work at the boundary (syncs, toggling), which is left out
        # of both steps' times.
        self.step_clocks.resumed()
        self.log.step_bounds.append([ended, time.perf_counter_ns(), state])
        self.step_tokens.append(self._tokens)
        self._tokens = -1

    def record_tokens(self, tokens: int) -> None:
        """tenprof.step(tokens=N): what the step about to end held (runtime calls this, then `step`)."""
        self._tokens = tokens

    def scope_enter(self, name: str, caller: Any, decorator: bool) -> Any:
        return self.scope_enter_metrics(name, caller, decorator, None)

    def scope_enter_metrics(self, name: str, caller: Any, decorator: bool, metrics: dict[str, float] | None) -> Any:
        """A scope with the numbers given to tenprof.scope (flops=, bytes=, ...), kept in its record."""
        frame_id = self.log.interner.path_id(caller)
        depth = self.log.interner.depth(frame_id)
        insert = depth + 1 if decorator else depth
        start = time.perf_counter_ns()
        rf = self._named_range(name)
        rf.__enter__()
        return (name, frame_id, insert, start, rf, threading.get_native_id(), metrics)

    def scope_exit(self, token: Any) -> None:
        name, frame_id, insert, start, rf, tid, metrics = token
        rf.__exit__(None, None, None)
        record = [name, tid, start, time.perf_counter_ns(), frame_id, insert]
        if metrics:
            record.append(metrics)
        self.log.scopes.append(record)

    # -- internals
    def _step_aside(self, line: str) -> None:
        """The script starts a torch.profiler session of its own (capture.profiler_guard): tenprof stops
        recording for the rest of the run, keeps what it recorded, and says so, so that the script's
        profiler runs as it would without tenprof."""
        if self.stepped_aside:
            return
        self.stepped_aside = line or "an unknown line"
        if self._capture_on:
            self._set_capture(False)
        if self._prof is not None:  # with --schedule, turning the capture off leaves the session open
            self._sync()
            self._stop_session()
        self._close_cupti()  # CUPTI free for the script's profiler
        if isinstance(self.log.recorder, NativeCallsiteRecorder):  # its thread state reads as a profiler
            self.log.recorder.release_profiler_state()
        why = (
            f"the script started its own torch.profiler at {self.stepped_aside}: one process has one profiler, "
            "so tenprof stopped recording there and kept what came before"
        )
        (self.raw_dir / STEPPED_ASIDE_FILE).write_text(why + "\n")
        print(f"tenprof: {why}", file=sys.stderr, flush=True)

    def _extra_keys(self) -> dict[str, Any]:
        """The sidecar's keys that only this pass records (tenprof.importers.callsites)."""
        own = self.log.own_launches
        clocks = self.gpu_clocks
        data = {
            "step_tokens": self.step_tokens,
            "launch_metrics": own.metrics if own is not None else [],
            "launch_metrics_error": own.hook.error if own is not None else "",
            "gpu_samples": clocks.columns() if clocks is not None else {},
            "gpu_samples_warning": clocks.warning if clocks is not None else "",
            # whether the kernels and copies of the steps run with the capture off are in the trace
            "timed_steps_gpu": not self._gpu_activity,
            # [step, ns] per timed step: the time between the CUDA events at its boundaries, as the GPU reached them
            "timed_gpu_ns": self.timed_gpu.periods(),
        }
        ops = getattr(self.log.recorder, "ops", None)
        if ops and not self._native:  # the native capture's are its trace
            data["native_ops"] = ops
        if self.clock_pairs:
            data["clock_pairs"] = self.clock_pairs
        if self.api_filter_log:
            data["cupti_api_filter"] = self.api_filter_log
        if self._teardown_wait:
            data["cupti_teardown_wait"] = self._teardown_wait
        if self._teardowns_pending:
            data["cupti_teardowns_pending"] = self._teardowns_pending
        data["step_clocks"] = self.step_clocks.columns()
        return data

    def _collect_worker_samples(self) -> None:
        """The DataLoader workers' samples into the call-site log; their files go (the log has them)."""
        worker_sampler.uninstall()
        directory = self.raw_dir / WORKER_SAMPLES_DIR
        self.log.worker_samples = worker_sampler.collect(directory, self.log.interner)
        shutil.rmtree(directory, ignore_errors=True)

    def _set_capture(self, on: bool) -> None:
        """Everything tenprof records on or off, at a step boundary: the torch.profiler session (ops, GPU
        activity), Python lines, the host sampler, the GPU clock reader, the launch hooks. Off, the step
        runs as the program does un-profiled; the GPU work of those steps is then not in the trace (the
        analyses take it from the recorded steps). Both ways the GPU is drained inside the boundary's
        bracketed clock reads: going off, so that the session's last kernels are complete when it stops;
        coming on, so that the timed step's last kernels, launched unrecorded, do not run into the next
        recorded step and show there as idle GPU time. With `--schedule` the measured steps are outside
        torch's window already, and only tenprof's own recorders pause."""
        self._capture_on = on
        if self._native:  # the step ranges close before the recorder pauses, and open after it resumes
            if on:
                if self._gpu_activity:
                    torch.cuda.synchronize()
                    self._start_session(self.log.step_calls)
                if self._sampling is not None:
                    self._sampling.resumed()
                self._set_recorders(on)
                self._sync()
                self._open_step(self.log.step_calls)
            else:
                self._close_step()
                self._sample_inputs()
                self._sync()
                if self._prof is not None:
                    self._stop_session()
                self._set_recorders(on)
            return
        if self.options.schedule is None:
            if on:
                if self._gpu_activity:
                    torch.cuda.synchronize()
                self._start_session(self.log.step_calls)
                self._sync()
            elif self._prof is not None:
                self._sync()
                self._stop_session()
        elif self._prof is not None:
            self._torch_step()
        self._set_recorders(on)

    def _torch_step(self) -> None:
        """torch.profiler's own step (its ProfilerStep#N ranges, its schedule), between two clock syncs."""
        self._sync()
        with _without_importing_inductor(), self._profiler_lines_kept_out(), profiler_guard.own():
            self._prof.step()
        self._sync()

    def _check_native(self) -> None:
        """Raise NativeCaptureUnavailable where the native capture cannot record what the run needs."""
        if self.options.schedule is not None:
            raise NativeCaptureUnavailable("--capture native does not take --schedule yet")
        if not isinstance(self.log.recorder, NativeCallsiteRecorder):
            raise NativeCaptureUnavailable("--capture native needs the native recorder, unavailable here (above)")
        if self._own_cupti and self._gpu_activity:
            try:
                self._cupti = CuptiClient.load()
            except CuptiClientUnavailable as exc:
                raise NativeCaptureUnavailable(f"--capture native-cupti: tenprof's CUPTI client: {exc}") from None

    def _native_step(self) -> None:
        """The native capture's step boundary: ProfilerStep#N closed and the next opened, as torch.profiler's
        step does, between two clock syncs."""
        self._sync()
        self._close_step()
        self._sample_inputs()
        self._open_step(self.log.step_calls)
        self._sync()

    def _sample_inputs(self) -> None:
        """After a recorded step: whether the next one asks for every op's inputs (input_sampling.py), and
        with TENPROF_OPS=sampled whether it records its ops at all."""
        recorder = self.log.recorder
        if self._sampling is not None and isinstance(recorder, NativeCallsiteRecorder):
            digest = recorder.step_digest()
            # what the step launched, where tenprof's own CUPTI client saw it (the copy goes by launches)
            launches = self._cupti.launch_digest() if self._ops_sampled and self._cupti is not None else 0
            if recorder.ops_off:
                asks = self._sampling.after_step_without_ops(digest.memory, self._step_number, launches)
            else:
                asks = self._sampling.after_step(digest, self._step_number, launches)
            recorder.ask_inputs(asks)
            if self._ops_sampled:
                recorder.ops_off = not asks
                self._set_profiler_flag(asks)

    def _open_step(self, number: int) -> None:
        self._step_number = number
        self._opened_ns = time.perf_counter_ns()
        self._step_range = self._named_range(f"{STEP_RANGE_PREFIX}{number}")
        self._step_range.__enter__()

    def _close_step(self) -> None:
        if self._step_range is not None:
            self._step_range.__exit__(None, None, None)
            self._step_range = None
            recorder = self.log.recorder
            if isinstance(recorder, NativeCallsiteRecorder) and recorder.ops_off:  # its range went unrecorded
                self._without_ops.append(StepWindow(self._step_number, self._opened_ns, time.perf_counter_ns()))

    def _write_native_trace(self) -> None:
        """The native recorder's ops and ranges as the run's trace, where torch.profiler's export would be."""
        recorder = self.log.recorder
        assert isinstance(recorder, NativeCallsiteRecorder)
        files = [self.raw_dir / f"{GPU_PART_PREFIX}{k}.json.gz" for k in range(self._gpu_parts)]
        parts = [orjson.loads(gzip.decompress(f.read_bytes())) for f in files]
        pairs = self.clock_pairs
        shifted = [(part, trace_minus_perf_ns(pairs, int(part.get("baseTimeNanoseconds", 0)))) for part in parts]
        if self._cupti is not None:  # on the perf clock already
            records, names = self._cupti.records()
            shifted.append((gpu_trace(records, names, os.getpid(), _device_properties()), 0))
        trace = trace_document(recorder.ops, os.getpid(), USER_SCOPE, shifted)
        if self._without_ops and self._sampling is not None:  # their step ranges, ops and call sites (TENPROF_OPS)
            done = fill_trace(trace, recorder.records, self._without_ops, os.getpid())
            # and the steps that launched other work than their kind (the step after each recorded its ops);
            # None where no step's launches were seen (Kineto's CUDA session, TENPROF_CUPTI_API=records)
            changed = self._sampling.launches_changed if self._sampling.launches_seen else None
            self.log.extra["op_copy"] = done | {"launches_changed": changed}
        write_trace_document(self.raw_dir / trace_part_name(0), trace)
        if self._sampling is not None:  # after `ops`, which fills the steps that did not ask
            self.log.extra["input_sampling"] = self._sampling.summary() | recorder.fill_report.as_dict()
        for f in files:  # merged into the trace
            f.unlink()
        self._parts_written = 1
        self.trace_written = True

    def _set_recorders(self, on: bool) -> None:
        """tenprof's own recorders on or off: Python lines, the host sampler, the launch hooks, the GPU
        clock reader."""
        if self._native:
            self._set_profiler_flag(on and not self._ops_off())
        recorder = self.log.recorder
        if recorder is not None:
            # Paused: the native recorder's callbacks go off; the Python recorder (a TorchFunctionMode) is
            # paused, not popped, because torch.compile guards on the mode stack and a change there would
            # run the measured steps through other (recompiled) code, so its dispatch (about 1 us a call)
            # stays in them.
            recorder.paused = not on
        if self.log.sampler is not None:
            self.log.sampler.paused = not on
        if self.log.own_launches is not None:
            self.log.own_launches.paused = not on
        if self.gpu_clocks is not None:
            self.gpu_clocks.paused = not on

    def _start_session(self, step_number: int) -> None:
        """A torch.profiler session whose first step is ProfilerStep#`step_number`; for the native capture
        one that records GPU activity alone (its ranges and ops are the native recorder's)."""
        if self._teardowns_started:
            self._note_pending_teardowns()
        if self._native and self._own_cupti:
            assert self._cupti is not None
            self._cupti.enable(True)
            self._prof = _OWN_CUPTI_WINDOW
            return
        if self._native:
            self._prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA])
            with _without_importing_inductor(), self._profiler_lines_kept_out(), profiler_guard.own():
                # Prepared here: Kineto initialises its client on the first preparation and, on any thread
                # but the one torch registered it from, says "External init callback must run in same
                # thread as registerClient" instead (the session then records the same); started there.
                self._prof.prepare_trace()
                self._gpu_session_thread().call(self._prof.start_trace)
            if self._api_filter_wanted:
                self._api_filter = cupti_api_filter.apply()
                off = self._api_filter.turned_off
                self.api_filter_log.append(
                    {"reason": self._api_filter.reason, "turned_off": sum(len(ids) for ids in off.values())}
                )
            return
        activities = [torch.profiler.ProfilerActivity.CPU]
        if torch.cuda.is_available():
            activities.append(torch.profiler.ProfilerActivity.CUDA)
        if self.options.schedule is not None:
            s = self.options.schedule
            schedule = torch.profiler.schedule(wait=s.wait, warmup=s.warmup, active=s.active, repeat=1)
        else:
            # Record throughout; a schedule (even this trivial one) makes torch mark ProfilerStep#N ranges.
            schedule = _record_every_step
        self._prof = torch.profiler.profile(
            activities=activities,
            schedule=schedule,
            on_trace_ready=self._save_trace,
            record_shapes=self.options.shapes,
            profile_memory=self.options.memory,
            with_stack=False,
        )
        self._prof.step_num = step_number  # read when the session opens its first step range
        with _without_importing_inductor(), self._profiler_lines_kept_out(), profiler_guard.own():
            self._prof.start()

    def _stop_session(self) -> None:
        """Stop the session once the GPU has run everything it was given, so each kernel is in the trace
        whole; the session writes its part of the trace (`_save_trace`)."""
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        if self._prof is _OWN_CUPTI_WINDOW:  # its records stay in the client until the trace is written
            assert self._cupti is not None
            self._cupti.enable(False)
            if os.environ.get(CUPTI_DETACH_VAR) == "1":
                self._cupti.detach()  # collects too; the next window's enable attaches CUPTI again
            else:
                self._cupti.collect()
            self._prof = None
            return
        prof = self._prof
        with self._profiler_lines_kept_out():
            if self._native:
                started = kineto_teardown.threads_started_by(lambda: self._gpu_session_thread().call(prof.stop))
                if self._api_filter is not None:
                    self._api_filter.restore()
                    self._api_filter = None
            else:
                started = kineto_teardown.threads_started_by(prof.stop)
        if os.environ.get("TEARDOWN_CUPTI") == "1" and torch.cuda.is_available():
            # the stop left CUPTI's teardown waiting for a CUDA call (`kineto_teardown`)
            self._teardowns_started += len(started)
            if os.environ.get(TEARDOWN_AT_STOP_VAR) == "1":
                started = kineto_teardown.see_through(started, torch.cuda.synchronize, TEARDOWN_AT_STOP_S)
            self._teardown_threads |= started
        if self._native:  # its GPU activity, merged into the trace at the end (_write_native_trace)
            self._prof.export_chrome_trace(str(self.raw_dir / f"{GPU_PART_PREFIX}{self._gpu_parts}.json.gz"))
            self._gpu_parts += 1
            if self.options.verify:  # the profiler's own totals of its GPU-only records, as of a full session
                self._add_device_totals(self._prof)
        self._prof = None

    def _note_pending_teardowns(self) -> None:
        """How many of the stops' CUPTI teardowns still wait for a runtime call (kineto_teardown.still_running):
        one still there at a session's start means the steps run un-profiled before it had CUPTI attached."""
        waiting = kineto_teardown.still_running(self._teardown_threads)
        self._teardowns_pending.append([self.log.step_calls, len(waiting), self._teardowns_started])

    def _close_cupti(self) -> None:
        """tenprof's CUPTI client off for good, its last records kept: CUPTI is free for another profiler."""
        if self._cupti is not None and not self._cupti.closed:
            self._cupti.close()

    def _ops_off(self) -> bool:
        """Whether the step running now records no ops (TENPROF_OPS=sampled, a step the sampling skips)."""
        recorder = self.log.recorder
        return isinstance(recorder, NativeCallsiteRecorder) and recorder.ops_off

    def _set_profiler_flag(self, on: bool) -> None:
        """torch's "a profiler is running" flag, up while the native capture records, as a torch.profiler
        session raises it: code that records more under a profiler does so under both captures alike (the
        compiler's phase ranges, which the torch-compile-time finding reads; the compiled wrapper's ranges;
        each Triton launch's range). Down in the steps recorded without op records (TENPROF_OPS=sampled):
        their ops, those ranges included, are copied from a recorded step, and with the flag up Inductor
        takes its slow path for every Triton launch (no cached launcher, the range's arguments built).
        Put back as it was when the run ends (`stop`)."""
        if self._flag_before is None:
            self._flag_before = bool(torch.autograd.profiler._is_profiler_enabled)
        torch.autograd.profiler._set_is_profiler_enabled(on)

    def _gpu_session_thread(self) -> SessionThread:
        """The thread the native capture's GPU-activity sessions start and stop on (session_thread)."""
        if self._session_thread is None:
            self._session_thread = SessionThread()
        return self._session_thread

    def _profiler_lines_kept_out(self) -> Any:
        if not self.options.keep_profiler_lines_out:
            return nullcontext()
        return profiler_lines_kept_out(self.raw_dir / PROFILER_LOG_FILE)

    def _named_range(self, name: str) -> Any:
        """A named range (tenprof's markers, the script's scopes): under the native capture the native
        library's, which its recorder sees as record_function's but at a fraction of the cost (about 2
        against 22 us on the 2-core development machine, where a recorded step's boundary took about 400
        us); else record_function. Not beside a profiler session, whose clock the syncs map: there, with
        the native ranges, one of five runs of a test's script gave four backward ops another call's line,
        none of six with record_function (its bracket holds its own Python, a wider interval to intersect)."""
        recorder = self.log.recorder
        if self._native and isinstance(recorder, NativeCallsiteRecorder):
            return recorder.named_range(name)
        return record_function(name)

    def _sync(self) -> None:
        """A named range whose trace start is bracketed on the perf clock, to align the two clocks."""
        label = str(self._sync_count)
        self._sync_count += 1
        before = time.perf_counter_ns()
        with self._named_range(SYNC_PREFIX + label):
            after = time.perf_counter_ns()
        self.log.syncs.append([label, before, after])
        if self._native:  # the wall clock beside the perf clock: Kineto's GPU-only trace is on the wall clock
            pair_before = time.perf_counter_ns()
            wall = time.time_ns()
            self.clock_pairs.append([pair_before, wall, time.perf_counter_ns()])

    def _save_trace(self, prof: Any) -> None:
        prof.export_chrome_trace(str(self.raw_dir / trace_part_name(self._parts_written)))
        self._parts_written += 1
        self.trace_written = True
        if self.options.verify:
            self._add_device_totals(prof)

    def _add_device_totals(self, prof: Any) -> None:
        """torch.profiler's own device-time totals of a part, per key, added to the run's.

        Keys include GPU-side user annotations (steps, scopes), whose "device time" is a range, not
        work; the checker leaves those out by name."""
        by_key = self._device_totals_us
        for avg in prof.key_averages():
            value = float(getattr(avg, "self_device_time_total", getattr(avg, "self_cuda_time_total", 0.0)))
            if value:
                by_key[str(avg.key)] = by_key.get(str(avg.key), 0.0) + value

    def _write_checks(self) -> None:
        """torch.profiler's own device-time totals for the same run, to cross-check ours; none where tenprof's
        own CUPTI client recorded the GPU (no torch.profiler session ran to total it)."""
        checks = {} if self._cupti is not None else {"torch_key_averages_self_device_us": self._device_totals_us}
        (self.raw_dir / CHECKS_FILE).write_bytes(orjson.dumps(checks))


@contextmanager
def _without_importing_inductor() -> Iterator[None]:
    """torch.profiler asks `hasattr(torch, "_inductor")` when a recording cycle begins, to read whether
    Inductor's CUDA graphs are on; torch imports Inductor lazily, so the question alone costs a script that
    never compiles about a second. While the profiler starts a cycle, torch answers no for an Inductor
    not imported yet: its CUDA-graph setting is then the default, off, which is what the profiler reads."""
    if "torch._inductor" in sys.modules or "__getattr__" not in torch.__dict__:
        yield
        return
    lazy = torch.__dict__["__getattr__"]

    def getattr_(name: str) -> Any:
        if name == "_inductor":
            raise AttributeError(name)
        return lazy(name)

    setattr(torch, "__getattr__", getattr_)  # noqa: B010  (a module's __getattr__ is read from its __dict__)
    try:
        yield
    finally:
        setattr(torch, "__getattr__", lazy)  # noqa: B010
