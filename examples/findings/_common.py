"""Shared by the findings examples: device choice and the step loop (each example is `--fixed`-able)."""

import argparse
import time
from collections.abc import Callable

import torch

import tenprof


def parse(description: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--fixed", action="store_true", help="run the variant without the problem")
    parser.add_argument("--steps", type=int, default=6)
    return parser.parse_args()


def device() -> str:
    return "cuda" if torch.cuda.is_available() else "cpu"


def loop(steps: int, step: Callable[[], None]) -> None:
    for _ in range(steps):
        step()
        tenprof.step()
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def prepare_next_batch(seconds: float = 0.001) -> None:
    """CPU work between steps (standing in for preparing a batch): run ahead of the GPU, it is hidden;
    after a synchronization, the GPU waits for it."""
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        pass
