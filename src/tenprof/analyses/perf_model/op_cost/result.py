"""`OpCost`, the result, and the helpers every handler builds one with: bytes from (elements, dtype) parts.

A handler (`Handler`) maps one parsed call to its `OpCost`; `unknown` is the answer when it cannot tell.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from tenprof.analyses.perf_model.op_cost.arguments import SIZES, Arg, Call


@dataclass(frozen=True)
class OpCost:
    """The cost of one op instance; see the package docstring for each field's contract."""

    flops: float | None
    bytes: float | None
    dtype: str
    matmul: bool
    rule: str


Traffic = tuple[int, str]  # (elements, normalized dtype)


def traffic(parts: Iterable[Traffic | None]) -> float | None:
    """Total bytes of (elements, dtype) parts; None when any part or dtype size is unknown."""
    total = 0
    for part in parts:
        if part is None or part[1] not in SIZES:
            return None
        total += part[0] * SIZES[part[1]]
    return _as_float(total)


def _as_float(number: int | None) -> float | None:
    if number is None:
        return None
    try:
        return float(number)
    except OverflowError:  # absurd recorded shapes: report unknown rather than inf
        return None


def read(arg: Arg) -> Traffic:
    return (arg.distinct, arg.dtype)


def write(elements: int | None, dtype: str | None) -> Traffic | None:
    return None if elements is None or dtype is None else (elements, dtype)


def unknown(call: Call) -> OpCost:
    return OpCost(flops=None, bytes=None, dtype=call.first_dtype(), matmul=False, rule="")


def cost(flops: int | None, moved: float | None, dtype: str, matmul: bool, rule: str) -> OpCost:
    as_float = _as_float(flops)
    return OpCost(flops=as_float, bytes=moved, dtype=dtype, matmul=matmul, rule=rule if as_float is not None else "")


Handler = Callable[[Call], OpCost]
