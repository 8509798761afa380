"""Each capture's recorded steps against its own un-profiled steps in the same process.

    python benchmarks/in_run_overhead.py [--captures native-cupti,native-cupti-every,kineto]
        [--workloads mlp,gpt2-fp32] [--rounds 2] [--json OUT.json]

Between processes a loop's step varies by up to 40% on the GPU machines (docs/BENCHMARKS.md), more than the
differences between captures. Here each run is `tenprof run --capture C --overhead-steps N` (the `-every`
variants with TENPROF_INPUTS=every, the `-ops` ones with TENPROF_OPS=sampled; parts turned off by `+` and a
name of PARTS_OFF, e.g. `native-cupti-ops+nomem+nosampler`), so one process times N steps
with everything of tenprof's off between its recorded ones; the ratio is the report's Overhead line's: the
recorded steps' typical time over the un-profiled steps' as timed, each at least the GPU's busy time per step
(a step whose host runs ahead of a busy GPU lasts its GPU work), so a GPU-bound loop reads 1.00x unless the
capture slows the GPU's side. Captures alternate within each round. It does not replace
benchmarks/overhead.py's whole-loop ratio against an un-profiled process (the issue's measure), which also
holds what stays on between steps.
Prints the card, every run and each configuration's median.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from overhead import machine_info

from tenprof.analyses.timeline.overhead import measure
from tenprof.store.profile import load_profile

ROOT = Path(__file__).resolve().parents[1]
SHOWN = (
    "recorded {recorded_ms:.3f} ms, un-profiled {unprofiled_ms:.3f} ms, {ratio:.3f}x "
    "({recorded_steps} recorded, {off_steps} off; inputs asked in {asked_steps}, ops copied in {copied_steps}, "
    "launches changed {launches_changed})"
)
PARTS_OFF = {  # what a `+name` in a capture's name turns off: tenprof run's options, environment
    "nomem": (["--no-memory"], {}),
    "nolines": (["--no-lines"], {}),
    "noshapes": (["--no-shapes"], {}),
    "nosampler": ([], {"TENPROF_HOST_SAMPLE_HZ": "0"}),
    "nogate": ([], {"TENPROF_SAMPLER_GATE": "0"}),
    "noclocks": ([], {"TENPROF_GPU_CLOCKS": "0"}),  # the NVML thread
    # CUPTI detached in the steps run un-profiled (experimental): their baseline without CUPTI attached
    "detach": ([], {"TENPROF_CUPTI_DETACH": "1"}),
}
WORKLOADS = {  # script, its arguments, steps timed with the capture off
    "mlp": (["examples/small_mlp.py", "--steps", "200", "--warmup", "10"], 40),
    "gpt2-fp32": (["examples/gpt2_fp32.py", "--steps", "40", "--warmup", "3"], 8),
    # overhead.py's gpt2-compiled (bf16 autocast, default mode); torch.compile's first step takes ~40 s
    "gpt2-compiled": (["examples/compiled_train.py", "--model", "gpt2", "--mode", "default", "--steps", "40"], 10),
}


def one_run(capture: str, workload: str, out: Path) -> dict[str, Any]:
    """One `tenprof run` and its Overhead line's numbers."""
    args, off_steps = WORKLOADS[workload]
    env = dict(os.environ)
    name, *parts = capture.split("+")
    if name.endswith("-every"):
        env["TENPROF_INPUTS"] = "every"
    if name.endswith("-ops"):  # op records in sampled steps alone (experimental)
        env["TENPROF_OPS"] = "sampled"
    base = name.removesuffix("-every").removesuffix("-ops")
    options: list[str] = []
    for part in parts:
        more, variables = PARTS_OFF[part]
        options += more
        env.update(variables)
    command = [sys.executable, "-m", "tenprof", "run", "--quiet", "--capture", base, *options]
    command += ["--overhead-steps", str(off_steps), "-o", str(out), *args]
    ran = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    if ran.returncode != 0:
        return {"error": (ran.stderr.strip().splitlines() or [f"exit {ran.returncode}"])[-1]}
    profile = load_profile(out)
    o = measure(profile)
    if o.method != "measured" or not o.timed_unprofiled_step_ns or o.profiled_step_ns is None:
        return {"error": o.note}
    sampling = profile.meta.timeline.input_sampling or {}
    copy = profile.meta.timeline.op_copy or {}
    return {
        # how many recorded steps asked for inputs, and with TENPROF_OPS=sampled got their ops copied
        "asked_steps": sampling.get("asked_steps"),
        "asked": sampling.get("asked"),
        "why": sampling.get("why"),  # why each step asked (input_sampling.InputSampling.why)
        "copied_steps": copy.get("copied_steps"),
        "launches_changed": copy.get("launches_changed"),
        "recorded_ms": o.profiled_step_ns / 1e6,
        "unprofiled_ms": o.timed_unprofiled_step_ns / 1e6,
        "ratio": o.profiled_step_ns / o.timed_unprofiled_step_ns,
        "recorded_steps": o.recorded_steps,
        "off_steps": o.measured_steps,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--captures", default="native-cupti,native-cupti-every,kineto")
    parser.add_argument("--workloads", default="mlp,gpt2-fp32")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    info = machine_info()
    card = f"{info.get('card') or 'no GPU'}, driver {info.get('driver', '-')}, {info['date']}"
    print(card, flush=True)
    runs: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory(prefix="tenprof-inrun-") as scratch:
        for r in range(1, args.rounds + 1):
            for workload in args.workloads.split(","):
                for capture in args.captures.split(","):
                    found = one_run(capture, workload, Path(scratch) / f"{workload}-{capture}-{r}")
                    runs.append({"round": r, "workload": workload, "capture": capture, **found})
                    shown = found.get("error") or SHOWN.format(**found)
                    if found.get("asked"):
                        shown += f"\n    asked in steps {found['asked']}, for: {found.get('why')}"
                    print(f"round {r} {workload:10s} {capture:32s} {shown}", flush=True)
                    if args.json:
                        args.json.write_text(json.dumps({"machine": info, "runs": runs}, indent=1))
    for workload in args.workloads.split(","):
        for capture in args.captures.split(","):
            ratios = [
                x["ratio"] for x in runs if x["workload"] == workload and x["capture"] == capture and "ratio" in x
            ]
            if ratios:
                each = ", ".join(f"{v:.3f}" for v in ratios)
                print(f"median {workload:10s} {capture:32s} {statistics.median(ratios):.3f}x ({each})")


if __name__ == "__main__":
    main()
