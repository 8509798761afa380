"""Core: torch-free helpers every layer may import (interval arithmetic, units, the names capture and
import agree on: raw files, NVTX ranges, ncu metrics, kernel names; and the SASS parser and blame shift,
which the stalls import applies once, as a derived fact of the samples, so reports only read it).

Contract: a core module imports nothing from tenprof except other core modules and `tenprof.errors`,
and never torch; it holds no state and does no I/O of profiles. It sits below store, importers,
analyses, renderers and capture so that none of them reaches sideways or up for a shared helper
(tests/unit/test_layers.py enforces this).
"""
