"""`tenprof export --format perfetto --window START:END --max-events N` (renderers/perfetto_cut.py) on
the GPT-2 recording (tests/data/gpt2, H200): checked against the whole trace exported alongside."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from tenprof.cli.main import main
from tests.conftest import DATA

# Its tests share module fixtures that take seconds to make: one test worker makes them and runs them all
pytestmark = pytest.mark.xdist_group("perfetto_cut")


@pytest.fixture(scope="module")
def whole(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    out = tmp_path_factory.mktemp("whole") / "trace.json"
    assert main(["export", str(DATA / "gpt2"), "-o", str(out)]) == 0
    return orjson.loads(out.read_bytes())["traceEvents"]  # type: ignore[no-any-return]


def _export(tmp_path: Path, *extra: str) -> list[dict[str, Any]]:
    out = tmp_path / "cut.json"
    assert main(["export", str(DATA / "gpt2"), "-o", str(out), "--force", *extra]) == 0
    return orjson.loads(out.read_bytes())["traceEvents"]  # type: ignore[no-any-return]


def _slices(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in events if e["ph"] == "X"]


def _memory(events: list[dict[str, Any]]) -> list[float]:
    return [e["args"]["MiB"] for e in events if e["ph"] == "C" and "memory" in e["name"]]


def test_the_longest_slices_are_kept_and_the_rest_summarised(whole: list[dict[str, Any]], tmp_path: Path) -> None:
    cut = _export(tmp_path, "--max-events", "500")
    kept = _slices(cut)
    assert len(kept) == 500 < len(_slices(whole))
    kept_keys = {(e["pid"], e["tid"], e["ts"], e["name"]) for e in kept}
    dropped = [e for e in _slices(whole) if (e["pid"], e["tid"], e["ts"], e["name"]) not in kept_keys]
    assert min(e["dur"] for e in kept) >= max(e["dur"] for e in dropped)
    # what was left out is counted on the summary tracks, slice for slice
    summary = [e for e in cut if e["ph"] == "C" and e["name"] == "tenprof: slices left out"]
    assert sum(e["args"]["count"] for e in summary) == len(dropped)
    # the memory counters are thinned, but their peak is kept; track names all kept
    assert len(_memory(cut)) <= 125 < len(_memory(whole)) and max(_memory(cut)) == max(_memory(whole))
    assert [e for e in cut if e["ph"] == "M"] == [e for e in whole if e["ph"] == "M"]


def test_a_window_keeps_what_overlaps_it(whole: list[dict[str, Any]], tmp_path: Path) -> None:
    kernels = [e for e in _slices(whole) if e.get("cat") == "kernel"]
    lo, hi = kernels[len(kernels) // 2]["ts"], kernels[len(kernels) // 2 + 200]["ts"]  # 200 kernels' worth
    cut = _export(tmp_path, "--window", f"{lo / 1000}:{hi / 1000}")
    expected = [e for e in _slices(whole) if e["ts"] + e.get("dur", 0) >= lo and e["ts"] <= hi]
    assert _slices(cut) == expected and 200 <= len(expected) < len(_slices(whole)) // 4
    assert all(lo <= e["ts"] <= hi for e in cut if e["ph"] == "C")


def test_bad_cuts_are_refused_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = ["export", str(DATA / "gpt2"), "-o", str(tmp_path / "t.json")]
    for extra in (["--window", "300:120"], ["--window", "soon"], ["--format", "csv", "--max-events", "10"]):
        assert main([*base, *extra]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and ("--window" in err or "--max-events" in err), err
    assert not (tmp_path / "t.json").exists()
