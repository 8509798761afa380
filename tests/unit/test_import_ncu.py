"""`tenprof import-ncu` through the real reader code, with a stand-in for Nsight Compute's `ncu_report`
module (the module itself needs Nsight Compute or `pip install ncu-report`; the reader's use of it was
exercised on the GPU machine by the counters and stalls passes)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tenprof.analyses.kernels.counters import operators_report
from tenprof.analyses.kernels.stalls import kernel_stalls
from tenprof.cli.main import main
from tenprof.store.profile import load_profile
from tests.unit.fake_ncu import BASE, fake_module


def test_import_ncu_builds_counters_and_stalls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
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
    # The report measured no DRAM bytes, FLOPs or instructions, and has no timeline: those are missing,
    # not zero, in the JSON and in the text table.
    a = operators.operators[0].aggregated
    assert a.dram_bytes is None and a.flops is None and a.instructions is None and a.arithmetic_intensity is None
    assert operators.operators[0].kernels[0].time_ns is None and a.time_ns == 80_000
    dumped = operators.model_dump()["operators"][0]
    assert dumped["aggregated"]["dram_bytes"] is None and dumped["kernels"][0]["time_ns"] is None
    capsys.readouterr()
    assert main(["report", str(out)]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if "gather_kernel" in line)
    assert "0B" not in row and " - " in row
    (stalls,) = kernel_stalls(profile)
    top = stalls.hot[0]
    assert top.pc == BASE and top.text.startswith("LDG") and top.shifted_in == 30.0
    assert top.source == "/tmp/kernel.py:10"
    assert stalls.samples == 35.0


def test_import_ncu_copies_the_source_lines_into_the_profile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The kernel's source file exists where the report is imported, not where the profile is read."""
    import types
    from typing import Any

    from tests.unit.fake_ncu import SASS, Action

    kernel = tmp_path / "kernel.py"
    kernel.write_text("".join(f"x{n} = tl.load(p + {n})\n" for n in range(1, 40)))

    def source_info(self: Action, pc: int) -> Any:
        if pc not in SASS:
            return None
        return types.SimpleNamespace(file_name=lambda: str(kernel), line=lambda: 10 + (pc - BASE) // 16)

    monkeypatch.setattr(Action, "source_info", source_info)
    monkeypatch.setitem(sys.modules, "ncu_report", fake_module())
    report = tmp_path / "mine.ncu-rep"
    report.write_bytes(b"stand-in")
    out = tmp_path / "prof"
    assert main(["import-ncu", str(report), "-o", str(out), "--quiet"]) == 0
    kernel.unlink()
    profile = load_profile(out)
    assert profile.meta.passes["stalls"].rows["source_lines"] == len(SASS)
    (stalls,) = kernel_stalls(profile)
    assert stalls.hot[0].source == f"{kernel}:10" and stalls.hot[0].source_text == "x10 = tl.load(p + 10)"
