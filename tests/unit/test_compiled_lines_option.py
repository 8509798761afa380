"""`tenprof run --compiled-lines`: Inductor's origin comments only when asked. Left on, they change the program
torch.compile makes (identical kernels of different source lines are no longer merged: compiled GPT-2 launched
440 distinct kernels instead of 45, and its host spent longer per launch, H100, 2026-12-08), so a run without the
option compiles the script's code as a plain run does. Each kernel's lines then come from Inductor's provenance
tracking, kept beside the wrapper; where they are missing the report says how to get them."""

from __future__ import annotations

import argparse
import dataclasses
import io
import json
import sys
import types
from pathlib import Path

import pytest
from rich.console import Console

from tenprof.analyses.kernels.compiled import compiled_report
from tenprof.capture.compiled_code import dump_compiled_code, prepare_inductor
from tenprof.cli.main import main
from tenprof.cli.run_command import RunCommand
from tenprof.core.rawfiles import COMPILED_CODE_FILE
from tenprof.renderers.compiled_text import render_compiled
from tenprof.store.compiled_code import read_compiled_code
from tests.conftest import DATA
from tests.helpers import recording

# what Inductor's config says inside the script, once the script has imported it (as torch.compile does)
SCRIPT = """
import json, sys
import torch._inductor.config as config
import torch.compiler.config as compiler_config
json.dump({"comment_origin": config.comment_origin, "provenance": config.trace.provenance_tracking_level,
           "tag": compiler_config.cache_key_tag}, open(sys.argv[1], "w"))
"""


def test_a_run_leaves_the_origin_comments_off_and_tracks_provenance(tmp_path: Path) -> None:
    script = tmp_path / "asks.py"
    script.write_text(SCRIPT)
    seen, out = tmp_path / "seen.json", tmp_path / "prof"
    assert main(["run", "--quiet", "-o", str(out), str(script), str(seen)]) == 0
    # and the compiles keyed apart from a plain run's: torch 2.11 served a plain run's cached graph, without
    # provenance, and the kernels lost their lines
    assert json.loads(seen.read_text()) == {"comment_origin": False, "provenance": 1, "tag": "tenprof-provenance"}
    assert json.loads((out / "meta.json").read_text())["options"]["compiled_lines"] == "false"


def test_the_option_turns_the_origin_comments_on(monkeypatch: pytest.MonkeyPatch) -> None:
    # what the child does with the option (in this process, with Inductor's config put back after)
    import torch._inductor.config as config

    monkeypatch.setattr(config, "comment_origin", False)
    monkeypatch.setattr(config.trace, "provenance_tracking_level", 0)
    import torch.compiler.config as compiler_config

    monkeypatch.setattr(compiler_config, "cache_key_tag", "mine")  # the user's own tag is kept
    prepare_inductor(compiled_lines=False)
    assert (config.comment_origin, config.trace.provenance_tracking_level) == (False, 1)
    assert compiler_config.cache_key_tag == "mine:tenprof-provenance"
    prepare_inductor(compiled_lines=False)  # once only
    assert compiler_config.cache_key_tag == "mine:tenprof-provenance"
    prepare_inductor(compiled_lines=True)
    assert config.comment_origin
    args = argparse.ArgumentParser()
    RunCommand().prepare_parser(args)
    assert args.parse_args(["--compiled-lines", "x.py"]).compiled_lines
    assert not args.parse_args(["x.py"]).compiled_lines


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


def test_the_kept_code_carries_each_kernels_stack_traces(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """dump_compiled_code beside a compiled graph that provenance tracking annotated: its wrapper's row gets
    kernel -> frames of each use (stand-ins for Inductor's code cache and compiled graph)."""
    source = "async_compile = AsyncCompile()\ntriton_poi_fused_gelu_0 = async_compile.triton('x', '')\n"
    wrapper = tmp_path / "cwrapper.py"
    wrapper.write_text(source)

    class CompiledFxGraph:  # Inductor's output code, as much of it as the dump reads
        def __init__(self) -> None:
            self.source_code = source
            trace = '  File "/home/u/train.py", line 40, in main\n  File "/home/u/model.py", line 10, in forward\n'
            self.inductor_provenance_stack_traces_str = json.dumps({"triton_poi_fused_gelu_0:3": [trace]})

    graph = CompiledFxGraph()
    module = types.SimpleNamespace(__file__=str(wrapper))
    codecache = types.SimpleNamespace(PyCodeCache=types.SimpleNamespace(modules={"k": module}))
    monkeypatch.setitem(sys.modules, "torch._inductor.codecache", codecache)
    monkeypatch.setitem(
        sys.modules, "torch._inductor.output_code", types.SimpleNamespace(CompiledFxGraph=CompiledFxGraph)
    )
    assert dump_compiled_code(tmp_path) == 1
    (row,) = read_compiled_code(tmp_path / COMPILED_CODE_FILE)
    # kept by debug handle, as Inductor keys them: the importer keeps only the handles the wrapper names
    assert row["stack_traces"] == {"triton_poi_fused_gelu_0:3": [["/home/u/train.py:40", "/home/u/model.py:10"]]}
    del graph
