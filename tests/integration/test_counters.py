"""The counters pass without ncu or its report reader, through a real run: one clear line each (the rest is in
tests/unit/test_counters.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tenprof.cli.main import main


def test_missing_ncu_and_missing_reader_are_clear(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "s.py"
    script.write_text("print('hi')\n")
    assert main(["run", "--passes", "timeline,counters", "--ncu", str(tmp_path / "nope"), str(script)]) == 2
    assert "--ncu" in capsys.readouterr().err
    report = tmp_path / "r.ncu-rep"
    report.write_bytes(b"not a report")
    code = main(["import-ncu", str(report), "-o", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and "pip install ncu-report" in err
