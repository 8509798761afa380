"""The capture's child process (tenprof.capture.child, the script's own process under `tenprof run`) does
not import pyarrow: the capture writes raw files and never a table, and pyarrow's import was 0.15 s of each
run's start (it came in through store.schema for the `Pass` names, now tenprof.core.passes)."""

from __future__ import annotations

import subprocess
import sys


def test_the_child_module_loads_without_pyarrow() -> None:
    code = "import sys, tenprof.capture.child; print(','.join(m for m in ('pyarrow', 'duckdb') if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == ""
