"""What torch.compile's (Inductor's) names say, without its generated code: the ops a generated Triton
kernel's name lists, whether a file is Inductor's generated code, and which ops are autotuning's
benchmark runs rather than the program's.

The importers use these while building `compiled_kernels` and the ops' `is_autotuning` column (which the
loader computes with the same function for profiles from before that column); the analyses use them again
for profiles recorded without the generated code, and the renderers to label generated sources.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

_NAME = re.compile(r"^triton_(?:poi|red|per|tem|mm|bmm|for|spl|unk)_fused_(.+?)(?:_\d+)?$")
# a frame of a Python stack trace as Inductor keeps an FX node's (in an ORIGIN block, in provenance tracking):
# its file and line
STACK_FRAME = re.compile(r'File "([^"]+)", line (\d+)')


@dataclass(frozen=True)
class CompiledKernel:
    """What one generated kernel computes: its aten ops, their user lines, and where that came from."""

    kernel: str
    aten_ops: tuple[str, ...]
    lines: tuple[str, ...]
    generated_file: str
    wrapper_file: str
    source: str
    confidence: str
    counts: tuple[int, int, int] = (-1, -1, -1)  # num_load, num_store, num_reduction from inductor_meta


def from_kernel_name(name: str) -> CompiledKernel | None:
    """The fallback: the ops Inductor put in the kernel's name."""
    match = _NAME.match(name)
    if match is None:
        return None
    words = [w for w in match.group(1).split("_") if w and not w.isdigit()]
    return CompiledKernel(name, tuple(dict.fromkeys(f"aten::{w}" for w in words)), (), "", "", "kernel-name", "low")


# Inductor's generated files are content-addressed: `c` + 51 base32 characters, in a two-letter directory
_GENERATED_FILE = re.compile(r"(^|/)c[a-z0-9]{51}\.py$")


def is_generated_file(path: str) -> bool:
    """`/tmp/torchinductor_u/o3/co377...wgelq.py` is; Triton's or torch's own sources are not."""
    return bool(_GENERATED_FILE.search(path.replace("\\", "/")))


AUTOTUNING_RECORDS = (
    "CachingAutotuner.benchmark_all_configs",
    "CachingAutotuner.coordinate_descent_tuning",
    "CachingAutotuner.combo_sequential_autotune",
)


def inside_autotuning(op_names: list[str], parent: np.ndarray) -> np.ndarray:
    """Per op: it is, or runs inside, one of Inductor's autotuning benchmarks (AUTOTUNING_RECORDS), whose
    launches are not the program's: the counters pass leaves them unmarked (only the launch after
    autotuning is replayed), and they count as no launch of the kernel."""
    marked = {name: any(r in name for r in AUTOTUNING_RECORDS) for name in set(op_names)}
    own = np.array([marked[name] for name in op_names], dtype=bool)
    return within_records(own, parent)


def within_records(own: np.ndarray, parent: np.ndarray) -> np.ndarray:
    """Per op: it is one of the marked records (`own`) or runs inside one (through `parent`)."""
    inside = own.copy()
    parents = parent.tolist()
    # a parent comes before its children (ops are numbered by start), so no op before the first record is
    # inside one: most profiles, which have none, skip the walk
    first = int(inside.argmax()) if inside.any() else len(inside)
    for i in range(first, len(inside)):
        p = parents[i]
        if p >= 0 and inside[p]:
            inside[i] = True
    return inside
