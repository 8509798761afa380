"""The recorded call, parsed: dtype names and sizes, and each argument's kind, shape, strides and value.

`parse_call` pairs Kineto's per-argument lists into a `Call`; a list that does not line up is taken as not
recorded. The `*_value` readers turn a concrete value's text into ints, bools or a dtype, None when unreadable.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

# ---------------------------------------------------------------------------------------------------------------
# dtypes

# Bytes per element of each normalized dtype. float4_e2m1fn_x2 packs two values in a byte, and its shapes count
# those bytes, so one "element" is one byte.
SIZES: dict[str, int] = {
    "float64": 8,
    "float32": 4,
    "float16": 2,
    "bfloat16": 2,
    "float8": 1,
    "float4": 1,
    "complex128": 16,
    "complex64": 8,
    "complex32": 4,
    "int64": 8,
    "int32": 4,
    "int16": 2,
    "int8": 1,
    "uint64": 8,
    "uint32": 4,
    "uint16": 2,
    "uint8": 1,
    "bool": 1,
    "qint8": 1,
    "quint8": 1,
    "qint32": 4,
    "quint4x2": 1,
    "quint2x4": 1,
    "bits8": 1,
    "bits16": 2,
}

# Kineto writes a tensor's dtype as the demangled C++ element type (caffe2::TypeMeta::name); torch-style names are
# accepted too so that callers may pass either.
_KINETO_NAMES: dict[str, str] = {
    "float": "float32",
    "double": "float64",
    "c10::Half": "float16",
    "c10::BFloat16": "bfloat16",
    "c10::Float8_e4m3fn": "float8",
    "c10::Float8_e5m2": "float8",
    "c10::Float8_e4m3fnuz": "float8",
    "c10::Float8_e5m2fnuz": "float8",
    "c10::Float8_e8m0fnu": "float8",
    "c10::Float4_e2m1fn_x2": "float4",
    "c10::complex<double>": "complex128",
    "c10::complex<float>": "complex64",
    "c10::complex<c10::Half>": "complex32",
    "long int": "int64",
    "long long int": "int64",
    "long long": "int64",
    "long": "int64",
    "int": "int32",
    "short int": "int16",
    "short": "int16",
    "signed char": "int8",
    "unsigned char": "uint8",
    "long unsigned int": "uint64",
    "unsigned long": "uint64",
    "unsigned int": "uint32",
    "short unsigned int": "uint16",
    "unsigned short": "uint16",
    "bool": "bool",
    "c10::qint8": "qint8",
    "c10::quint8": "quint8",
    "c10::qint32": "qint32",
    "c10::quint4x2": "quint4x2",
    "c10::quint2x4": "quint2x4",
    "c10::bits8": "bits8",
    "c10::bits16": "bits16",
    "c10::bits1x8": "bits8",
    "c10::bits2x4": "bits8",
    "c10::bits4x2": "bits8",
    "half": "float16",
    "cfloat": "complex64",
    "cdouble": "complex128",
}
_KINETO_NAMES.update({name: name for name in SIZES})
_KINETO_NAMES.update({f"torch.{name}": name for name in SIZES})

# c10::ScalarType numbers, as Concrete Inputs records a dtype argument (_to_copy's '15' is bfloat16).
_SCALAR_TYPES: dict[int, str] = {
    0: "uint8",
    1: "int8",
    2: "int16",
    3: "int32",
    4: "int64",
    5: "float16",
    6: "float32",
    7: "float64",
    8: "complex32",
    9: "complex64",
    10: "complex128",
    11: "bool",
    12: "qint8",
    13: "quint8",
    14: "qint32",
    15: "bfloat16",
    16: "quint4x2",
    17: "quint2x4",
    18: "bits8",
    19: "bits8",
    20: "bits8",
    21: "bits8",
    22: "bits16",
    23: "float8",
    24: "float8",
    25: "float8",
    26: "float8",
    27: "uint16",
    28: "uint32",
    29: "uint64",
    44: "float8",
    45: "float4",
}

REAL_PART = {"complex128": "float64", "complex64": "float32", "complex32": "float16"}
SIXTEEN_BIT = frozenset({"float16", "bfloat16"})

# Argument kinds that are not tensors: Kineto's names for scalars, lists and absent optionals.
_NON_TENSOR_KINDS = frozenset({"", "Scalar", "ScalarList", "TensorList", "GenericList"})


def normalized_dtype(kineto_dtype: str) -> str:
    """Kineto's type string ("c10::BFloat16", "float", "long int") -> "bfloat16", "float32", "int64"; "" unknown."""
    return _KINETO_NAMES.get(kineto_dtype.strip(), "")


def dtype_bytes(kineto_dtype: str) -> int | None:
    """Bytes per element of a Kineto type string; None for non-tensors ("Scalar", "") and unknown types."""
    return SIZES.get(normalized_dtype(kineto_dtype))


def accumulate_dtype(dtype: str) -> str:
    # CUDA kernels keep statistics (layer/batch norm mean and rstd) in float32 for narrower floating inputs.
    return "float32" if dtype in SIXTEEN_BIT or dtype in ("float8", "float4") else dtype


# ---------------------------------------------------------------------------------------------------------------
# The recorded arguments

Shape = tuple[int, ...]


def _dims(obj: Any) -> Shape | None:
    """A list of non-negative ints (a shape or strides) as a tuple; None for anything else."""
    if not isinstance(obj, (list, tuple)):
        return None
    for item in obj:
        if isinstance(item, bool) or not isinstance(item, int) or item < 0:
            return None
    return tuple(obj)


def numel_of(shape: Shape) -> int:
    return math.prod(shape)


@dataclass(frozen=True)
class Arg:
    """One argument as recorded: Kineto kind (dtype string), shape, strides and concrete value (text)."""

    kind: str
    shape: Shape | None
    stride: Shape | None
    value: str | None  # None: values were not recorded

    @property
    def is_tensor(self) -> bool:
        return self.kind not in _NON_TENSOR_KINDS

    @property
    def absent(self) -> bool:
        """An optional argument passed as None (Kineto writes "" for its kind)."""
        return self.kind == ""

    @property
    def dtype(self) -> str:
        return normalized_dtype(self.kind)

    @property
    def numel(self) -> int:
        return numel_of(self.shape or ())

    @property
    def distinct(self) -> int:
        """Elements that exist in memory: a stride-0 (expanded) dim repeats one element."""
        shape = self.shape or ()
        if self.stride is None or len(self.stride) != len(shape):
            return numel_of(shape)
        if 0 in shape:
            return 0
        return math.prod(size for size, step in zip(shape, self.stride, strict=True) if step != 0)


_NO_ARG = Arg(kind="", shape=None, stride=None, value=None)


@dataclass(frozen=True)
class Call:
    """One op instance: its name and its arguments in schema order."""

    name: str
    args: tuple[Arg, ...]

    def arg(self, index: int) -> Arg:
        """The argument at `index`, or an unreadable placeholder when the row has fewer."""
        return self.args[index] if 0 <= index < len(self.args) else _NO_ARG

    def tensor(self, index: int) -> Arg | None:
        """The argument at `index` when it is a tensor with a readable shape."""
        arg = self.arg(index)
        return arg if arg.is_tensor and arg.shape is not None else None

    def tensors(self) -> list[Arg] | None:
        """Every tensor argument; None when one of them has no readable shape."""
        found = [arg for arg in self.args if arg.is_tensor]
        return None if any(arg.shape is None for arg in found) else found

    def first_dtype(self) -> str:
        return next((arg.dtype for arg in self.args if arg.is_tensor), "")


def parse_call(name: str, shapes: Any, dtypes: Any, strides: Any, values: Any) -> Call:
    """Pair the per-argument lists; a list that does not line up with the dtypes is treated as not recorded."""
    if not isinstance(dtypes, (list, tuple)) or not isinstance(shapes, (list, tuple)) or len(shapes) != len(dtypes):
        return Call(name, ())
    count = len(dtypes)
    stride_list = strides if isinstance(strides, (list, tuple)) and len(strides) == count else [None] * count
    value_list = values if isinstance(values, (list, tuple)) and len(values) == count else [None] * count
    args = []
    for kind, shape, stride, value in zip(dtypes, shapes, stride_list, value_list, strict=True):
        args.append(
            Arg(
                kind=kind if isinstance(kind, str) else "GenericList",
                shape=_dims(shape),
                stride=_dims(stride),
                value=value if isinstance(value, str) else None,
            )
        )
    return Call(name, tuple(args))


# Concrete values are Python-repr text: '1', '-1', '[1, 1]', 'False', '[True, True, False]', '0.', '15'.


def list_items(text: str) -> list[str]:
    text = text.strip()
    if text.startswith("[") and text.endswith("]"):
        inner = text[1:-1].strip()
        return [item.strip() for item in inner.split(",")] if inner else []
    return [text]


def int_of(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:  # also the interpreter's limit on digits
        return None


def _bool_of(text: str) -> bool | None:
    return {"True": True, "False": False, "true": True, "false": False, "1": True, "0": False}.get(text)


def int_value(call: Call, index: int) -> int | None:
    value = call.arg(index).value
    items = list_items(value) if value else []
    return int_of(items[0]) if len(items) == 1 else None


def ints_value(call: Call, index: int) -> Shape | None:
    """An int list ('[2, 2]'; a lone '2' as a one-item list); None when unreadable."""
    value = call.arg(index).value
    if not value:
        return None
    numbers = [int_of(item) for item in list_items(value)]
    return None if any(n is None for n in numbers) else tuple(n for n in numbers if n is not None)


def bool_value(call: Call, index: int) -> bool | None:
    value = call.arg(index).value
    items = list_items(value) if value else []
    return _bool_of(items[0]) if len(items) == 1 else None


def bools_value(call: Call, index: int, count: int) -> tuple[bool, ...] | None:
    value = call.arg(index).value
    flags = [_bool_of(item) for item in list_items(value)] if value else []
    if len(flags) != count or any(flag is None for flag in flags):
        return None
    return tuple(bool(flag) for flag in flags)


def dtype_value(call: Call, index: int, default: str) -> str | None:
    """A ScalarType argument: `default` when passed as None, the dtype its number names, or None if unreadable."""
    arg = call.arg(index)
    if arg.absent and index < len(call.args):
        return default
    number = int_value(call, index)
    return _SCALAR_TYPES.get(number) if number is not None else None
