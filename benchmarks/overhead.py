"""Overhead of `tenprof run` against the un-profiled run, torch.profiler and Proton, same card, same session.

    python benchmarks/overhead.py [--workloads ...] [--configs ...] [--repeats 3] [--json PATH|DIR/]
                                  [--deadline-min 9] [--keep-profiles DIR] [--smoke]
    python benchmarks/overhead.py --workloads issue16 --configs issue16 --estimate   # plan only

Workloads (each script prints `loop_s=` for its timed loop after warm-up):
    gpt2-fp32      examples/gpt2_fp32.py, GPT-2 small fp32 eager train, batch 8x256, 10 steps
    gpt2-compiled  examples/compiled_train.py --model gpt2 --mode default, bf16 autocast, 8x256, 37 steps
    mlp            examples/small_mlp.py, 16 layers 64x256, 50 steps
    mlp-compiled   examples/compiled_train.py --model mlp, torch.compile default mode, 37 steps (no transformers)
    conv           examples/conv_block.py, 32x64x112x112, 10 steps
    gpt2           examples/gpt2_train.py, bf16 autocast eager (docs/BENCHMARKS.md's first tables)
    matmul         examples/matmul_add.py, 4096^2 bf16
Without CUDA each script runs on the CPU (GPT-2 as a 2-layer, 128-wide model).

Every run is a child process of this one (one process tree). Runs are interleaved: each repeat runs
every selected workload once under every selected configuration, the configurations' order rotated by
one from repeat to repeat, so drift and warm caches hit every configuration alike. Each workload
script times its own steady-state loop after warm-up and prints `loop_s=`; the ratio is that loop
under a configuration over the same loop un-profiled (median of the repeats, and each repeat's own
ratio to the plain run of the same repeat). End-to-end wall time of the whole command (start-up,
capture, trace export and, for tenprof, building the profile) is reported beside it.

Configurations:
    plain            python script.py
    tenprof          tenprof run --quiet script.py      (timeline pass: lines, shapes, memory)
    tenprof-python   the same with the Python line recorder (TENPROF_LINES_RECORDER=python)
    tenprof-nosampler the same without the host sampler (TENPROF_HOST_SAMPLE_HZ=0): the sampler's cost
    tenprof-noclocks the same without the NVML clocks thread (TENPROF_GPU_CLOCKS=0): the thread's cost
    tenprof-nothreads the same without both threads (host sampler, NVML clocks)
    tenprof-bare     tenprof run --no-lines --no-shapes --no-memory without both threads: Kineto CPU+CUDA
                     as tenprof starts it, to set against torch (the same profiler started by a script)
    tenprof-native   tenprof run --capture native: ops, shapes and lines recorded natively, GPU activity by a
                     CUDA-only profiler session (no memory events yet)
    tenprof-native-bare  the same without both threads (host sampler, NVML clocks)
    tenprof-native-light  the native capture without threads, shapes or memory: its op records (and their
                     call sites: it records those whatever --no-lines says) and the GPU activity
    tenprof-gated    tenprof run with the host sampler behind its gate (TENPROF_SAMPLER_GATE=1: no round, and
                     no hand-over of the interpreter's lock, while the script runs ops)
    tenprof-native-gated  tenprof run --capture native, the sampler behind its gate
    tenprof-native-filtered  tenprof run --capture native with the CUPTI API filter
                     (TENPROF_CUPTI_API_FILTER=1: no records of the CUDA calls no analysis reads)
    tenprof-cupti    tenprof run --capture native-cupti: the native capture with tenprof's own CUPTI client
                     (kernels, copies, memsets, runtime and driver calls) in place of the CUDA-only session
    tenprof-cupti-bare  the same without both threads (host sampler, NVML clocks)
    tenprof-cupti-cb the same with the CUDA calls from CUPTI's callback API, the calls the analyses read alone
                     (TENPROF_CUPTI_API=callbacks), in place of activity records of every call
    tenprof-cupti-every the same with every op's inputs asked for in every step (TENPROF_INPUTS=every), not
                     in sampled steps alone
    tenprof-cupti-ungated the same with the host sampler not behind its gate (TENPROF_SAMPLER_GATE=0; the
                     native captures take the gate by default)
    tenprof-cupti-ops the same with op records in sampled steps alone, the others' copied from a recorded step
                     with the same launches (TENPROF_OPS=sampled, experimental)
    tenprof-cupti-none the same with no CUDA calls recorded (TENPROF_CUPTI_API=none: launches name no op;
                     what the calls cost)
    tenprof-nolines  tenprof run --no-lines
    tenprof-light    tenprof run --no-lines --no-shapes --no-memory
    tenprof-tensors  tenprof run --passes tensors       (the tensors pass alone)
    tenprof-timed    tenprof run --overhead-steps 7: the run times 6 of its steps with everything of its own
                     off; their median (the report's un-profiled step, as timed) is set against the plain
                     run's loop time per step in the same repeat (issue 36: within 10%), and against the
                     plain run's own steps of the same numbers (its tenprof.step() calls marked:
                     benchmarks/step_marks.py), which drift and warm-up hit alike
    tenprof-timed-s3t3 the same with three settling steps after each stop and three timed in a row
                     (TENPROF_SETTLING_STEPS=3 TENPROF_TIMED_RUN=3; tenprof's default since 2026-12-01),
                     against the plain runs' steps of its own plan's numbers
    tenprof-timed-s1t1 the same with one settling step and one timed (TENPROF_SETTLING_STEPS=1
                     TENPROF_TIMED_RUN=1: the default's shape until 2026-12-01, whose results name it
                     tenprof-timed; it timed steps 4, 9, ..., 34)
    torch            torch.profiler(CPU+CUDA)                                  benchmarks/torch_profiler_run.py
    torch-stack      torch.profiler(CPU+CUDA, with_stack, record_shapes, profile_memory)
    torch-cuda       torch.profiler(CUDA): GPU activity alone, what the native capture leaves to the profiler
    torch-et         torch.profiler.ExecutionTraceObserver                     benchmarks/execution_trace_run.py
    proton           Proton: triton.profiler.start(hook="triton") .. finalize() benchmarks/proton_run.py
A configuration that cannot run here (Proton without triton.profiler or without a CUDA device, a GPT-2
workload without transformers) is reported as skipped, with the reason, never as a number. A run that
fails or times out is recorded with its error and left out of the medians.

tenprof runs get `--overhead-steps 0` where tenprof has it, so that every timed step is recorded (by
default tenprof runs a few steps with the capture off to measure its own overhead).

Groups: --workloads default (gpt2-fp32, mlp, conv), issue16 (gpt2-fp32, gpt2-compiled, mlp, conv), all;
--configs default (plain, tenprof, torch, proton), issue16 (plain, tenprof, tenprof-nolines,
tenprof-light, torch, torch-stack, proton), all. The whole issue-16 matrix is about 40 minutes on an
H100, far more than one device call (the plan and its estimate are printed first; --estimate prints only
them); the default is the part that fits in about 8 minutes. The results (card, driver, versions,
every run) go to --json, rewritten after every run so a run cut short still leaves what it measured;
the markdown table is printed at the end (and stored in the JSON). --deadline-min starts no run
expected to end after that many minutes from the start (for a device call with a time limit); --smoke
runs 2 steps per workload to check that every configuration works, and says that its numbers are not
measurements.
"""

from __future__ import annotations

import argparse
import datetime as dt
import itertools
import json
import math
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

# tenprof run's plan of its timed steps (no torch)
from tenprof.capture.overhead_plan import SETTLING_VAR, TIMED_RUN_VAR, OverheadPlan

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"


@dataclass(frozen=True)
class Workload:
    label: str
    argv: tuple[str, ...]  # script (relative to the repository root) and its arguments
    needs: tuple[str, ...] = ()  # modules the script imports beyond torch and tenprof


@dataclass(frozen=True)
class Config:
    label: str
    needs: tuple[str, ...] = ()  # modules the runner imports
    needs_cuda: bool = False


WORKLOADS: dict[str, Workload] = {
    "gpt2-fp32": Workload(
        "GPT-2 small train, fp32 eager, batch 8x256 (10 steps)",
        ("examples/gpt2_fp32.py", "--steps", "10", "--warmup", "3"),
        ("transformers",),
    ),
    "gpt2-compiled": Workload(
        # 37 steps: room for 7 timed steps; its steps vary 20-35 ms within one process, so 3 or 4 say little
        "GPT-2 small train, bf16 autocast + torch.compile (default mode), batch 8x256 (37 steps)",
        ("examples/compiled_train.py", "--model", "gpt2", "--mode", "default", "--steps", "37", "--warmup", "3"),
        ("transformers",),
    ),
    "mlp-compiled": Workload(
        # a compiled loop without transformers: the CPU can show what the timed steps of a compiled model
        # do, where compiled GPT-2 cannot run
        "MLP blocks + torch.compile (default mode), examples/compiled_train.py --model mlp (37 steps)",
        ("examples/compiled_train.py", "--model", "mlp", "--mode", "default", "--steps", "37", "--warmup", "3"),
    ),
    "mlp": Workload(
        "16-layer MLP 64x256, fwd+bwd+SGD (200 steps: at 50 the 0.17 s loop varied 20% run to run)",
        ("examples/small_mlp.py", "--steps", "200", "--warmup", "10"),
    ),
    "mlp-long": Workload(
        # the on-demand listener's cost: a per-step cost shows most on a host-bound loop, and loops of 0.9 s
        # (300 steps) were too short for the GPU machine's noise
        "16-layer MLP 64x256, fwd+bwd+SGD (3000 steps)",
        ("examples/small_mlp.py", "--steps", "3000", "--warmup", "50"),
    ),
    "conv": Workload(
        "conv+BN+ReLU 32x64x112x112, fwd+bwd (10 steps)",
        ("examples/conv_block.py", "--steps", "10", "--warmup", "3"),
    ),
    "gpt2": Workload(  # the GPT-2 of docs/BENCHMARKS.md's first tables
        "GPT-2 small train, bf16 autocast eager, batch 8x256 (10 steps)",
        ("examples/gpt2_train.py", "--steps", "10", "--warmup", "3"),
        ("transformers",),
    ),
    "matmul": Workload(
        "matmul 4096^2 bf16 + bias add (10 steps)",
        ("examples/matmul_add.py", "--size", "4096", "--steps", "10", "--warmup", "3"),
    ),
}
CONFIGS: dict[str, Config] = {
    "plain": Config("plain (un-profiled)"),
    "tenprof": Config("tenprof run (default: lines, shapes, memory)", ("tenprof",)),
    "tenprof-python": Config("tenprof run, Python line recorder (TENPROF_LINES_RECORDER=python)", ("tenprof",)),
    "tenprof-nosampler": Config("tenprof run without the host sampler (TENPROF_HOST_SAMPLE_HZ=0)", ("tenprof",)),
    "tenprof-noclocks": Config("tenprof run without the NVML clocks thread (TENPROF_GPU_CLOCKS=0)", ("tenprof",)),
    "tenprof-nothreads": Config("tenprof run without the host sampler and the NVML clocks thread", ("tenprof",)),
    "tenprof-bare": Config(
        "tenprof run --no-lines --no-shapes --no-memory, no host sampler, no NVML thread", ("tenprof",)
    ),
    "tenprof-native": Config("tenprof run --capture native (no profiler CPU side)", ("tenprof",)),
    "tenprof-native-bare": Config("tenprof run --capture native without host sampler and NVML thread", ("tenprof",)),
    "tenprof-native-light": Config(
        "tenprof run --capture native --no-shapes --no-memory, without both threads", ("tenprof",)
    ),
    "tenprof-gated": Config("tenprof run, host sampler behind its gate (TENPROF_SAMPLER_GATE=1)", ("tenprof",)),
    "tenprof-native-gated": Config("tenprof run --capture native, host sampler behind its gate", ("tenprof",)),
    "tenprof-native-filtered": Config("tenprof run --capture native, CUPTI API filter on", ("tenprof",)),
    "tenprof-cupti": Config("tenprof run --capture native-cupti (tenprof's own CUPTI client)", ("tenprof",)),
    "tenprof-cupti-cb": Config("tenprof run --capture native-cupti, CUDA calls by callbacks", ("tenprof",)),
    "tenprof-cupti-none": Config("tenprof run --capture native-cupti, no CUDA calls recorded", ("tenprof",)),
    "tenprof-cupti-every": Config("tenprof run --capture native-cupti, inputs asked in every step", ("tenprof",)),
    "tenprof-cupti-ungated": Config("tenprof run --capture native-cupti, host sampler ungated", ("tenprof",)),
    "tenprof-cupti-ops": Config("tenprof run --capture native-cupti, ops in sampled steps alone", ("tenprof",)),
    "tenprof-cupti-bare": Config(
        "tenprof run --capture native-cupti without host sampler and NVML thread", ("tenprof",)
    ),
    "tenprof-nolines": Config("tenprof run --no-lines", ("tenprof",)),
    "tenprof-light": Config("tenprof run --no-lines --no-shapes --no-memory", ("tenprof",)),
    "tenprof-tensors": Config("tenprof run --passes tensors", ("tenprof",)),
    "tenprof-timed": Config("tenprof run --overhead-steps 7 (its own un-profiled steps)", ("tenprof",)),
    "tenprof-timed-s3t3": Config(
        "tenprof run --overhead-steps 7, three settling steps and three timed in a row (its own un-profiled steps)",
        ("tenprof",),
    ),
    "tenprof-timed-s1t1": Config(
        "tenprof run --overhead-steps 7, one settling step and one timed (its own un-profiled steps)", ("tenprof",)
    ),
    "tenprof-on-demand": Config("tenprof run --on-demand: the listener alone, nothing recorded", ("tenprof",)),
    "torch": Config("torch.profiler (CPU+CUDA)"),
    "torch-stack": Config("torch.profiler + with_stack, record_shapes, profile_memory"),
    "torch-cuda": Config("torch.profiler (CUDA alone)", needs_cuda=True),
    "torch-et": Config("torch ExecutionTraceObserver"),
    "proton": Config("Proton (triton.profiler, hook=triton)", ("triton.profiler",), needs_cuda=True),
}
GROUPS: dict[str, dict[str, tuple[str, ...]]] = {
    "workloads": {
        "default": ("gpt2-fp32", "mlp", "conv"),
        "issue16": ("gpt2-fp32", "gpt2-compiled", "mlp", "conv"),
        "all": tuple(WORKLOADS),
    },
    "configs": {
        "default": ("plain", "tenprof", "torch", "proton"),
        "issue16": ("plain", "tenprof", "tenprof-nolines", "tenprof-light", "torch", "torch-stack", "proton"),
        "all": tuple(CONFIGS),
    },
}

# Expected wall seconds of one run on an H100, for the plan printed at start. From docs/BENCHMARKS.md's
# H200 walls (same machine image; 4 s of torch start-up, ~10 s more for transformers and GPT-2's
# construction, ~6 s more for tenprof's child and profile build); compiled GPT-2 and Proton are guesses.
_EAGER_GPT2: dict[str, float] = {
    "plain": 22,  # H200, 2026-11-29: 22 s (torch 20-23, CUDA alone 20, Proton 19-20)
    "tenprof": 24,
    "tenprof-python": 26,
    "tenprof-nosampler": 24,
    "tenprof-noclocks": 24,
    "tenprof-nothreads": 24,
    "tenprof-bare": 21,
    "tenprof-native": 22,
    "tenprof-native-bare": 22,
    "tenprof-gated": 24,
    "tenprof-native-gated": 22,
    "tenprof-native-filtered": 22,
    "tenprof-cupti": 29,  # H200, 2026-11-29: 26-30 s
    "tenprof-cupti-cb": 29,
    "tenprof-cupti-none": 29,
    "tenprof-cupti-every": 30,
    "tenprof-cupti-ungated": 29,
    "tenprof-cupti-ops": 29,
    "tenprof-cupti-bare": 29,
    "tenprof-nolines": 22,
    "tenprof-light": 21,
    "tenprof-tensors": 18,
    "tenprof-timed": 26,  # and every other timed configuration (TIMED_CONFIGS)
    "torch": 21,
    "torch-cuda": 20,
    "torch-stack": 83,  # torch's Python-stack post-processing of the whole script, at exit
    "torch-et": 16,
    "proton": 20,
}
ESTIMATE_S: dict[str, dict[str, float]] = {
    "gpt2": _EAGER_GPT2,
    "gpt2-fp32": _EAGER_GPT2,
    "gpt2-compiled": {
        "plain": 30,
        "tenprof": 50,
        "tenprof-python": 55,
        "tenprof-nolines": 48,
        "tenprof-light": 45,
        "tenprof-tensors": 40,
        "tenprof-timed": 52,
        "torch": 35,
        "torch-stack": 200,  # the Python tracer also records Dynamo and Inductor compiling
        "torch-et": 40,
        "proton": 35,
    },
    "mlp": {
        "plain": 13,  # H200, 2026-11-29: 12-13 s (torch 16, CUDA alone 13-15, Proton 12-14)
        "torch": 16,
        "torch-cuda": 14,
        "proton": 13,
        "tenprof": 14,
        "tenprof-python": 15,
        "tenprof-nosampler": 14,
        "tenprof-noclocks": 14,
        "tenprof-nothreads": 14,
        "tenprof-bare": 12,
        "tenprof-native": 12,
        "tenprof-native-bare": 12,
        "tenprof-gated": 14,
        "tenprof-native-gated": 12,
        "tenprof-cupti": 21,  # H200, 2026-11-29: 20-21 s
        "tenprof-cupti-cb": 21,
        "tenprof-cupti-none": 21,
        "tenprof-cupti-every": 21,
        "tenprof-cupti-ungated": 21,
        "tenprof-cupti-ops": 21,
        "tenprof-cupti-bare": 21,
        "tenprof-nolines": 12,
        "tenprof-light": 12,
        "tenprof-tensors": 10,
        "tenprof-timed": 16,
    },
    "mlp-compiled": {"plain": 15, "tenprof-timed": 30},  # guessed
    "conv": {"plain": 4, "tenprof": 10, "tenprof-nolines": 10, "tenprof-light": 10, "tenprof-tensors": 9},
    "matmul": {"plain": 4, "tenprof": 9, "tenprof-nolines": 9, "tenprof-light": 10, "tenprof-tensors": 9},
}
ESTIMATE_DEFAULT_S = {"mlp": 10.0, "conv": 9.0, "matmul": 8.0}  # the torch/proton runs of the small ones
# The first compile of a session fills Inductor's on-disk caches (later runs load from them). tenprof sets
# Inductor's comment_origin, a different cache key, so its configurations pay a cold compile of their own:
# one per family (tenprof's, everyone else's). The H100 calibration run (2026-11-26) saw a 74 s first step.
COLD_COMPILE_S = {"gpt2-compiled": 60.0}


def family(config: str) -> str:
    return "tenprof" if config.startswith("tenprof") else "other"


def cold_s(workload: str, configs: list[str]) -> float:
    return COLD_COMPILE_S.get(workload, 0.0) * len({family(c) for c in configs})


RUN_TIMEOUT_S = 480
TIMED_STEPS = 7  # tenprof-timed: steps timed with the capture off (9-11, 18-20, 27 where the run has them)
# the configurations that time their own un-profiled steps, and the environment their plan is read from
TIMED_CONFIGS: dict[str, dict[str, str]] = {
    "tenprof-timed": {},
    "tenprof-timed-s3t3": {SETTLING_VAR: "3", TIMED_RUN_VAR: "3"},
    "tenprof-timed-s1t1": {SETTLING_VAR: "1", TIMED_RUN_VAR: "1"},
}


def estimate(workload: str, config: str) -> float:
    table = ESTIMATE_S.get(workload, {})
    config = "tenprof-timed" if config in TIMED_CONFIGS else config  # the plans take the same time
    return float(table.get(config, ESTIMATE_DEFAULT_S.get(workload, 2 * table.get("plain", 10))))


def expand(kind: str, text: str) -> list[str]:
    names: list[str] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        for name in GROUPS[kind].get(part, (part,)):
            if name not in names:
                names.append(name)
    known = WORKLOADS if kind == "workloads" else CONFIGS
    unknown = [n for n in names if n not in known]
    if unknown:
        groups = ", ".join(GROUPS[kind])
        raise SystemExit(f"unknown {kind}: {', '.join(unknown)} (known: {', '.join(known)}; groups: {groups})")
    return names


# --- the machine and its software ---------------------------------------------------------------------

_PROBE = r"""
import importlib, importlib.metadata as md, importlib.util, json, platform, sys
info = {"python": sys.version.split()[0], "executable": sys.executable, "platform": platform.platform()}
def version(dist):
    try:
        return md.version(dist)
    except Exception:
        return None
try:
    import torch
    info["torch"] = torch.__version__
    info["torch_cuda"] = torch.version.cuda
    info["cuda_available"] = torch.cuda.is_available()
    if info["cuda_available"]:
        info["torch_device"] = torch.cuda.get_device_name(0)
except Exception as exc:
    info["torch_error"] = f"{type(exc).__name__}: {exc}"
    info["cuda_available"] = False
modules = {}
for name in ("tenprof", "transformers", "triton"):
    try:
        modules[name] = None if importlib.util.find_spec(name) else "not installed"
    except Exception as exc:
        modules[name] = f"{type(exc).__name__}: {exc}"
try:
    importlib.import_module("triton.profiler")
    modules["triton.profiler"] = None
except Exception as exc:
    modules["triton.profiler"] = f"{type(exc).__name__}: {exc}"
info["modules"] = modules
spec = importlib.util.find_spec("tenprof") if modules["tenprof"] is None else None
info["tenprof_path"] = spec.origin if spec else None
info["triton"] = version("triton")
info["transformers"] = version("transformers")
print(json.dumps(info))
"""


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return ""


def _git(*args: str) -> str:
    try:
        done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=20, check=False)
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


def machine_info() -> dict[str, Any]:
    """The card (nvidia-smi), driver, versions and date, read once before the runs."""
    info: dict[str, Any] = {
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "host": socket.gethostname(),
        "cpu": _cpu_model(),
        "cpu_count": os.cpu_count(),
        # the cores this benchmark and its runs may use (a `taskset` around it pins every run alike)
        "cpu_affinity": sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
    }
    if shutil.which("nvidia-smi"):
        done = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        rows = [r.split(", ") for r in done.stdout.strip().splitlines() if r.strip()]
        if done.returncode == 0 and rows:
            info["card"], info["driver"] = rows[0][0], rows[0][1]
            info["gpu_memory"] = rows[0][2] if len(rows[0]) > 2 else ""
            info["gpus"] = len(rows)
    probe = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=300, check=False)
    try:
        info.update(json.loads(probe.stdout.strip().splitlines()[-1]))
    except (IndexError, json.JSONDecodeError):
        info["probe_error"] = probe.stderr[-2000:]
        info.setdefault("cuda_available", False)
        info.setdefault("modules", {})
    info.setdefault("card", info.get("torch_device") or "")
    if info.get("modules", {}).get("tenprof", "absent") is None:
        usage = subprocess.run(
            [sys.executable, "-m", "tenprof", "run", "--help"], capture_output=True, text=True, timeout=120, check=False
        )
        info["tenprof_overhead_steps"] = "--overhead-steps" in usage.stdout
    commit = _git("rev-parse", "HEAD")
    if commit:
        info["git_commit"] = commit
        info["git_dirty"] = bool(_git("status", "--porcelain", "--untracked-files=no"))
    return info


def card_slug(info: dict[str, Any]) -> str:
    """'NVIDIA H100 80GB HBM3' -> 'h100'; no GPU -> 'cpu'."""
    name = str(info.get("card") or "")
    if not name or not info.get("cuda_available"):
        return "cpu"
    words = [w for w in re.split(r"[\s_-]+", name) if w and w.upper() not in ("NVIDIA", "GEFORCE", "TESLA")]
    model = next((w for w in words if re.fullmatch(r"[A-Za-z]+\d+[A-Za-z]*", w)), words[0] if words else "gpu")
    return re.sub(r"[^a-z0-9]+", "", model.lower()) or "gpu"


def skip_reason(workload: Workload, config: Config, info: dict[str, Any]) -> str | None:
    modules: dict[str, str | None] = info.get("modules", {})
    for module in (*workload.needs, *config.needs):
        problem = modules.get(module, "not checked")
        if problem is not None:
            return f"{module} not importable ({problem})"
    if config.needs_cuda and not info.get("cuda_available"):
        return "needs a CUDA device (torch.cuda.is_available() is False)"
    return None


# --- one run -------------------------------------------------------------------------------------------


def smoke(workload: Workload) -> Workload:
    """The workload with 2 timed steps after 1 warm-up: checks that everything runs, measures nothing."""
    argv = list(workload.argv)
    for flag, value in (("--steps", "2"), ("--warmup", "1")):
        if flag in argv:
            argv[argv.index(flag) + 1] = value
    return Workload(workload.label + " [smoke: 2 steps]", tuple(argv), workload.needs)


def command(
    config: str, workload: Workload, scratch: Path, profile_dir: Path, tenprof_options: tuple[str, ...] = ()
) -> list[str]:
    script = [str(ROOT / workload.argv[0]), *workload.argv[1:]]
    py = sys.executable
    if config == "plain":
        return [py, *script]
    if config == "plain-marked":  # plain, each tenprof.step() call marked (see benchmarks/step_marks.py)
        return [py, str(ROOT / "benchmarks" / "step_marks.py"), str(scratch / "marks.json"), *script]
    if config == "tenprof-on-demand":  # no capture, no profile, no options: the job as a listener runs it
        return [py, "-m", "tenprof", "run", "--on-demand", *script]
    if config.startswith("tenprof"):
        extra = {
            "tenprof": [],
            "tenprof-python": [],
            "tenprof-nosampler": [],
            "tenprof-noclocks": [],
            "tenprof-nothreads": [],
            "tenprof-bare": ["--no-lines", "--no-shapes", "--no-memory"],
            "tenprof-native": ["--capture", "native"],
            "tenprof-native-bare": ["--capture", "native"],
            "tenprof-native-light": ["--capture", "native", "--no-shapes", "--no-memory"],
            "tenprof-gated": [],
            "tenprof-native-gated": ["--capture", "native"],
            "tenprof-native-filtered": ["--capture", "native"],
            "tenprof-cupti": ["--capture", "native-cupti"],
            "tenprof-cupti-cb": ["--capture", "native-cupti"],
            "tenprof-cupti-none": ["--capture", "native-cupti"],
            "tenprof-cupti-every": ["--capture", "native-cupti"],
            "tenprof-cupti-ungated": ["--capture", "native-cupti"],
            "tenprof-cupti-ops": ["--capture", "native-cupti"],
            "tenprof-cupti-bare": ["--capture", "native-cupti"],
            "tenprof-nolines": ["--no-lines"],
            "tenprof-light": ["--no-lines", "--no-shapes", "--no-memory"],
            "tenprof-tensors": ["--passes", "tensors"],
            **{c: ["--overhead-steps", str(TIMED_STEPS)] for c in TIMED_CONFIGS},
        }[config]
        if config in TIMED_CONFIGS:  # these time their steps un-profiled: not every step is recorded
            tenprof_options = tuple(o for o in tenprof_options if o != "--overhead-steps" and o != "0")
        # --force replaces only a tenprof profile; the directory is new for every run anyway
        recorder = {
            "tenprof-python": ["env", "TENPROF_LINES_RECORDER=python"],
            "tenprof-nosampler": ["env", "TENPROF_HOST_SAMPLE_HZ=0"],
            "tenprof-noclocks": ["env", "TENPROF_GPU_CLOCKS=0"],
            "tenprof-nothreads": ["env", "TENPROF_HOST_SAMPLE_HZ=0", "TENPROF_GPU_CLOCKS=0"],
            "tenprof-bare": ["env", "TENPROF_HOST_SAMPLE_HZ=0", "TENPROF_GPU_CLOCKS=0"],
            "tenprof-native-bare": ["env", "TENPROF_HOST_SAMPLE_HZ=0", "TENPROF_GPU_CLOCKS=0"],
            "tenprof-native-light": ["env", "TENPROF_HOST_SAMPLE_HZ=0", "TENPROF_GPU_CLOCKS=0"],
            "tenprof-gated": ["env", "TENPROF_SAMPLER_GATE=1"],
            "tenprof-native-gated": ["env", "TENPROF_SAMPLER_GATE=1"],
            "tenprof-native-filtered": ["env", "TENPROF_CUPTI_API_FILTER=1"],
            "tenprof-cupti-bare": ["env", "TENPROF_HOST_SAMPLE_HZ=0", "TENPROF_GPU_CLOCKS=0"],
            "tenprof-cupti-cb": ["env", "TENPROF_CUPTI_API=callbacks"],
            "tenprof-cupti-none": ["env", "TENPROF_CUPTI_API=none"],
            "tenprof-cupti-every": ["env", "TENPROF_INPUTS=every"],
            "tenprof-cupti-ungated": ["env", "TENPROF_SAMPLER_GATE=0"],
            "tenprof-cupti-ops": ["env", "TENPROF_OPS=sampled"],
            **{
                c: ["env", *(f"{k}={v}" for k, v in TIMED_CONFIGS[c].items())]
                for c in TIMED_CONFIGS
                if c != "tenprof-timed"
            },
        }.get(config, [])
        return [
            *recorder,
            py,
            "-m",
            "tenprof",
            "run",
            "--quiet",
            "--force",
            *tenprof_options,
            *extra,
            "-o",
            str(profile_dir),
            *script,
        ]
    if config == "torch-et":
        return [py, str(ROOT / "benchmarks" / "execution_trace_run.py"), str(scratch / "et.json"), *script]
    if config == "proton":
        return [py, str(ROOT / "benchmarks" / "proton_run.py"), str(scratch / "proton"), *script]
    stack = {"torch-stack": ["--stack"], "torch-cuda": ["--cuda-only"]}.get(config, [])
    return [py, str(ROOT / "benchmarks" / "torch_profiler_run.py"), *stack, str(scratch / "trace.json"), *script]


def template(config: str, tenprof_options: tuple[str, ...]) -> list[str]:
    """The configuration's command line with placeholders, for the results file."""
    argv = command(config, Workload("", ("SCRIPT",)), Path("SCRATCH"), Path("SCRATCH/prof"), tenprof_options)
    named = {sys.executable: "python", str(ROOT / "SCRIPT"): "SCRIPT ARGS..."}
    return [named.get(a, a.removeprefix(f"{ROOT}{os.sep}")) for a in argv]


@dataclass
class Run:
    repeat: int
    order: int  # position of this configuration in its repeat's rotated order
    workload: str
    config: str
    loop_s: float | None = None
    wall_s: float | None = None
    rc: int | None = None
    error: str = ""
    started: str = ""
    steps: int | None = None  # the timed loop's steps, as the script printed them
    # tenprof-timed: the run's own un-profiled step (median of the steps timed with the capture off) and
    # recorded step, from its report
    timed_step_s: float | None = None
    recorded_step_s: float | None = None
    plan: str = ""  # a timed configuration's plan, as OverheadPlan.label names it (results before 2026-12-02: none)
    # plain, when tenprof-timed runs too: the median of its own steps of the numbers tenprof times
    plain_same_steps_s: float | None = None
    # plain, when a timed configuration runs: each of its steps (s), for the step numbers of every timed plan
    plain_step_durations_s: list[float] | None = None


def _stop(proc: subprocess.Popen[str]) -> tuple[str, str]:
    """SIGTERM to the run's process group (tenprof forwards it to its child, which saves), then SIGKILL."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            return proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            continue
    return proc.communicate()


def run_once(
    run: Run,
    workload: Workload,
    timeout_s: float,
    keep: Path | None,
    tenprof_options: tuple[str, ...] = (),
    mark_steps: bool = False,
) -> Run:
    run.started = dt.datetime.now(dt.timezone.utc).strftime("%H:%M:%S")
    with tempfile.TemporaryDirectory(prefix="tenprof-overhead-") as tmp:
        scratch = Path(tmp)
        profile_dir = scratch / "prof"
        if keep is not None:
            profile_dir = keep / run.workload / f"{run.config}-r{run.repeat}"
            profile_dir.parent.mkdir(parents=True, exist_ok=True)
        marked = run.config == "plain" and mark_steps
        argv = command("plain-marked" if marked else run.config, workload, scratch, profile_dir, tenprof_options)
        started = time.perf_counter()
        proc = subprocess.Popen(
            argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
        )
        try:
            out, err = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            out, err = _stop(proc)
            run.error = f"timed out after {timeout_s:.0f} s"
        run.wall_s = time.perf_counter() - started
        if run.config in TIMED_CONFIGS and proc.returncode == 0:
            _read_timed_steps(run, profile_dir)
        if marked and (scratch / "marks.json").exists():
            marks = json.loads((scratch / "marks.json").read_text())
            run.plain_step_durations_s = [(b - a) / 1e9 for a, b in itertools.pairwise(marks)]
            run.plain_same_steps_s = _same_steps_s(run.plain_step_durations_s, "tenprof-timed")
    run.rc = proc.returncode
    steps = re.findall(r"loop_s=\S+ steps=(\d+)", out or "")
    run.steps = int(steps[-1]) if steps else None
    found = re.findall(r"loop_s=([0-9.eE+-]+)", out or "")
    if run.rc == 0 and found and not run.error:
        run.loop_s = float(found[-1])
    else:
        run.wall_s = None
        why = run.error or (f"exit code {run.rc}" if run.rc != 0 else "no loop_s= printed")
        tail = ((out or "")[-1500:] + "\n" + (err or "")[-2500:]).strip()
        run.error = f"{why}\n{tail}".strip()
    return run


def _same_steps_s(durations: list[float], config: str) -> float | None:
    """The median of the plain run's steps whose numbers the timed configuration times un-profiled (its plan:
    TENPROF_SETTLING_STEPS and TENPROF_TIMED_RUN as its runs see them)."""
    plan = _timed_plan(config)
    timed = [d for n, d in enumerate(durations) if plan.is_off(n) and not plan.is_settling(n)]
    return statistics.median(timed) if timed else None


def _timed_plan(config: str) -> OverheadPlan:
    """The plan a timed configuration's runs follow: its own settings, else this process's environment (which
    its runs inherit)."""
    env = {k: int(v) for k, v in TIMED_CONFIGS[config].items()}
    return OverheadPlan.for_run(TIMED_STEPS, None, env.get(SETTLING_VAR), env.get(TIMED_RUN_VAR))


def recorded_overhead(profile_dir: Path) -> dict[str, float | None]:
    """A profile's own measure of itself, in seconds: its report's un-profiled step as timed (the median of
    its timed steps) and its recorded step; ValueError with the report's error where it has none."""
    done = subprocess.run(
        [sys.executable, "-m", "tenprof", "report", str(profile_dir), "--json"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    try:
        overhead = json.loads(done.stdout)["summary"]["overhead"] or {}
    except (json.JSONDecodeError, KeyError, TypeError):
        raise ValueError(f"tenprof report --json failed: {done.stderr[-500:]}") from None
    timed, recorded = overhead.get("timed_unprofiled_step_ns"), overhead.get("profiled_step_ns")
    return {"unprofiled_s": timed / 1e9 if timed else None, "recorded_s": recorded / 1e9 if recorded else None}


def _read_timed_steps(run: Run, profile_dir: Path) -> None:
    """The run's own measure of itself (recorded_overhead) into `run`."""
    try:
        measured = recorded_overhead(profile_dir)
    except ValueError as exc:
        run.error = str(exc)
        return
    run.timed_step_s, run.recorded_step_s = measured["unprofiled_s"], measured["recorded_s"]
    run.plan = _timed_plan(run.config).label


# --- plan, results, table -------------------------------------------------------------------------------


@dataclass
class Plan:
    workloads: list[str]
    configs: list[str]
    repeats: int
    skipped: dict[str, dict[str, str]] = field(default_factory=dict)  # workload -> config -> reason

    def runnable(self, workload: str) -> list[str]:
        return [c for c in self.configs if c not in self.skipped.get(workload, {})]

    def order(self, workload: str, repeat: int) -> list[str]:
        configs = self.runnable(workload)
        shift = repeat % len(configs) if configs else 0
        return configs[shift:] + configs[:shift]

    def runs(self) -> list[Run]:
        return [
            Run(repeat, position, workload, config)
            for repeat in range(self.repeats)
            for workload in self.workloads
            for position, config in enumerate(self.order(workload, repeat))
        ]

    def estimate_s(self, *, everything: bool = False) -> float:
        """Expected wall seconds on an H100: of the runs that will run here, or of the whole plan."""
        total = 0.0
        for workload in self.workloads:
            configs = self.configs if everything else self.runnable(workload)
            if configs:
                total += self.repeats * sum(estimate(workload, c) for c in configs) + cold_s(workload, configs)
        return total


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def summarize(plan: Plan, runs: list[Run]) -> dict[str, dict[str, dict[str, Any]]]:
    summary: dict[str, dict[str, dict[str, Any]]] = {}
    for workload in plan.workloads:
        mine = [r for r in runs if r.workload == workload]
        plain = {r.repeat: r.loop_s for r in mine if r.config == "plain" and r.loop_s is not None}
        plain_step = {r.repeat: r.loop_s / r.steps for r in mine if r.config == "plain" and r.loop_s and r.steps}
        plain_median = _median(list(plain.values()))
        summary[workload] = {}
        for config in plan.configs:
            reason = plan.skipped.get(workload, {}).get(config)
            if reason is not None:
                summary[workload][config] = {"skipped": reason}
                continue
            done = sorted((r for r in mine if r.config == config), key=lambda r: r.repeat)
            loops = [r.loop_s for r in done if r.loop_s is not None]
            walls = [r.wall_s for r in done if r.wall_s is not None]
            per_repeat: list[float | None] = [
                r.loop_s / plain[r.repeat] if r.loop_s is not None and plain.get(r.repeat) else None for r in done
            ]
            loop = _median(loops)
            summary[workload][config] = {
                "runs": len(done),
                "ok": len(loops),
                "loop_s_median": loop,
                "ratio_to_plain": loop / plain_median if loop is not None and plain_median else None,
                "ratio_per_repeat": per_repeat,
                "wall_s_median": _median(walls),
                "errors": [r.error.splitlines()[0] for r in done if r.error],
            }
            if config in TIMED_CONFIGS:
                plain_runs = [r for r in mine if r.config == "plain"]
                summary[workload][config].update(_timed(done, plain_step, plain_runs, config))
    return summary


def _timed(done: list[Run], plain_step: dict[int, float], plain_runs: list[Run], config: str) -> dict[str, Any]:
    """A timed configuration: the run's un-profiled step against the plain run's step of the same repeat, and
    against the plain run's steps of the numbers its plan times."""
    timed = [r.timed_step_s for r in done if r.timed_step_s is not None]
    recorded = [r.recorded_step_s for r in done if r.recorded_step_s is not None]
    same = {
        r.repeat: _same_steps_s(r.plain_step_durations_s, config) if r.plain_step_durations_s else r.plain_same_steps_s
        for r in plain_runs
    }
    same = {repeat: value for repeat, value in same.items() if value}
    return {
        "plain_same_steps_s_median": _median(list(same.values())),
        "timed_over_plain_same_steps": [
            r.timed_step_s / same[r.repeat] if r.timed_step_s and same.get(r.repeat) else None for r in done
        ],
        "plain_step_s_median": _median(list(plain_step.values())),
        "timed_step_s_median": _median(timed),
        "recorded_step_s_median": _median(recorded),
        "timed_over_plain_step": [
            r.timed_step_s / plain_step[r.repeat] if r.timed_step_s and plain_step.get(r.repeat) else None for r in done
        ],
    }


def timed_markdown(plan: Plan, summary: dict[str, dict[str, dict[str, Any]]]) -> list[str]:
    """The table of the runs' own un-profiled steps against the plain loop's, where tenprof-timed ran."""
    rows = []
    for workload, config in ((w, c) for w in plan.workloads for c in TIMED_CONFIGS):
        entry = summary[workload].get(config) or {}
        if not entry.get("timed_step_s_median"):
            continue
        each = [r for r in entry["timed_over_plain_step"] if r is not None]
        same_each = [r for r in entry.get("timed_over_plain_same_steps", []) if r is not None]
        keys = ("plain_step_s_median", "plain_same_steps_s_median", "timed_step_s_median", "recorded_step_s_median")
        plain, same, timed, recorded = (entry.get(k) for k in keys)
        rows.append(
            f"| {workload} ({config}) | {_ms(plain)} | {_ms(same)} | {_ms(timed)} | {_ms(recorded)} | "
            f"{', '.join(f'{r:.2f}' for r in each) or '-'} | {', '.join(f'{r:.2f}' for r in same_each) or '-'} |"
        )
    if not rows:
        return []
    return [
        "",
        "Steps timed un-profiled inside the run (tenprof-timed) against the plain loop's step, same repeat:",
        "",
        "| workload | plain step (median) | plain, the same step numbers | run's un-profiled step (median) | "
        "run's recorded step | each repeat's ratio | each repeat's ratio, the same step numbers |",
        "|---|---|---|---|---|---|---|",
        *rows,
    ]


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1e3:.2f} ms"


def _loop(value: float) -> str:
    return f"{value:.4f}" if value < 0.1 else f"{value:.3f}"


def markdown(
    plan: Plan, summary: dict[str, dict[str, dict[str, Any]]], info: dict[str, Any], workloads: dict[str, Workload]
) -> str:
    card = info.get("card") or "no GPU (CPU only)"
    versions = f"torch {info.get('torch')}, triton {info.get('triton') or 'absent'}, Python {info.get('python')}"
    head = [
        f"{card}, driver {info.get('driver') or '-'}, {versions}, {info.get('date')}; "
        f"{plan.repeats} repeat(s), interleaved, configuration order rotated per repeat.",
        *(
            ["", "**SMOKE RUN (2 steps per workload): checks that every run works; these are not measurements.**"]
            if any("[smoke" in w.label for w in workloads.values())
            else []
        ),
        "",
        "| workload | config | loop s (median) | ratio to plain | each repeat's ratio | wall s (median) |",
        "|---|---|---|---|---|---|",
    ]
    rows: list[str] = []
    for workload in plan.workloads:
        name = f"{workload}: {workloads[workload].label}"
        for config in plan.configs:
            entry = summary[workload][config]
            cells = [name, CONFIGS[config].label]
            name = ""
            if "skipped" in entry:
                rows.append("| " + " | ".join([*cells, f"skipped: {entry['skipped']}", "", "", ""]) + " |")
                continue
            loop = entry["loop_s_median"]
            if loop is None:
                why = entry["errors"][0] if entry["errors"] else "not run"
                rows.append("| " + " | ".join([*cells, f"no result ({why})", "", "", ""]) + " |")
                continue
            if entry["ok"] < plan.repeats:
                cells[1] += f" ({entry['ok']} of {plan.repeats} runs)"
            ratio = entry["ratio_to_plain"]
            each = ", ".join("-" if r is None else f"{r:.2f}" for r in entry["ratio_per_repeat"])
            wall = entry["wall_s_median"]
            rows.append(
                "| "
                + " | ".join(
                    [
                        *cells,
                        _loop(loop),
                        "-" if ratio is None else f"{ratio:.2f}x",
                        each,
                        "-" if wall is None else f"{wall:.1f}",
                    ]
                )
                + " |"
            )
    return "\n".join(head + rows + timed_markdown(plan, summary))


def json_path(arg: str, info: dict[str, Any], suffix: str = "") -> Path:
    day = str(info.get("date", ""))[:10] or dt.date.today().isoformat()
    name = f"{day}-{card_slug(info)}-overhead{suffix}.json"
    if not arg:
        path = RESULTS / name
    elif arg.endswith(os.sep) or Path(arg).is_dir():
        path = Path(arg) / name
    else:
        return Path(arg)
    stem, n = path.stem, 2
    while path.exists():  # never overwrite an earlier session's results
        path = path.with_name(f"{stem}-{n}.json")
        n += 1
    return path


def write_json(path: Path, document: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    staged = path.with_name(path.name + ".partial")
    staged.write_text(json.dumps(document, indent=2) + "\n")
    staged.replace(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workloads", default="default", help="names or groups: default, issue16, all")
    parser.add_argument("--configs", default="default", help="names or groups: default, issue16, all")
    parser.add_argument("--json", default="", help="results file, or a folder/ for the default name in it")
    parser.add_argument("--estimate", action="store_true", help="print the plan and its time estimate, run nothing")
    parser.add_argument(
        "--deadline-min", type=float, default=0.0, help="start no run expected to end after this (0: no limit)"
    )
    parser.add_argument("--run-timeout-s", type=float, default=RUN_TIMEOUT_S, help="per run")
    parser.add_argument("--keep-profiles", default="", help="keep tenprof's profiles under this folder")
    parser.add_argument("--smoke", action="store_true", help="2 steps per workload: check that all runs, no numbers")
    args = parser.parse_args()
    began = time.perf_counter()
    if args.repeats < 1:
        raise SystemExit("--repeats must be at least 1")
    plan = Plan(expand("workloads", args.workloads), expand("configs", args.configs), args.repeats)
    if "plain" not in plan.configs:
        print("note: no plain configuration: no ratios, only loop and wall times", flush=True)

    info = machine_info()
    for workload in plan.workloads:
        for config in plan.configs:
            reason = skip_reason(WORKLOADS[workload], CONFIGS[config], info)
            if reason is not None:
                plan.skipped.setdefault(workload, {})[config] = reason
    runs = plan.runs()
    print(
        f"{info.get('card') or 'no GPU'} | driver {info.get('driver') or '-'} | torch {info.get('torch')} "
        f"(CUDA {info.get('torch_cuda')}) | triton {info.get('triton') or '-'} | {info.get('date')}",
        flush=True,
    )
    whole = plan.repeats * len(plan.workloads) * len(plan.configs)
    print(
        f"plan: {whole} runs = {plan.repeats} repeat(s) x {len(plan.workloads)} workload(s) x "
        f"{len(plan.configs)} config(s); estimated {plan.estimate_s(everything=True) / 60:.1f} min on an H100 "
        "(per-run walls in ESTIMATE_S, from docs/BENCHMARKS.md; compiled GPT-2 and Proton guessed)",
        flush=True,
    )
    for workload in plan.workloads:
        one = sum(estimate(workload, c) for c in plan.configs) + cold_s(workload, plan.configs) / plan.repeats
        print(f"  {workload:14s} ~{one:4.0f} s per repeat on an H100: {', '.join(plan.configs)}", flush=True)
    for workload, reasons in plan.skipped.items():
        by_reason: dict[str, list[str]] = {}
        for config, reason in reasons.items():
            by_reason.setdefault(reason, []).append(config)
        for reason, configs in by_reason.items():
            print(f"skipped here: {workload} x {','.join(configs)}: {reason}", flush=True)
    if len(runs) < whole:
        print(f"here: {len(runs)} of the {whole} runs can run", flush=True)
    if args.estimate:
        return

    workloads = {w: smoke(WORKLOADS[w]) if args.smoke else WORKLOADS[w] for w in plan.workloads}
    # tenprof times a few steps with the capture off to measure its own overhead (issue 16); here every
    # timed step must be recorded, or the loop ratio would mix recorded and un-recorded steps
    tenprof_options = ("--overhead-steps", "0") if info.get("tenprof_overhead_steps") else ()
    if any(c.startswith("tenprof") for c in plan.configs) and not tenprof_options:
        print("note: this tenprof has no --overhead-steps: all its steps are recorded anyway", flush=True)
    out = json_path(args.json, info, "-smoke" if args.smoke else "")
    keep = Path(args.keep_profiles).resolve() if args.keep_profiles else None
    document: dict[str, Any] = {
        "schema": "tenprof-overhead/2",
        "machine": info,
        "argv": sys.argv,
        "repeats": plan.repeats,
        "smoke": args.smoke,
        "workloads": {w: {"label": workloads[w].label, "argv": list(workloads[w].argv)} for w in plan.workloads},
        "configs": {c: {"label": CONFIGS[c].label, "argv": template(c, tenprof_options)} for c in plan.configs},
        "skipped": plan.skipped,
        "runs": [],
    }
    print(f"results: {out}", flush=True)
    deadline = args.deadline_min * 60 if args.deadline_min > 0 else math.inf
    first = time.perf_counter() - began  # the probe, before the first run
    done: list[Run] = []
    spent_est = 0.0
    cold = {(w, family(c)) for w in COLD_COMPILE_S for c in plan.configs}
    for index, run in enumerate(runs):
        elapsed = time.perf_counter() - began
        key = (run.workload, family(run.config))
        expected = estimate(run.workload, run.config) + (COLD_COMPILE_S[run.workload] if key in cold else 0)
        scale = min(max((elapsed - first) / spent_est, 0.5), 3.0) if spent_est else 1.0
        if elapsed + expected * scale > deadline:
            print(f"deadline: {len(runs) - index} runs not started ({elapsed / 60:.1f} min spent)", flush=True)
            document["not_started"] = [[r.repeat, r.workload, r.config] for r in runs[index:]]
            break
        cold.discard(key)
        mark_steps = any(c in TIMED_CONFIGS for c in plan.configs)
        run_once(run, workloads[run.workload], args.run_timeout_s, keep, tenprof_options, mark_steps)
        spent_est += expected
        done.append(run)
        elapsed = time.perf_counter() - began
        scale = min(max((elapsed - first) / spent_est, 0.5), 3.0)
        left = sum(estimate(r.workload, r.config) for r in runs[index + 1 :]) * scale
        result = f"loop {run.loop_s:.4f}s wall {run.wall_s:.1f}s" if run.loop_s is not None else "FAILED"
        if run.plain_same_steps_s is not None:
            result += f" its steps {run.plain_same_steps_s * 1e3:.2f} ms"
        if run.timed_step_s is not None:
            result += f" timed-off step {run.timed_step_s * 1e3:.2f} ms"
        print(
            f"[{index + 1}/{len(runs)}] r{run.repeat} {run.workload:14s} {run.config:16s} {result}"
            f"   ({elapsed / 60:.1f} min, ~{left / 60:.1f} min left)",
            flush=True,
        )
        if run.error:
            print("    " + run.error.replace("\n", "\n    ")[-3000:], flush=True)
        document["runs"] = [asdict(r) for r in done]
        document["summary"] = summarize(plan, done)
        write_json(out, document)

    summary = summarize(plan, done)
    table = markdown(plan, summary, info, workloads)
    document["summary"] = summary
    document["markdown"] = table
    document["elapsed_s"] = time.perf_counter() - began
    write_json(out, document)
    print()
    print(table)
    print()
    print(f"results: {out}  ({document['elapsed_s'] / 60:.1f} min)")


if __name__ == "__main__":
    main()
