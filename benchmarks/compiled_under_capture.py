"""Is a model compiled while tenprof records slower afterwards than one compiled un-profiled? One process.

    python benchmarks/compiled_under_capture.py [--layers 8] [--width 32] [--batch 4] [--rounds 12] [--steps 40]

A `tenprof run` compiles the script's model while its capture records; the in-process comparison of
docs/BENCHMARKS.md compiled it before. To tell whether that alone makes the compiled steps slower, this
compiles one copy of an MLP's training step un-profiled and a second copy inside a `tenprof.profile()`
block, then, the capture over, times both alternately (`--rounds` rounds of `--steps` steps each, each step
from a synchronize to a synchronize on the GPU) and prints both medians and their ratio. On the GPU when
there is one, else on the CPU.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable

import torch

import tenprof


def training_step(layers: int, width: int, batch: int, device: str, compiled: bool = True) -> Callable[[], None]:
    torch.manual_seed(0)
    blocks: list[torch.nn.Module] = []
    for _ in range(layers):
        blocks += [torch.nn.Linear(width, width), torch.nn.ReLU()]
    model = torch.nn.Sequential(*blocks).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    forward = torch.compile(model) if compiled else model
    x = torch.randn(batch, width, device=device)

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        forward(x).sum().backward()
        optimizer.step()

    return step


def timed(step: Callable[[], None], count: int, device: str) -> list[int]:
    times = []
    for _ in range(count):
        if device == "cuda":
            torch.cuda.synchronize()
        began = time.perf_counter_ns()
        step()
        if device == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter_ns() - began)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--width", type=int, default=32)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--steps", type=int, default=40)
    args = parser.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    plain = training_step(args.layers, args.width, args.batch, device)
    timed(plain, 3, device)  # compiled here, un-profiled
    with tempfile.TemporaryDirectory() as out, tenprof.profile(out, force=True, overhead_steps=0):
        under = training_step(args.layers, args.width, args.batch, device)
        for _ in range(8):  # compiled here, while the capture records
            under()
            tenprof.step()
    timed(plain, args.steps, device), timed(under, args.steps, device)  # settle after the capture's end
    a: list[int] = []
    b: list[int] = []
    for _ in range(args.rounds):
        a += timed(plain, args.steps, device)
        b += timed(under, args.steps, device)
    ma, mb = statistics.median(a) / 1e3, statistics.median(b) / 1e3
    card = torch.cuda.get_device_name(0) if device == "cuda" else "CPU"
    print(
        f"{card}: compiled un-profiled {ma:.1f} us a step, compiled under the capture {mb:.1f} us "
        f"({len(a)} steps each, alternating rounds): {mb / ma:.3f}x"
    )


if __name__ == "__main__":
    main()
