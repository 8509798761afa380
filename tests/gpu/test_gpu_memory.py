"""On the GPU machine: the memory findings on real CUDA runs (issue 39): an out-of-memory error's post-mortem
with the caching allocator's state and snapshot, growth, fragmentation and their controls.

python -m pytest -m gpu tests/gpu/test_gpu_memory.py
"""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from tenprof.analyses.findings import find_all
from tenprof.cli.main import main
from tenprof.renderers.finding_text import rendered
from tenprof.store.profile import load_profile
from tests.helpers import line_of

ROOT = Path(__file__).resolve().parents[2]
FINDINGS = ROOT / "examples" / "findings"
MEMORY_FINDINGS = ("out-of-memory", "memory-growth", "memory-fragmentation")
pytestmark = pytest.mark.gpu


def _run(out: Path, script: str, *args: str) -> int:
    return main(["run", "--quiet", "-o", str(out), str(FINDINGS / script), *args])


def test_an_out_of_memory_error_is_the_first_finding_and_names_the_list(tmp_path: Path) -> None:
    assert _run(tmp_path / "p", "keep_outputs.py", "--until-oom") == 1
    profile = load_profile(tmp_path / "p")
    oom = profile.meta.run.out_of_memory
    assert oom is not None and oom.requested_bytes == 128 << 20 and oom.device >= 0
    assert 0 < oom.allocated_bytes <= oom.reserved_bytes <= oom.device_total_bytes
    snapshot = pickle.loads((tmp_path / "p" / "timeline" / "raw" / oom.snapshot).read_bytes())
    assert snapshot["segments"]
    first = rendered(find_all(profile)[0])
    assert first.id == "out-of-memory"
    made = line_of((FINDINGS / "keep_outputs.py").read_text(), "# the step's output")
    assert first.where[0].endswith(f"keep_outputs.py:{made}")
    holder = next(line for line in first.seen if "128.0MiB" in line and "keep_outputs.py" in line)
    assert int(holder.split()[0]) * (128 << 20) >= 0.9 * oom.allocated_bytes  # the list holds the card


@pytest.mark.parametrize(
    ("script", "args", "expected"),
    [
        ("keep_outputs.py", ["--steps", "25"], "memory-growth"),
        ("keep_outputs.py", ["--steps", "25", "--fixed"], None),
        ("loss_graph.py", ["--steps", "25"], "memory-growth"),
        ("loss_graph.py", ["--steps", "25", "--fixed"], None),
        ("eval_outputs.py", ["--steps", "25"], "memory-growth"),
        ("eval_outputs.py", ["--steps", "25", "--fixed"], None),
        ("growing_sizes.py", ["--steps", "10"], "memory-fragmentation"),
        ("growing_sizes.py", ["--steps", "10", "--fixed"], None),
        ("checkpointing.py", ["--steps", "10"], None),
        ("checkpointing.py", ["--steps", "10", "--fixed"], None),
    ],
)
def test_each_case_gives_its_memory_finding_and_its_control_none(
    tmp_path: Path, script: str, args: list[str], expected: str | None
) -> None:
    assert _run(tmp_path / "p", script, *args) == 0
    found = [f.id for f in find_all(load_profile(tmp_path / "p")) if f.id in MEMORY_FINDINGS]
    assert found == ([expected] if expected else [])


def test_an_out_of_memory_error_in_the_first_step(tmp_path: Path) -> None:
    assert _run(tmp_path / "p", "oom_first_step.py") == 1
    first = rendered(find_all(load_profile(tmp_path / "p"))[0])
    assert first.id == "out-of-memory" and "more memory than the card has" in first.fix
