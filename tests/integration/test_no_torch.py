"""Analyses and renderers must run where torch cannot be imported (a laptop reading a GPU profile)."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import DATA

SCRIPT = f"""
import sys
sys.modules["torch"] = None  # any `import torch` now raises ImportError
from tenprof.cli.main import main
profile = {str(DATA / "gpt2")!r}
assert main(["report", profile, "--limit", "3"]) == 0
assert main(["report", profile, "--json"]) == 0
assert main(["view", profile, "--depth", "4"]) == 0
assert main(["view", profile, "--flat", "--limit", "5"]) == 0
assert main(["export", profile, "--format", "hatchet", "-o", "-"]) == 0
assert "torch" not in [m for m in sys.modules if sys.modules[m] is not None]
print("NO-TORCH-OK")
"""


def test_reports_run_without_torch() -> None:
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "NO-TORCH-OK" in done.stdout
