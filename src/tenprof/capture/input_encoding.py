"""An op's input signature as the native recorder encodes it (callsite_observer.cpp, encode_inputs): a flat
tuple of ints, each input its kind followed by its values. Split into inputs, two signatures merged where
they differ in scalars' values alone, and decoded as torch.profiler's record_shapes writes an op's inputs
([Input Dims, Input type, Input Strides, Concrete Inputs], one entry per input).

Torch-free: the dtype names come from the caller (`dtype_name`).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator
from typing import Any

# the input kinds (callsite_observer.cpp, InputKind); SCALAR_UNKNOWN is this side's alone: an int or a double
# whose value is not known, in a signature copied from other steps' ops that disagreed on it (input_sampling.py)
INPUT_NONE, INPUT_TENSOR, INPUT_INT, INPUT_BOOL, INPUT_DOUBLE, INPUT_INT_LIST, INPUT_TENSOR_LIST = range(7)
INPUT_SCALAR_UNKNOWN = 7
_SCALARS = (INPUT_INT, INPUT_DOUBLE, INPUT_SCALAR_UNKNOWN)


def _tensor_end(key: tuple[int, ...], at: int) -> int:
    """Where the encoded tensor at `at` (dtype, rank, sizes..., strides...) ends."""
    return at + 2 + 2 * key[at + 1]


def split_inputs(key: tuple[int, ...]) -> Iterator[tuple[int, ...]]:
    """Each input's part of an encoded signature, its kind first."""
    at = 0
    while at < len(key):
        kind, end = key[at], at + 1
        if kind == INPUT_TENSOR:
            end = _tensor_end(key, end)
        elif kind == INPUT_TENSOR_LIST:
            end += 1
            for _ in range(key[at + 1]):
                end = _tensor_end(key, end)
        elif kind in (INPUT_INT, INPUT_BOOL, INPUT_DOUBLE):
            end += 1
        elif kind == INPUT_INT_LIST:
            end += 1 + key[at + 1]
        yield key[at:end]
        at = end


def merge_scalars(first: tuple[int, ...], second: tuple[int, ...]) -> tuple[int, ...] | None:
    """The two signatures as one where they differ in ints' or doubles' values alone (a learning rate, the
    random generator's offset), each value they differ in unknown (INPUT_SCALAR_UNKNOWN); None where they
    differ otherwise (a shape, a kind, an int list)."""
    a, b = list(split_inputs(first)), list(split_inputs(second))
    if len(a) != len(b):
        return None
    merged: list[int] = []
    for x, y in zip(a, b, strict=True):
        if x == y:
            merged += x
        elif x[0] in _SCALARS and y[0] in _SCALARS:  # an int in one, a double in the other: a Scalar still
            merged.append(INPUT_SCALAR_UNKNOWN)
        else:
            return None
    return tuple(merged)


def decode_signature(key: tuple[int, ...], dtype_name: Callable[[int], str]) -> list[list[Any]]:
    """The encoded signature as the profiler's record_shapes writes it: [Input Dims, Input type, Input
    Strides, Concrete Inputs], one entry per input; a scalar of unknown value is a Scalar with no value."""
    columns: list[list[Any]] = [[], [], [], []]

    def add(dims: Any, kind: str, strides: Any, value: str) -> None:
        for column, item in zip(columns, (dims, kind, strides, value), strict=True):
            column.append(item)

    def tensor(part: tuple[int, ...], at: int) -> tuple[list[int], str, list[int]]:
        dtype, rank = part[at], part[at + 1]
        sizes, steps = list(part[at + 2 : at + 2 + rank]), list(part[at + 2 + rank : at + 2 + 2 * rank])
        return sizes, dtype_name(dtype) if dtype >= 0 else "", steps

    for part in split_inputs(key):
        kind = part[0]
        if kind == INPUT_TENSOR:
            sizes, name, steps = tensor(part, 1)
            add(sizes, name, steps, "")
        elif kind == INPUT_TENSOR_LIST:
            listed, at = [], 2
            for _ in range(part[1]):
                listed.append(tensor(part, at))
                at = _tensor_end(part, at)
            add([t[0] for t in listed], "TensorList", [t[2] for t in listed], "")
        elif kind in (INPUT_INT, INPUT_BOOL, INPUT_DOUBLE):
            add([], "Scalar", [], _scalar_text(kind, part[1]))
        elif kind == INPUT_SCALAR_UNKNOWN:
            add([], "Scalar", [], "")
        elif kind == INPUT_INT_LIST:
            add([], "ScalarList", [], "[" + ", ".join(str(v) for v in part[2:]) + "]")
        else:
            add([], "", [], "")
    return columns


def _scalar_text(kind: int, value: int) -> str:
    """A scalar as the profiler prints it: ints as they are, bools as Python's, doubles with 17 significant
    digits and a point where they have none (C++'s ostream at max_digits10, as torch's IValue printing)."""
    if kind == INPUT_BOOL:
        return "True" if value else "False"
    if kind == INPUT_INT:
        return str(value)
    number = struct.unpack("<d", struct.pack("<q", value))[0]
    text = f"{number:.17g}"
    if not any(c in text for c in ".en"):  # not 1e+20, inf, nan
        text += "."
    return text
