"""Shared by the findings examples (the corpus of planted mistakes): device choice and the step loop
(each example is `--fixed`-able).

The loop runs in one of three ways, chosen by the environment, so that one script serves every recording
of the corpus (scripts/gpu_record.sh corpus36) without changing a line of it:
- plain (no variable set): the steps, each ended with `tenprof.step()` (a no-op outside `tenprof run`);
- TENPROF_CORPUS_TIME=1: un-profiled, and prints (rank 0 only) `corpus_step_ms=<mean>` over the steps past the first
  COLD, at least MIN_TIMED of them whatever `--steps` says (timed from a synchronize to a synchronize, so
  queued GPU work is counted and no step waits for another one's end), and `corpus_timed_steps=<n>`;
- TENPROF_CORPUS_TRACE=<file.json>: under plain torch.profiler as users run it (a schedule that skips one
  step and warms up on the next, records the rest, each step marked with `prof.step()`), the trace
  written there (rank 0's, under a launcher); TENPROF_CORPUS_STACK=1 adds with_stack and record_shapes.
"""

import argparse
import os
import time
from collections.abc import Callable

import torch

import tenprof

COLD = 3  # the steps the timing leaves out (first launches, autotuning, compiling)
# the steps timed at least: a few milliseconds' step varies 20-40% from step to step on a shared machine, so
# three steps cannot tell a saving of a fraction of a millisecond
MIN_TIMED = 20


def parse(description: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--fixed", action="store_true", help="run the variant without the problem")
    parser.add_argument("--steps", type=int, default=6)
    return parser.parse_args()


def device() -> str:
    return "cuda" if torch.cuda.is_available() else "cpu"


def _synchronize() -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def loop(steps: int, step: Callable[[], None]) -> None:
    trace = os.environ.get("TENPROF_CORPUS_TRACE")
    if os.environ.get("TENPROF_CORPUS_TIME"):
        _timed(steps, step)
    elif trace:
        _under_torch_profiler(steps, step, trace, bool(os.environ.get("TENPROF_CORPUS_STACK")))
    else:
        for _ in range(steps):
            step()
            tenprof.step()
        _synchronize()


def _timed(steps: int, step: Callable[[], None]) -> None:
    cold = min(COLD, steps - 1)
    timed = max(steps - cold, MIN_TIMED)
    for _ in range(cold):
        step()
    _synchronize()
    start = time.perf_counter()
    for _ in range(timed):
        step()
    _synchronize()
    if os.environ.get("RANK", "0") == "0":  # under a launcher, one line (the ranks' output is interleaved)
        step_ms = 1e3 * (time.perf_counter() - start) / timed
        print(f"corpus_step_ms={step_ms:.4f} corpus_timed_steps={timed}", flush=True)


def _under_torch_profiler(steps: int, step: Callable[[], None], trace: str, stack: bool) -> None:
    from torch.profiler import ProfilerActivity, profile, schedule

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if torch.cuda.is_available() else [])
    plan = schedule(wait=1, warmup=1, active=max(steps - 2, 1), repeat=1)

    def export(prof: profile) -> None:
        if os.environ.get("RANK", "0") == "0":  # under a launcher, rank 0's trace (the ranks would share the name)
            prof.export_chrome_trace(trace)

    with profile(
        activities=activities, schedule=plan, on_trace_ready=export, with_stack=stack, record_shapes=stack
    ) as prof:
        for i in range(steps):
            step()
            if i == steps - 1:
                _synchronize()  # the last step's GPU work lands in the trace
            prof.step()


def spin(seconds: float) -> None:
    """Busy Python work for about `seconds` (the clock read every 2000 rounds, so a trace recorded with
    with_stack holds a few calls, not one per round)."""
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        for _ in range(2000):
            pass


def prepare_next_batch(seconds: float = 0.001) -> None:
    """CPU work between steps (standing in for preparing a batch): run ahead of the GPU, it is hidden;
    after a synchronization, the GPU waits for it."""
    spin(seconds)
