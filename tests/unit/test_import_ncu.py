"""`tenprof import-ncu` through the real reader code, with a stand-in for Nsight Compute's `ncu_report`
module (the module itself needs Nsight Compute or `pip install ncu-report`; the reader's use of it was
exercised on the GPU machine by the counters and stalls passes)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tenprof.analyses.counters import operators_report
from tenprof.analyses.stalls import kernel_stalls
from tenprof.cli.main import main
from tenprof.store.profile import load_profile
from tests.unit.fake_ncu import BASE, fake_module


def test_import_ncu_builds_counters_and_stalls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ncu_report", fake_module())
    report = tmp_path / "mine.ncu-rep"
    report.write_bytes(b"stand-in")
    out = tmp_path / "prof"
    assert main(["import-ncu", str(report), "-o", str(out), "--quiet"]) == 0
    profile = load_profile(out)
    assert profile.meta.passes["counters"].state == "complete"
    assert profile.meta.passes["stalls"].state == "complete"
    operators = operators_report(profile)
    assert operators is not None and operators.operators[0].op == "(no op) gather_kernel"
    assert operators.operators[0].aggregated.verdict == "memory-bound"
    (stalls,) = kernel_stalls(profile)
    top = stalls.hot[0]
    assert top.pc == BASE and top.text.startswith("LDG") and top.shifted_in == 30.0
    assert top.source == "/tmp/kernel.py:10"
    assert stalls.samples == 35.0
