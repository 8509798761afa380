"""Files drawn from a finished profile for people to open next to it: the tensor forest (forest.txt,
forest.dot and, with graphviz, forest.svg) when it has a tensors pass, and the tensor stall cost
(tensor_stall_cost.csv, blame.dot, blame.svg) when it has the tensors, stalls and accesses passes.

`tenprof run` writes them once capture is done (capture writes raw files and tables only). They are
views: a failure leaves the tables as they are, is printed, and is noted in the tensors pass's status;
`tenprof export --format forest|stall-cost|blame-dot` makes them again. Like everything tenprof writes
in a profile, they are listed in its marker (so `--force` replaces or removes them next time), and a
file of the same name that tenprof did not write is never replaced.
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
from collections.abc import Callable
from pathlib import Path

from tenprof.store.directory import claim, owned_entries
from tenprof.store.meta import read_meta, write_meta
from tenprof.store.profile import load_profile
from tenprof.store.schema import Pass


def write_drawings(out_dir: Path) -> list[str]:
    """Write what the profile supports; the problems met, one line each. Ctrl-C waits until they are
    written, as it does while a pass's tables are (an interrupted drawing would be a half-written file)."""
    try:
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    except ValueError:  # not the main thread: nothing to hold off
        return _write(out_dir)
    try:
        return _write(out_dir)
    finally:
        signal.signal(signal.SIGINT, previous)


def _write(out_dir: Path) -> list[str]:
    meta = read_meta(out_dir)
    tensors = meta.passes.get(Pass.TENSORS)
    if tensors is None or tensors.state == "failed":
        return []
    problems = [p for p in (_forest(out_dir), write_stall_cost_files(out_dir)) if p]
    if problems:
        tensors.reason = "; ".join(filter(None, [tensors.reason, *problems]))
        write_meta(out_dir, meta)
    return problems


def _forest(out_dir: Path) -> str:
    try:
        from tenprof.renderers.forest_files import write_forest

        profile = load_profile(out_dir)
        return _place(out_dir, lambda folder: write_forest(profile, folder), "forest")
    except Exception as exc:  # the tables are written; the drawings can be made again with `tenprof export`
        return f"the forest files could not be written: {exc.__class__.__name__}: {exc}"


def _place(out_dir: Path, draw: Callable[[Path], list[Path]], what: str) -> str:
    """Draw into a scratch folder of the profile, then move each file into the profile and claim it,
    unless a file of that name is there that tenprof did not write (then that one is left as it is)."""
    scratch = Path(tempfile.mkdtemp(prefix=".drawing-", dir=out_dir))
    try:
        ours = set(owned_entries(out_dir))
        kept: list[str] = []
        for drawn in draw(scratch):
            target = out_dir / drawn.name
            if target.exists() and drawn.name not in ours:
                kept.append(drawn.name)
                continue
            os.replace(drawn, target)
            claim(out_dir, drawn.name)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if kept:
        return (
            f"{', '.join(kept)} in {out_dir} are not tenprof's and were left as they are; "
            f"the {what} drawings can be written elsewhere with tenprof export -o"
        )
    return ""


def write_stall_cost_files(out_dir: Path) -> str:
    """tensor_stall_cost.csv and blame.dot (+ .svg) when the tensors, stalls and accesses passes were
    built; a note on failure."""
    try:
        profile = load_profile(out_dir)
        if not all(profile.has_pass(p) for p in (Pass.TENSORS, Pass.STALLS, Pass.ACCESSES)):
            return ""
        from tenprof.analyses.tensors.access_patterns import load_patterns
        from tenprof.analyses.tensors.tensor_forest import Forest
        from tenprof.analyses.tensors.tensor_stall_cost import tensor_stall_cost
        from tenprof.renderers.stall_cost_files import write_stall_cost

        costs = tensor_stall_cost(profile)
        if costs:
            patterns = load_patterns(profile)
            return _place(
                out_dir, lambda folder: write_stall_cost(costs, Forest(profile), folder, patterns), "tensor stall cost"
            )
    except Exception as exc:  # the tables are written; the files can be made again with `tenprof export`
        return f"the tensor stall cost files could not be written: {exc.__class__.__name__}: {exc}"
    return ""
