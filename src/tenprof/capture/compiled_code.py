"""torch.compile's generated code, kept with the timeline pass so compiled kernels can be attributed.

In the profiled process, with `tenprof run --compiled-lines`: `enable_origin_comments()` turns on
Inductor's `comment_origin`, which writes into each generated Triton kernel the aten ops it computes and
the user's source line of each (the FX node's stack trace). It changes what each kernel computes in no
way, but it changes the program: Inductor merges kernels of identical source, and kernels of different
lines no longer are (compiled GPT-2 small: 440 distinct kernels instead of 45), so the host launches ten
times as many kernel objects, and spent 60-70% longer in Inductor's launch path per launch (H100, torch
2.11, 2026-12-08, benchmarks/step_calls.py). That is why it is an option. It does so when the script
imports Inductor's config (torch.compile does, before generating code): importing it for a script that
never compiles would cost that script about a second. `dump_compiled_code(raw_dir)` copies
the source of every wrapper module Inductor loaded (they hold each kernel's source, its metadata comment
"Original ATen: [...]" and its `# kernel path:`; the kernel's source string is the text of the file
Triton compiles it from, so the stalls report can quote a hot line) into `raw/compiled_code.json.gz`
(rows `{"path", "source"}`), read through tenprof.store.compiled_code. Every pass's run dumps the code,
and turns the comments on where asked (in every pass alike, so that each compiles the same kernels under
the same names); both do nothing when torch.compile was not used.
"""

from __future__ import annotations

import gzip
import sys
from pathlib import Path
from types import ModuleType

import orjson

from tenprof.capture.after_import import when_imported
from tenprof.core.rawfiles import COMPILED_CODE_FILE

INDUCTOR_CONFIG = "torch._inductor.config"


def enable_origin_comments() -> None:
    when_imported(INDUCTOR_CONFIG, _comment_origins)


def _comment_origins(config: ModuleType) -> None:
    try:
        config.comment_origin = True  # type: ignore[attr-defined]
    except Exception:  # a torch whose Inductor has no such setting: nothing to annotate
        pass


def dump_compiled_code(raw_dir: Path) -> int:
    """The generated wrapper modules' sources; returns how many were written."""
    codecache = sys.modules.get("torch._inductor.codecache")
    if codecache is None:  # torch.compile never ran
        return 0
    modules = getattr(getattr(codecache, "PyCodeCache", None), "modules", [])
    rows = []
    for module in list(modules.values() if isinstance(modules, dict) else modules):
        path = getattr(module, "__file__", None)
        if not path:
            continue
        try:
            source = Path(path).read_text(errors="replace")
        except OSError:
            continue
        if "async_compile" in source:  # a wrapper (output code), not a lone kernel module
            rows.append({"path": str(path), "source": source})
    if rows:
        (raw_dir / COMPILED_CODE_FILE).write_bytes(gzip.compress(orjson.dumps(rows), compresslevel=6))
    return len(rows)
