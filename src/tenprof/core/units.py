"""Human-readable durations, sizes, SI quantities and counts, in one place: the renderers' default
formats, also for the quantities a finding's text carries (core.quantities)."""

from __future__ import annotations


def duration(ns: float) -> str:
    if ns >= 1e9:
        return f"{ns / 1e9:.2f}s"
    if ns >= 1e6:
        return f"{ns / 1e6:.2f}ms"
    if ns >= 1e3:
        return f"{ns / 1e3:.2f}us"
    return f"{ns:.0f}ns"


_SIZE_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")


def size(n: float) -> str:
    """Binary units up to PiB (an allocation that fails may ask for a petabyte: '1.0PiB', not '1048576.0GiB')."""
    for unit in _SIZE_UNITS[:-1]:
        if abs(n) < 1024:
            return f"{n:.0f}{unit}" if unit == "B" else f"{n:.1f}{unit}"
        n /= 1024
    return f"{n:.1f}{_SIZE_UNITS[-1]}"


def si(value: float, unit: str) -> str:
    """1.2e12, 'FLOP/s' -> '1.2 TFLOP/s' (decimal prefixes, three significant digits)."""
    for factor, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= factor:
            return f"{value / factor:.3g} {prefix}{unit}"
    return f"{value:.3g} {unit}"


def count(value: float) -> str:
    """A count per step: a whole number as one ("48"), else with one decimal ("5.2")."""
    return f"{value:.0f}" if abs(value - round(value)) < 0.05 else f"{value:.1f}"
