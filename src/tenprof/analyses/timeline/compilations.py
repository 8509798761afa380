"""torch.compile's compilations of a frame, as the recording names them: one `entire_frame_compile` op each
(torch 2.11 records it, and tenprof's capture), else, where a build records only the timed phase, one
`_compile.compile_inner (dynamo_timed)` user scope each (a public trace of an A10G whose 959 ms of compiling
no finding saw). The same compilation is never counted twice: the scopes are read only where no op names it.
Torch-free."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tenprof.core.intervals import I64Array
from tenprof.store.profile import Profile

FRAME_COMPILE_OP = "entire_frame_compile"
FRAME_COMPILE_SCOPE = "_compile.compile_inner (dynamo_timed)"


@dataclass(frozen=True)
class Compilations:
    start: I64Array
    end: I64Array
    ops: I64Array  # each one's op (its lines), -1 where a scope names it


def frame_compilations(profile: Profile) -> Compilations:
    ops = np.flatnonzero(profile.strings("ops", "name").equals(FRAME_COMPILE_OP)).astype(np.int64)
    if len(ops):
        return Compilations(profile.column("ops", "start_ns")[ops], profile.column("ops", "end_ns")[ops], ops)
    scopes = profile.strings("scopes", "name").equals(FRAME_COMPILE_SCOPE)
    start, end = profile.column("scopes", "start_ns")[scopes], profile.column("scopes", "end_ns")[scopes]
    return Compilations(start.astype(np.int64), end.astype(np.int64), np.full(len(start), -1, dtype=np.int64))
