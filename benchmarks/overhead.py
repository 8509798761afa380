"""Overhead of `tenprof run` against the un-profiled run and torch.profiler, same card, same session.

    python benchmarks/overhead.py [--repeats 3] [--workloads gpt2,mlp,conv,matmul] [--json out.json]

Each workload script times its own steady-state loop (after warm-up) and prints `loop_s=`; the ratio
is that loop time under a profiler over the loop time without one (median of the repeats). End-to-end
wall time of the whole command (start-up, capture, trace export and, for tenprof, building the
profile) is reported beside it. Configurations:
    plain            python script.py
    tenprof          tenprof run script.py            (timeline pass, Python lines on, memory on)
    tenprof-nolines  tenprof run --no-lines script.py
    tenprof-light    tenprof run --no-lines --no-shapes --no-memory script.py
    tenprof-tensors  tenprof run --passes tensors script.py   (the tensors pass alone)
    torch            torch.profiler(CPU+CUDA)
    torch-stack      torch.profiler(CPU+CUDA, with_stack, record_shapes, profile_memory)
    torch-et         torch.profiler.ExecutionTraceObserver (every op's tensors, in C++; no Python lines)
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORKLOADS = {
    "matmul": ["examples/matmul_add.py", "--size", "4096", "--steps", "10", "--warmup", "3"],
    "gpt2": ["examples/gpt2_train.py", "--steps", "10", "--warmup", "3"],
    "conv": ["examples/conv_block.py", "--steps", "10", "--warmup", "3"],
    "mlp": ["examples/small_mlp.py", "--steps", "50", "--warmup", "10"],
}
CONFIGS = (
    "plain",
    "tenprof",
    "tenprof-nolines",
    "tenprof-light",
    "tenprof-tensors",
    "torch",
    "torch-stack",
    "torch-et",
)


def command(config: str, workload: list[str], scratch: Path) -> list[str]:
    script = [str(ROOT / workload[0]), *workload[1:]]
    py = sys.executable
    if config == "plain":
        return [py, *script]
    if config.startswith("tenprof"):
        extra = {
            "tenprof": [],
            "tenprof-nolines": ["--no-lines"],
            "tenprof-light": ["--no-lines", "--no-shapes", "--no-memory"],
            "tenprof-tensors": ["--passes", "tensors"],
        }[config]
        return [
            py,
            "-m",
            "tenprof",
            "run",
            "--quiet",
            "--force",
            *extra,
            "-o",
            str(scratch / "prof"),
            *script,
        ]
    if config == "torch-et":
        return [py, str(ROOT / "benchmarks" / "execution_trace_run.py"), str(scratch / "et.json"), *script]
    stack = ["--stack"] if config == "torch-stack" else []
    return [
        py,
        str(ROOT / "benchmarks" / "torch_profiler_run.py"),
        *stack,
        str(scratch / "trace.json"),
        *script,
    ]


def run_once(config: str, workload: list[str]) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        done = subprocess.run(command(config, workload, Path(tmp)), capture_output=True, text=True, check=False)
        wall = time.perf_counter() - started
    found = re.search(r"loop_s=([0-9.]+)", done.stdout)
    if done.returncode != 0 or not found:
        raise RuntimeError(
            f"{config} {workload[0]} failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
        )
    return float(found.group(1)), wall


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workloads", default=",".join(WORKLOADS))
    parser.add_argument("--configs", default=",".join(CONFIGS))
    parser.add_argument("--json", default="")
    args = parser.parse_args()
    results: dict[str, dict[str, dict[str, list[float]]]] = {}
    for name in args.workloads.split(","):
        results[name] = {}
        for repeat in range(args.repeats):
            for config in args.configs.split(","):  # interleaved, so drift hits every config alike
                loop, wall = run_once(config, WORKLOADS[name])
                entry = results[name].setdefault(config, {"loop_s": [], "wall_s": []})
                entry["loop_s"].append(loop)
                entry["wall_s"].append(wall)
                print(f"{name:7s} {config:16s} repeat {repeat}: loop {loop:.4f}s wall {wall:.2f}s", flush=True)
    print()
    print("| workload | config | loop s (median) | loop ratio | wall s (median) | wall ratio |")
    print("|---|---|---|---|---|---|")
    for name, configs in results.items():
        base_loop = statistics.median(configs["plain"]["loop_s"]) if "plain" in configs else float("nan")
        base_wall = statistics.median(configs["plain"]["wall_s"]) if "plain" in configs else float("nan")
        for config, entry in configs.items():
            loop = statistics.median(entry["loop_s"])
            wall = statistics.median(entry["wall_s"])
            print(
                f"| {name} | {config} | {loop:.4f} | {loop / base_loop:.2f}x | {wall:.2f} | {wall / base_wall:.2f}x |"
            )
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
