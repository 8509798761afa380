"""Measured values inside a finding's text, kept as numbers: an analysis writes `quantity(value, kind)`
where its text shows a duration, a size or a count, and a renderer turns each into text its own way
(`format_quantities` with the default formats of core.units, or others: an HTML page, a diff).

A quantity is a token `⟦kind:value⟧` in the string (brackets no kernel or op name uses), so the text
stays one string that carries its numbers; `quantities(text)` reads them back.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from tenprof.core.units import count as count_text
from tenprof.core.units import duration as duration_text
from tenprof.core.units import size as size_text

DEFAULT_FORMATS: Mapping[str, Callable[[float], str]] = {
    "duration": duration_text,
    "size": size_text,
    "count": count_text,
}
_TOKEN = re.compile(r"⟦(\w+):([^⟧]*)⟧")


def quantity(value: float, kind: str) -> str:
    """The token for `value` (a duration in ns, a size in bytes, or a count) in a finding's text."""
    if kind not in DEFAULT_FORMATS:
        raise ValueError(f"unknown quantity kind {kind!r}")
    return f"⟦{kind}:{float(value)!r}⟧"


def format_quantities(text: str, formats: Mapping[str, Callable[[float], str]] = DEFAULT_FORMATS) -> str:
    """`text` with each quantity written out by `formats`."""
    return _TOKEN.sub(lambda m: formats[m.group(1)](float(m.group(2))), text)


def quantities(text: str) -> list[tuple[str, float]]:
    """The (kind, value) of each quantity in `text`, in order."""
    return [(m.group(1), float(m.group(2))) for m in _TOKEN.finditer(text)]


# What analyses call where their text shows a value: the same names as core.units, returning tokens.
def duration(ns: float) -> str:
    return quantity(ns, "duration")


def size(n: float) -> str:
    return quantity(n, "size")


def count(value: float) -> str:
    return quantity(value, "count")
