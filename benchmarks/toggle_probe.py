"""Can steps timed inside a profiled run, with collection toggled off, stand for the un-profiled program?

    python benchmarks/toggle_probe.py --workload mlp|gpt2 [--steps 10] [--rounds 3] [--record ops|shapes|all|stack]

One process, one model (gpt2-compiled: bf16 autocast and torch.compile, as examples/compiled_train.py).
Phases of `--steps` steps each, in this order: plain (no profiler started),
then `--rounds` times, under a torch.profiler session of its own (CPU+CUDA; --record adds record_shapes,
profile_memory, with_stack): collection on, collection off (`toggle_collection_dynamic(False, [CPU, CUDA])`);
then the session stopped (its trace exported) and steps run with no session at all ("stopped").
Prints the median step time of each phase kind and its ratio to plain. If "off" (or "stopped")
is within noise of "plain", a run can measure its own un-profiled step time without a second run, by
toggling (or by stopping the session and starting a new one). The cost of a stop (with the export, or
with `--defer-export` without it: the traces written at the end) and of a start is printed too. It also prints the ops
and launches recorded per step and the cost per op they imply, (on - off) / ops: the cost model that
tenprof's overhead estimate for imported traces uses (tenprof.analyses.timeline.overhead).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable

import torch
from torch import nn


def mlp_step(width: int = 256, batch: int = 64, device: str = "") -> Callable[[], None]:
    """A training step of 16 Linear+ReLU layers `width` wide on a batch of `batch` (the GPU where there is one)."""
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    layers: list[nn.Module] = []
    for _ in range(16):
        layers += [nn.Linear(width, width), nn.ReLU()]
    model = nn.Sequential(*layers).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(batch, width, device=device)

    def step() -> None:
        loss = model(x).square().mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    return step


def gpt2_step(compiled: bool = False) -> Callable[[], None]:
    """GPT-2 small training; `compiled`: as examples/compiled_train.py runs it (torch.compile, bf16 autocast)."""
    from contextlib import nullcontext

    from transformers import GPT2Config, GPT2LMHeadModel

    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = GPT2LMHeadModel(GPT2Config()).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    ids = torch.randint(0, 50257, (8, 256), device=device)
    forward = torch.compile(model) if compiled else model
    autocast = (lambda: torch.autocast(device, dtype=torch.bfloat16)) if compiled else nullcontext

    def step() -> None:
        with autocast():
            loss = forward(ids, labels=ids).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    return step


def timed(step: Callable[[], None], n: int, after: Callable[[], None] = lambda: None) -> list[float]:
    times = []
    for _ in range(n):
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        start = time.perf_counter()
        step()
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
        after()
    return times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workload", choices=("mlp", "gpt2", "gpt2-compiled"), default="mlp")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--record", choices=("ops", "shapes", "all", "stack"), default="all")
    parser.add_argument("--defer-export", action="store_true", help="write the stopped sessions' traces at the end")
    args = parser.parse_args()
    step = mlp_step() if args.workload == "mlp" else gpt2_step(compiled=args.workload == "gpt2-compiled")
    timed(step, 5)  # warm-up
    phases: dict[str, list[float]] = {"plain": timed(step, args.steps), "on": [], "off": []}
    activities = [torch.profiler.ProfilerActivity.CPU]
    if torch.cuda.is_available():
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    extra = {
        "ops": {},
        "shapes": {"record_shapes": True},
        "all": {"record_shapes": True, "profile_memory": True},
        "stack": {"record_shapes": True, "profile_memory": True, "with_stack": True},
    }[args.record]
    phases["stopped"] = []
    phases["1st stopped"] = []
    stop_s: list[float] = []
    start_s: list[float] = []
    ops = launches = 0
    kept: list[torch.profiler.profile] = []
    each_round: list[float] = []  # the stopped steps' median in each round: does a stop leave a cost that grows?
    for _ in range(args.rounds):
        begin = time.perf_counter()
        prof = torch.profiler.profile(activities=activities, **extra)
        prof.start()
        start_s.append(time.perf_counter() - begin)
        phases["on"] += timed(step, args.steps)
        prof.toggle_collection_dynamic(False, activities)
        # as tenprof does: torch.compile's generated code records its launches while this flag is up
        torch.autograd.profiler._set_is_profiler_enabled(False)
        phases["off"] += timed(step, args.steps)
        torch.autograd.profiler._set_is_profiler_enabled(True)
        prof.toggle_collection_dynamic(True, activities)
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        begin = time.perf_counter()
        prof.stop()
        if args.defer_export:  # as tenprof does: the parts are written when the run ends
            kept.append(prof)
        else:
            prof.export_chrome_trace(os.path.join(tempfile.gettempdir(), "toggle_probe_trace.json"))
        stop_s.append(time.perf_counter() - begin)
        events = prof.events()
        ops += sum(1 for e in events if e.device_type == torch.autograd.DeviceType.CPU and "::" in e.name)
        launches += sum(1 for e in events if "LaunchKernel" in e.name or e.name == "cudaLaunchKernelExC")
        after_stop = timed(step, args.steps)
        phases["stopped"] += after_stop[1:]
        phases["1st stopped"].append(after_stop[0])  # the step right after the stop and the export
        each_round.append(statistics.median(after_stop[1:]))
    before = statistics.median(phases["plain"])
    after = timed(step, args.steps)
    phases["plain"] += after  # plain again, after: drift shows as a spread here
    print(f"plain before the sessions {before * 1e3:.3f} ms, after them {statistics.median(after) * 1e3:.3f} ms")
    print(f"TEARDOWN_CUPTI={os.environ.get('TEARDOWN_CUPTI', '(unset)')}")
    for prof in kept:
        prof.export_chrome_trace(os.path.join(tempfile.gettempdir(), "toggle_probe_trace.json"))
    plain = statistics.median(phases["plain"])
    device = torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu"
    recorded_steps = args.rounds * args.steps
    per_step_ops, per_step_launches = ops / recorded_steps, launches / recorded_steps
    delta = statistics.median(phases["on"]) - statistics.median(phases["off"])
    print(f"workload={args.workload} record={args.record} device={device} torch={torch.__version__}")
    print(
        f"per step: {per_step_ops:.0f} ops, {per_step_launches:.0f} launches; on - off = {delta * 1e3:.3f} ms "
        f"= {delta * 1e9 / max(per_step_ops, 1):.0f} ns per op"
    )
    start_ms, stop_ms = statistics.median(start_s) * 1e3, statistics.median(stop_s) * 1e3
    export = "without its export (written at the end)" if args.defer_export else "with export"
    print(f"session start {start_ms:.1f} ms, stop {export} {stop_ms:.1f} ms")
    print("stopped, round by round: " + ", ".join(f"x{m / plain:.2f}" for m in each_round))
    for name, values in phases.items():
        med = statistics.median(values)
        low = min(values) * 1e3
        print(f"{name:11s} median {med * 1e3:8.3f} ms  x{med / plain:5.2f}  n={len(values)}  min {low:.3f}")


if __name__ == "__main__":
    main()
