"""idle-gaps advises on what is left once the findings that name a cause took their part of the host's gaps
(findings.causes, `Finding.refix`). A TensorRT inference loop with a DataLoader (a public trace, RTX 3060): half of
the host's time in the gaps was the DataLoader, which data-loading took with its own advice, and idle-gaps, left
with the Python and torch ops between the engine's calls, still said "prepare the next batch in a DataLoader with
workers". The control: with no DataLoader, the Python advice is the same."""

from __future__ import annotations

from pathlib import Path

from tenprof.analyses.findings import find_all
from tenprof.store.profile import Profile
from tests.helpers import imported_events, launch, profiler_step

STEPS = 8
LOADER = "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"
PYTHON_ADVICE = "Move the Python work between GPU ops off the critical path"


def _loop(tmp_path: Path, loader_us: float) -> Profile:
    """STEPS marked 10 ms steps: a 4 ms kernel, then, with the GPU idle, `loader_us` in the DataLoader's
    __next__ (waiting for its workers) and the rest of the host's 6 ms in Python outside any op."""
    events: list[dict[str, object]] = []
    for step in range(STEPS):
        base = 10_000.0 * step
        events.append(profiler_step(step, base, 9_990.0))
        events += launch("aten::mm", base + 10, 30.0, 8.0, 4_000.0, step + 1)
        if loader_us:
            events.append({"ph": "X", "cat": "user_annotation", "name": LOADER, "pid": 1, "tid": 1,
                           "ts": base + 4_100, "dur": loader_us})  # fmt: skip
    return imported_events(tmp_path, events)


def test_what_data_loading_took_is_left_out_of_idle_gaps_advice(tmp_path: Path) -> None:
    found = {f.id: f for f in find_all(_loop(tmp_path, loader_us=2_500.0))}
    assert "data-loading" in found and "workers" in found["data-loading"].fix
    idle = found.get("idle-gaps")
    assert idle is not None and idle.fix.startswith(PYTHON_ADVICE) and "DataLoader" not in idle.fix
    # what the host did in the gaps is still told whole
    assert any("in the DataLoader" in line for line in idle.seen)


def test_without_a_dataloader_the_gaps_get_the_python_advice(tmp_path: Path) -> None:
    found = {f.id: f for f in find_all(_loop(tmp_path, loader_us=0.0))}
    assert "data-loading" not in found and found["idle-gaps"].fix.startswith(PYTHON_ADVICE)


def test_the_sampled_lines_advice_gives_way_where_a_finding_took_a_part() -> None:
    # tenprof's own runs advise from the host sampler's lines, drawn from all of the host's gaps (a loader's
    # lines among them): where data-loading took the DataLoader's part, the parts' advice for the rest is drawn
    from tenprof.analyses.findings.idle import _PART_FIXES, HOST, _Advice, _PartsAdvice

    parts = _PartsAdvice(
        (("data_loading", 600), ("python", 400), ("dispatch", 0)),
        (("data_loading", _PART_FIXES["data_loading"]), ("python", _PART_FIXES["python"])),
    )
    advice = _Advice("the sampled lines' advice", parts)
    assert advice.fix(frozenset(), HOST) == "the sampled lines' advice"
    assert advice.fix(frozenset({"data_loading"}), HOST) == _PART_FIXES["python"]


def test_the_advice_is_kept_as_a_value(tmp_path: Path) -> None:
    # compared and pickled with its finding (a closure over the analysis was neither)
    import copy
    import pickle

    found = {f.id: f for f in find_all(_loop(tmp_path, loader_us=0.0))}["idle-gaps"]
    again = pickle.loads(pickle.dumps(found))
    assert again == found and copy.deepcopy(found) == found
    again.refix(frozenset({"python"}), "host not launching work")
    assert again.fix != found.fix  # the Python part taken: no part left to advise on, the general advice
