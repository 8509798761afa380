"""Values in a finding's text travel as numbers (core.quantities): written back exactly as the units
module writes them by default, or as a renderer chooses."""

from __future__ import annotations

import math

import pytest

from tenprof.core import quantities as q
from tenprof.core.units import duration, size


@pytest.mark.parametrize("value", [0.0, 1.0, 999.5, 1234567.0, 2.5e9, 123456789.123, math.inf])
def test_a_quantity_reads_back_as_the_number_it_was(value: float) -> None:
    text = f"took {q.duration(value)} of {q.size(value)}"
    assert q.quantities(text) == [("duration", value), ("size", value)]
    assert q.format_quantities(text) == f"took {duration(value)} of {size(value)}"


def test_a_renderer_chooses_its_own_format() -> None:
    text = f"GPU idle {q.duration(2_500_000)} in {q.count(3)} gaps"
    formats = {**q.DEFAULT_FORMATS, "duration": lambda ns: f"{ns / 1e6:g} ms"}
    assert q.format_quantities(text, formats) == "GPU idle 2.5 ms in 3 gaps"


def test_brackets_in_names_are_left_alone_and_unknown_kinds_refused() -> None:
    name = "void at::native::vectorized_elementwise_kernel<8, {lambda()#1}>"
    assert q.format_quantities(f"{name} {q.duration(10)}") == f"{name} 10ns"
    with pytest.raises(ValueError):
        q.quantity(1.0, "furlongs")


def test_sizes_go_up_to_pebibytes() -> None:
    """A failed allocation can ask for a petabyte: said in PiB, not as a million GiB."""
    assert [size(n) for n in (512, 3 << 20, 2000 << 30, 1 << 50, -(3 << 40))] == [
        "512B",
        "3.0MiB",
        "2.0TiB",
        "1.0PiB",
        "-3.0TiB",
    ]
