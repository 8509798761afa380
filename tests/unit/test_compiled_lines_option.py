"""`tenprof run --compiled-lines`: Inductor's origin comments only when asked. Left on, they change the program
torch.compile makes (identical kernels of different source lines are no longer merged: compiled GPT-2 launched
440 distinct kernels instead of 45, and its host spent longer per launch, H100, 2026-12-08), so a run without the
option compiles the script's code as a plain run does; the report then says how to get the kernels' lines."""

from __future__ import annotations

import dataclasses
import io
import json
from pathlib import Path

from rich.console import Console

from tenprof.analyses.kernels.compiled import compiled_report
from tenprof.cli.main import main
from tenprof.renderers.compiled_text import render_compiled
from tests.conftest import DATA
from tests.helpers import recording

# what Inductor's config says inside the script, once the script has imported it (as torch.compile does)
SCRIPT = """
import json, sys
import torch._inductor.config as config
json.dump({"comment_origin": config.comment_origin}, open(sys.argv[1], "w"))
"""


def _comment_origin_in_the_script(tmp_path: Path, *options: str) -> tuple[bool, dict[str, str]]:
    script = tmp_path / "asks.py"
    script.write_text(SCRIPT)
    seen = tmp_path / f"seen{len(options)}.json"
    out = tmp_path / f"prof{len(options)}"
    assert main(["run", "--quiet", *options, "-o", str(out), str(script), str(seen)]) == 0
    meta = json.loads((out / "meta.json").read_text())
    return bool(json.loads(seen.read_text())["comment_origin"]), meta["options"]


def test_the_origin_comments_are_on_only_with_the_option(tmp_path: Path) -> None:
    on, options = _comment_origin_in_the_script(tmp_path)
    assert not on and options["compiled_lines"] == "false"
    on, options = _comment_origin_in_the_script(tmp_path, "--compiled-lines")
    assert on and options["compiled_lines"] == "true"


def test_a_run_without_the_kernels_lines_is_told_how_to_get_them() -> None:
    report = compiled_report(recording(DATA / "compiled" / "mlp_default"))
    assert report is not None and report.origin_comments  # recorded before the option: comments were always on
    text = io.StringIO()
    # the same report as a run without the option would give: every generated kernel without its lines
    without = dataclasses.replace(report, origin_comments=False, with_lines_ns=report.compiled_ns // 2)
    render_compiled(without, Console(file=text, width=300), 5)
    assert "--compiled-lines" in text.getvalue()
    asked = io.StringIO()
    render_compiled(dataclasses.replace(without, origin_comments=True), Console(file=asked, width=300), 5)
    assert "--compiled-lines" not in asked.getvalue()
