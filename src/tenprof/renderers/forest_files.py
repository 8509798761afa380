"""The files `tenprof run` leaves for the tensors pass: forest.txt, forest.dot, and forest.svg when
graphviz is installed (the SVG is skipped otherwise, never an error)."""

from __future__ import annotations

from pathlib import Path

from tenprof.analyses.tensors.tensor_forest import Forest
from tenprof.renderers.forest_dot import forest_dot, write_dot_and_svg
from tenprof.renderers.forest_text import forest_text
from tenprof.store.profile import Profile
from tenprof.store.schema import Pass


def pass_notes(profile: Profile) -> list[str]:
    status = profile.meta.passes.get(Pass.TENSORS)
    return [status.reason] if status is not None and status.reason else []


def write_forest(profile: Profile, directory: Path, metric: str = "bytes", limit: int = 40) -> list[Path]:
    forest = Forest(profile)
    text = directory / "forest.txt"
    text.write_text(forest_text(forest, metric, limit, pass_notes(profile)))
    return [text, *write_dot_and_svg(forest_dot(forest, metric, limit), directory, "forest")]
