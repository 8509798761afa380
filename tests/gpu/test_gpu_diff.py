"""On the GPU machine: `tenprof diff` on two runs recorded here, float32 GEMMs without tensor cores and then
with TF32 (examples/findings/fp32_gemm.py, copied so that it can be edited): the matmul line is the top
row, the step change is beyond noise and split by GPU time, the finding is gone, and after the first
run's copy of the script is edited in place (a line added above the matmul), its line still matches.

python -m pytest -m gpu tests/gpu
"""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest

from tenprof.cli.main import main

pytestmark = pytest.mark.gpu

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "findings"


def _record(tmp_path: Path, name: str, *extra: str) -> tuple[Path, Path]:
    folder = tmp_path / name
    folder.mkdir()
    for file in ("fp32_gemm.py", "_common.py"):
        shutil.copy(EXAMPLES / file, folder / file)
    out = folder / "prof"
    assert main(["run", "--quiet", "-o", str(out), str(folder / "fp32_gemm.py"), "--steps", "8", *extra]) == 0
    return folder / "fp32_gemm.py", out


def _diff(before: Path, after: Path, capsys: pytest.CaptureFixture[str]) -> dict:  # type: ignore[type-arg]
    capsys.readouterr()
    assert main(["diff", str(before), str(after), "--json"]) == 0
    return orjson.loads(capsys.readouterr().out)  # type: ignore[no-any-return]


def test_fp32_to_tf32_is_found_at_the_matmul_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script, before = _record(tmp_path, "fp32")
    _, after = _record(tmp_path, "tf32", "--fixed")
    data = _diff(before, after, capsys)
    line = next(i + 1 for i, t in enumerate(script.read_text().splitlines()) if "(x @ w @ w).relu_()" in t)
    top = data["lines"][0]
    assert top["what"].startswith(f"{script}:{line}"), top
    assert data["step"]["beyond_noise"] and data["step"]["after_ns"] < 0.5 * data["step"]["before_ns"]
    assert data["basis"] == "GPU" and abs(data["remainder_ns"]) < 0.1 * abs(data["step"]["delta_ns"])
    assert any(t.startswith("gemm-without-tensor-cores:") for t in data["vanished"])
    # the first run's script edited in place: two lines above the matmul; it still matches by its text
    source = script.read_text().splitlines()
    source.insert(line - 3, "# an edit after the run\n# that moves the matmul down")
    script.write_text("\n".join(source) + "\n")
    assert _diff(before, after, capsys)["lines"][0]["what"] == top["what"]
