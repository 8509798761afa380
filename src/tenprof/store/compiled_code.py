"""torch.compile's generated wrappers as a profile keeps them: `<pass>/raw/compiled_code.json.gz`, rows
`{"path", "source"}` (and `"stack_traces"`: debug handle "kernel:N" -> each use's frames, where Inductor's
provenance tracking kept them) written by tenprof.capture.compiled_code in every pass's run.

These files are part of the profile directory, so reading them keeps a report a pure function of the
profile (unlike reading Inductor's cache on this machine). The importers read them to build
`compiled_kernels`; the reports read them for the text of generated kernels and, for profiles recorded
before `compiled_extern_calls` existed, the wrappers' library calls; the generated-code export writes them out.
"""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path
from typing import Any

import orjson

from tenprof.core.rawfiles import COMPILED_CODE_FILE
from tenprof.errors import TraceFormatError
from tenprof.store.schema import Pass

# The ncu run's wrappers come first: its kernels are the ones the counters and stalls reports name,
# should another run have generated different code.
_PASS_ORDER: dict[str, int] = {Pass.COUNTERS: 0, Pass.STALLS: 1, Pass.TIMELINE: 2}


def kept_code_files(profile_dir: Path) -> list[Path]:
    """Every pass's kept wrappers, those of the ncu run (counters, else stalls) first."""
    found = profile_dir.glob(f"*/raw/{COMPILED_CODE_FILE}")
    return sorted(found, key=lambda p: (_PASS_ORDER.get(p.parent.parent.name, 3), p.parent.parent.name))


def read_compiled_code(path: Path, strict: bool = False) -> list[dict[str, Any]]:
    """The kept wrappers; none when the file is absent, or damaged unless `strict` (TraceFormatError):
    reports then fall back to what the trace says, as for a run that kept no code."""
    if not path.exists():
        return []
    try:
        data = orjson.loads(gzip.decompress(path.read_bytes()))
    except (OSError, EOFError, zlib.error, orjson.JSONDecodeError) as exc:
        if strict:
            raise TraceFormatError(f"{path.name} is damaged ({exc.__class__.__name__})") from exc
        return []
    return data if isinstance(data, list) else []
