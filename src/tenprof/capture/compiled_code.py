"""torch.compile's generated code, kept with the timeline pass so compiled kernels can be attributed.

In the profiled process, with `tenprof run --compiled-lines`: `enable_origin_comments()` turns on
Inductor's `comment_origin`, which writes into each generated Triton kernel the aten ops it computes and
the user's source line of each (the FX node's stack trace). It changes what each kernel computes in no
way, but it changes the program: Inductor merges kernels of identical source, and kernels of different
lines no longer are (compiled GPT-2 small: 440 distinct kernels instead of 45), so the host launches ten
times as many kernel objects, and spent 60-70% longer in Inductor's launch path per launch (H100, torch
2.11, 2026-12-08, benchmarks/step_calls.py). That is why it is an option. Without it,
`enable_kernel_provenance()` (every pass) has Inductor keep each kernel's stack traces in the compiled
graph instead, which changes comments in the wrapper only. Both are set when the script imports
Inductor's config (torch.compile does, before generating code): importing it for a script that never
compiles would cost that script about a second, and they are set in every pass alike, so that each
compiles the same kernels under the same names.

`dump_compiled_code(raw_dir)` copies the source of every wrapper module Inductor loaded (they hold each
kernel's source, its metadata comment "Original ATen: [...]" and its `# kernel path:`; the kernel's source
string is the text of the file Triton compiles it from, so the stalls report can quote a hot line) into
`raw/compiled_code.json.gz`, rows `{"path", "source"}` and `"stack_traces"` (debug handle "kernel:N" -> each
use's frames) where provenance tracking kept them, read through tenprof.store.compiled_code. Every pass's run
dumps the code; nothing is done when torch.compile was not used.
"""

from __future__ import annotations

import gc
import gzip
import sys
from pathlib import Path
from types import ModuleType

import orjson

from tenprof.capture.after_import import when_imported
from tenprof.core.inductor import STACK_FRAME
from tenprof.core.rawfiles import COMPILED_CODE_FILE

INDUCTOR_CONFIG = "torch._inductor.config"


def prepare_inductor(compiled_lines: bool) -> None:
    """What a pass's run asks of Inductor: provenance tracking always, the origin comments with
    `--compiled-lines`."""
    enable_kernel_provenance()
    if compiled_lines:
        enable_origin_comments()


def enable_origin_comments() -> None:
    when_imported(INDUCTOR_CONFIG, _comment_origins)


def _comment_origins(config: ModuleType) -> None:
    try:
        config.comment_origin = True  # type: ignore[attr-defined]
    except Exception:  # a torch whose Inductor has no such setting: nothing to annotate
        pass


def enable_kernel_provenance() -> None:
    """Inductor's provenance tracking on (level 1) once the script imports Inductor's config: each compiled
    graph then carries, per generated kernel, the stack traces of the FX nodes it computes. Unlike the origin
    comments it writes nothing into a kernel's source, so kernels are merged as in a plain run (only comments
    in the wrapper differ); it costs compile time, not run time."""
    when_imported(INDUCTOR_CONFIG, _track_provenance)


def _track_provenance(config: ModuleType) -> None:
    try:
        config.trace.provenance_tracking_level = 1
    except Exception:  # a torch whose Inductor has no provenance tracking: lines only with --compiled-lines
        return
    _own_cache_entries()


# What the run adds to torch.compile's cache key tag (`_own_cache_entries`).
CACHE_KEY_TAG = "tenprof-provenance"


def _own_cache_entries() -> None:
    """torch.compile's caches keyed apart from a plain run's. torch 2.11 (the GPU machine's) leaves provenance
    tracking out of the FX graph cache's key (2.13 keys on it), so a graph that a plain run had cached, without
    provenance, was served to the run and its kernels came without their lines: compiled GPT-2 run twice plainly
    before `tenprof run` on an H100 (2026-12-08) kept no stack trace and no provenance handle for any of its 44
    kernels. The tag (added to one the user set) gives the run's compiles cache entries of their own, which
    later runs reuse; the code generated is the same."""
    try:
        from torch.compiler import config as compiler_config

        tag = str(compiler_config.cache_key_tag or "")
        if CACHE_KEY_TAG not in tag.split(":"):
            compiler_config.cache_key_tag = f"{tag}:{CACHE_KEY_TAG}" if tag else CACHE_KEY_TAG
    except Exception:  # a torch without the tag: its caches as they are
        pass


def _kernel_stack_traces() -> dict[str, dict[str, list[list[str]]]]:
    """Per compiled graph's wrapper source: debug handle ("kernel:N") -> the frames ("file:line", outermost
    first) of each stack trace Inductor's provenance tracking kept for it (every place a merged kernel is
    used)."""
    output_code = sys.modules.get("torch._inductor.output_code")
    graph_type = getattr(output_code, "CompiledFxGraph", None)
    if graph_type is None:
        return {}
    found: dict[str, dict[str, list[list[str]]]] = {}
    for obj in gc.get_objects():
        try:
            if type(obj) is not graph_type:
                continue
        except ReferenceError:  # a dead weak proxy among the objects
            continue
        text = getattr(obj, "inductor_provenance_stack_traces_str", None)
        source = getattr(obj, "source_code", None)
        if not text or not isinstance(source, str):
            continue
        try:
            traces = orjson.loads(text)
        except orjson.JSONDecodeError:
            continue
        kernels = found.setdefault(source, {})
        # keyed by debug handle ("triton_poi_fused_add_0:12": the kernel and one of its uses), as Inductor
        # keeps them: a graph's text can also hold other graphs' kernels (a backward compiled lazily adds to
        # what earlier backward graphs left), and the wrapper names its own handles (the importer's filter)
        for handle, stacks in traces.items() if isinstance(traces, dict) else ():
            for stack in stacks if isinstance(stacks, list) else ():
                frames = [f"{file}:{line}" for file, line in STACK_FRAME.findall(str(stack))]
                if frames:
                    kernels.setdefault(str(handle), []).append(frames)
    return found


def dump_compiled_code(raw_dir: Path) -> int:
    """The generated wrapper modules' sources, each with its kernels' stack traces where Inductor's provenance
    tracking kept them (`stack_traces`: debug handle "kernel:N" -> list of frame lists); returns how many were
    written."""
    codecache = sys.modules.get("torch._inductor.codecache")
    if codecache is None:  # torch.compile never ran
        return 0
    modules = getattr(getattr(codecache, "PyCodeCache", None), "modules", [])
    traces = _kernel_stack_traces()
    rows: list[dict[str, object]] = []
    for module in list(modules.values() if isinstance(modules, dict) else modules):
        path = getattr(module, "__file__", None)
        if not path:
            continue
        try:
            source = Path(path).read_text(errors="replace")
        except OSError:
            continue
        if "async_compile" in source:  # a wrapper (output code), not a lone kernel module
            row: dict[str, object] = {"path": str(path), "source": source}
            if source in traces:
                row["stack_traces"] = traces[source]
            rows.append(row)
    if rows:
        (raw_dir / COMPILED_CODE_FILE).write_bytes(gzip.compress(orjson.dumps(rows), compresslevel=6))
    return len(rows)
