"""What each part of tenprof's timeline capture costs, in one process, phases interleaved.

    python benchmarks/capture_components.py --workload mlp|tiny-mlp|gpt2-fp32|gpt2-compiled|conv [--steps 50]
                                            [--rounds 5] [--phases plain,kineto,...]

One model, built (and compiled) once. Each round runs every phase once, in an order rotated from round
to round; a phase starts its capture, runs 2 steps untimed, then times `--steps` steps as one loop
(synchronised at both ends, as the examples' `loop_s` is) and stops the capture (outside the timing).
Prints, per phase, the median loop over the rounds, its ratio to the plain phase, and every round's ratio
to the plain phase of the same round. Phases:

    plain          nothing started
    cupti          torch.profiler with GPU activity only (CUDA)
    kineto         torch.profiler CPU+CUDA (what `tenprof run --no-lines --no-shapes --no-memory` starts)
    kineto-shapes  + record_shapes
    kineto-memory  + profile_memory
    kineto-full    + record_shapes, profile_memory (tenprof's default Kineto options)
    native         tenprof's native call-site recorder alone
    python         tenprof's Python call-site recorder (a TorchFunctionMode) alone
    tenprof        kineto-full + native recorder (tenprof's default capture)
    tenprof-python kineto-full + Python recorder (tenprof's capture before the native recorder)
    kineto-nocorr  kineto without external correlation (no CUPTI correlation id pushed per op; launches
                   are then placed in ops by time on their thread)
    tenprof-nocorr tenprof with Kineto's external correlation off
    light-nocorr   kineto-nocorr + native recorder (no shapes, no memory)
    native-ops     the native recorder recording every op too (TENPROF_NATIVE_OPS), nothing else
    native-shapes  native-ops with each op's input signature (what `tenprof run --capture native` records)
    cupti-native-ops  cupti + native-ops
    cupti-native-shapes  cupti + native-shapes: what `tenprof run --capture native` records with (less its
                   host sampler and GPU clock reader)
    sampler        tenprof's host sampler alone (1 kHz Python stacks)
    native-sampler native + the host sampler (what the default capture runs beside Kineto)
    native-gated   native + the host sampler behind its gate (TENPROF_SAMPLER_GATE=1: rounds skipped while
                   the script runs ops)
    clocks         tenprof's GPU clock reader alone (NVML every 50 ms)
    session        tenprof's whole timeline capture as `tenprof run` starts it (TimelineSession, every step
                   recorded, its step boundary after each step; the trace written after the timing)
    session-native the same with `--capture native`
    session-native-nomemory, -noshapes, -nolines   the native one less memory, input shapes, or lines;
    session-native-nothreads  the native one without the host sampler and NVML thread
    session-native-every    the native one asking for every op's inputs in every step (TENPROF_INPUTS=every),
                   not in sampled steps alone
    session-native-ungated  the native one with the host sampler not behind its gate (TENPROF_SAMPLER_GATE=0)

A phase whose part cannot start here (no compiler for the native recorder) is skipped with the reason.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
from toggle_probe import gpt2_step, mlp_step

PHASES = (
    "plain", "cupti", "kineto", "kineto-shapes", "kineto-memory", "kineto-full", "native", "python", "tenprof",
    "tenprof-python", "kineto-nocorr", "tenprof-nocorr", "light-nocorr", "native-ops", "native-shapes",
    "cupti-native-ops", "cupti-native-shapes", "sampler", "clocks", "native-sampler", "native-gated",
    "session", "session-native", "session-native-nomemory", "session-native-noshapes", "session-native-nolines",
    "session-native-nothreads", "session-native-every", "session-native-ungated",
)  # fmt: skip
NATIVE = (
    "native", "tenprof", "tenprof-nocorr", "light-nocorr", "native-ops", "native-shapes", "cupti-native-ops",
    "cupti-native-shapes", "native-sampler", "native-gated", "session", "session-native",
    "session-native-nomemory", "session-native-noshapes", "session-native-nolines", "session-native-nothreads",
    "session-native-every", "session-native-ungated",
)  # fmt: skip
SESSIONS = tuple(p for p in PHASES if p.startswith("session"))
# the recorder's phases with no profiler CPU side beside it: one callback opens and closes each record
ALONE = (
    "native", "native-ops", "native-shapes", "cupti-native-ops", "cupti-native-shapes", "native-sampler",
    "native-gated",
)  # fmt: skip
CUDA = torch.cuda.is_available()


def conv_step() -> Callable[[], None]:
    device = "cuda" if CUDA else "cpu"
    n, c, hw = (32, 64, 112) if CUDA else (2, 8, 32)
    block = nn.Sequential(nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c), nn.ReLU()).to(device)
    x = torch.randn(n, c, hw, hw, device=device, requires_grad=True)

    def step() -> None:
        block(x).sum().backward()

    return step


def compiled_gpt2_step() -> Callable[[], None]:
    from transformers import GPT2Config, GPT2LMHeadModel

    device = "cuda" if CUDA else "cpu"
    config = GPT2Config() if CUDA else GPT2Config(n_layer=2, n_embd=128, n_head=4)
    model = GPT2LMHeadModel(config).to(device)
    compiled = torch.compile(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    ids = torch.randint(0, config.vocab_size, (8, 256), device=device)

    def step() -> None:
        with torch.autocast(device, dtype=torch.bfloat16, enabled=CUDA):
            loss = compiled(ids, labels=ids).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    return step


def tiny_mlp_step() -> Callable[[], None]:
    """The MLP's 16 layers at width 32 and batch 8 on the CPU: its step is the ops' dispatch, not their math,
    so what a capture adds per op shows (on a GPU, `mlp` is op-bound already)."""
    return mlp_step(width=32, batch=8, device="cpu")


WORKLOADS = {
    "mlp": mlp_step,
    "tiny-mlp": tiny_mlp_step,
    "gpt2-fp32": gpt2_step,
    "gpt2-compiled": compiled_gpt2_step,
    "conv": conv_step,
}


def _sync() -> None:
    if CUDA:
        torch.cuda.synchronize()


@contextlib.contextmanager
def _profiler(cpu: bool, shapes: bool, memory: bool, correlate: bool = True) -> Iterator[None]:
    activities = [torch.profiler.ProfilerActivity.CPU] if cpu else []
    if CUDA:
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    if not activities:
        yield
        return
    extra: dict[str, Any] = {}
    if not correlate:
        extra["experimental_config"] = torch._C._profiler._ExperimentalConfig(disable_external_correlation=True)
    prof = torch.profiler.profile(activities=activities, record_shapes=shapes, profile_memory=memory, **extra)
    prof.start()
    try:
        yield
    finally:
        _sync()
        prof.stop()


@contextlib.contextmanager
def _recorder(
    kind: str, every_op: bool = False, inputs: bool = False, sampler: str = "", alone: bool = False
) -> Iterator[None]:
    from tenprof.capture.callsites import CallsiteRecorder, new_interner
    from tenprof.capture.native_lines import NativeCallsiteRecorder, build_library, load_library

    interner = new_interner(None)
    recorder: Any
    if kind == "native":
        recorder = NativeCallsiteRecorder(interner, load_library(build_library()), every_op, inputs, alone=alone)
    else:
        recorder = CallsiteRecorder(interner)
    recorder.__enter__()
    try:
        if sampler:
            from tenprof.capture.native_lines import SamplerGate

            with _sampler(SamplerGate(recorder.lib) if sampler == "gated" else None):
                yield
        else:
            yield
    finally:
        recorder.__exit__(None, None, None)
        recorder.close()
        _ = recorder.records  # drained outside the timing, as at the end of a run (the ops with them)


# the environment a session phase runs with (read when its TimelineSession is made)
SESSION_ENV = {
    "session-native-nothreads": {"TENPROF_GPU_CLOCKS": "0"},
    "session-native-every": {"TENPROF_INPUTS": "every"},
    "session-native-ungated": {"TENPROF_SAMPLER_GATE": "0"},
}


@contextlib.contextmanager
def _session(name: str) -> Iterator[Callable[[], None]]:
    """tenprof's TimelineSession as a run starts it, every step recorded; yields its step boundary."""
    from tenprof.capture.timeline import TimelineOptions, TimelineSession

    options = TimelineOptions(
        lines=not name.endswith("-nolines"),
        shapes=not name.endswith("-noshapes"),
        memory=not name.endswith("-nomemory"),
        overhead_steps=0,
        capture="native" if name.startswith("session-native") else "kineto",
        sample_interval_ns=0 if name.endswith("-nothreads") else TimelineOptions.sample_interval_ns,
        keep_profiler_lines_out=True,
    )
    settings = SESSION_ENV.get(name, {})
    before = {key: os.environ.get(key) for key in settings}
    os.environ.update(settings)
    with tempfile.TemporaryDirectory(prefix="tenprof-components-") as raw:
        session = TimelineSession(Path(raw), options)
        session.start()
        try:
            yield session.step
        finally:
            _sync()
            session.stop()  # the trace written here, outside the timing
            for key, value in before.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value


@contextlib.contextmanager
def phase_context(name: str) -> Iterator[Callable[[], None] | None]:
    """The phase's capture started; yields what to call after each step (a session's step boundary)."""
    if name in SESSIONS:
        with _session(name) as boundary:
            yield boundary
        return
    with contextlib.ExitStack() as stack:
        if name in NATIVE:  # first: its callback opens before Kineto's, as in a run
            every_op = name.endswith(("native-ops", "native-shapes"))
            inputs = name.endswith("native-shapes")
            sampler = {"native-sampler": "plain", "native-gated": "gated"}.get(name, "")
            # no profiler's CPU side beside it: one callback opens and closes (as `--capture native` has it)
            alone = name in ALONE
            stack.enter_context(_recorder("native", every_op=every_op, inputs=inputs, sampler=sampler, alone=alone))
        if name in ("cupti", "cupti-native-ops", "cupti-native-shapes"):
            stack.enter_context(_profiler(cpu=False, shapes=False, memory=False))
        elif name == "kineto":
            stack.enter_context(_profiler(cpu=True, shapes=False, memory=False))
        elif name == "kineto-shapes":
            stack.enter_context(_profiler(cpu=True, shapes=True, memory=False))
        elif name == "kineto-memory":
            stack.enter_context(_profiler(cpu=True, shapes=False, memory=True))
        elif name in ("kineto-full", "tenprof", "tenprof-python"):
            stack.enter_context(_profiler(cpu=True, shapes=True, memory=True))
        elif name in ("kineto-nocorr", "light-nocorr"):
            stack.enter_context(_profiler(cpu=True, shapes=False, memory=False, correlate=False))
        elif name == "tenprof-nocorr":
            stack.enter_context(_profiler(cpu=True, shapes=True, memory=True, correlate=False))
        if name in ("python", "tenprof-python"):
            stack.enter_context(_recorder("python"))
        if name == "sampler":
            stack.enter_context(_sampler())
        if name == "clocks":
            stack.enter_context(_clocks())
        yield


@contextlib.contextmanager
def _sampler(gate: Any = None) -> Iterator[None]:
    from tenprof.capture.callsites import new_interner
    from tenprof.capture.host_sampler import HostSampler

    sampler = HostSampler(new_interner(None), gate=gate)
    sampler.start()
    try:
        yield
    finally:
        sampler.stop()


@contextlib.contextmanager
def _clocks() -> Iterator[None]:
    from tenprof.capture.gpu_clocks import GpuClockSampler

    clocks = GpuClockSampler()
    clocks.start()
    try:
        yield
    finally:
        clocks.stop()


def loop(step: Callable[[], None], steps: int, boundary: Callable[[], None] | None = None) -> float:
    _sync()
    start = time.perf_counter()
    for _ in range(steps):
        step()
        if boundary is not None:
            boundary()
    _sync()
    return time.perf_counter() - start


def skip_reason(name: str) -> str | None:
    if name in NATIVE:
        from tenprof.capture.native_lines import NativeLinesUnavailable, build_library

        try:
            build_library()
        except NativeLinesUnavailable as exc:
            return str(exc)
    return None


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workload", choices=tuple(WORKLOADS), default="mlp")
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--phases", default=",".join(PHASES))
    args = parser.parse_args()
    phases = [p for p in args.phases.split(",") if p]
    unknown = sorted(set(phases) - set(PHASES))
    if unknown:
        parser.error(f"unknown phases {unknown}; known: {', '.join(PHASES)}")
    for name in list(phases):
        reason = skip_reason(name)
        if reason:
            print(f"skipped {name}: {reason}")
            phases.remove(name)
    if "plain" not in phases:
        phases.insert(0, "plain")
    step = WORKLOADS[args.workload]()
    started = time.perf_counter()
    for _ in range(3):
        step()  # warm-up (and the compilation)
    _sync()
    warm_s = time.perf_counter() - started
    times: dict[str, list[float]] = {p: [] for p in phases}
    ratios: dict[str, list[float]] = {p: [] for p in phases}
    for r in range(args.rounds):
        order = phases[r % len(phases) :] + phases[: r % len(phases)]
        this_round: dict[str, float] = {}
        for name in order:
            with phase_context(name) as boundary:
                loop(step, 2, boundary)
                this_round[name] = loop(step, args.steps, boundary)
        for name in phases:
            times[name].append(this_round[name])
            ratios[name].append(this_round[name] / this_round["plain"])
    device = torch.cuda.get_device_name() if CUDA else "cpu"
    print(
        f"workload={args.workload} device={device} torch={torch.__version__} steps={args.steps} "
        f"rounds={args.rounds} warm-up={warm_s:.1f}s {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}"
    )
    plain = statistics.median(times["plain"])
    fastest_plain = min(times["plain"])
    for name in phases:
        med = statistics.median(times[name])
        each = " ".join(f"{x:.2f}" for x in ratios[name])
        # the fastest round of each phase too: on a shared machine, other work only ever adds time
        print(
            f"{name:15s} {med * 1e3 / args.steps:9.3f} ms/step  x{med / plain:5.2f}  "
            f"fastest x{min(times[name]) / fastest_plain:5.2f}  "
            f"(median of per-round ratios x{statistics.median(ratios[name]):.2f}; rounds: {each})"
        )


if __name__ == "__main__":
    main()
