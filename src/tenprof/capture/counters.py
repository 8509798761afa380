"""The counters pass, inside the profiled process: mark which ops Nsight Compute should replay.

The script runs under `ncu --nvtx --nvtx-include "tenprof_keep/"`, so ncu profiles only kernels
launched inside an NVTX range named `tenprof_keep`. A `TorchDispatchMode` sees every aten op; the first
time an op *signature* (op, input shapes, dtypes) is seen, the op runs inside `tenprof_keep` and a
range `tp:<signature id>` that names it; later ops with that signature run unmarked and are never
replayed. Their kernels get the representative's metrics when the profile is built (same kernel name,
launch configuration and op). With `keep_all`, every op instance is marked (the baseline that shows
what de-duplication saves).

Raw file written into `raw_dir`: `counters_ops.json.gz` (the signature table and counts).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from types import CodeType
from typing import Any

import orjson
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from tenprof.capture import runtime
from tenprof.capture.counters_names import KEEP_RANGE, OP_RANGE_PREFIX, SCOPE_RANGE_PREFIX
from tenprof.capture.rawfiles import COUNTERS_OPS_FILE

_is_compiling = getattr(getattr(torch, "compiler", None), "is_compiling", lambda: False)


def _describe(value: Any, shapes: list[Any], dtypes: list[str]) -> None:
    if isinstance(value, torch.Tensor):
        shapes.append(list(value.shape))
        dtypes.append(str(value.dtype).removeprefix("torch."))
    elif isinstance(value, (list, tuple)) and value and isinstance(value[0], torch.Tensor):
        for v in value:
            _describe(v, shapes, dtypes)


class CountersRecorder(TorchDispatchMode):  # type: ignore[no-untyped-call]
    def __init__(self, keep_all: bool) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.keep_all = keep_all
        self.signatures: dict[str, int] = {}
        self.rows: list[list[Any]] = []  # signature id, op, shapes, dtypes, first op seq, count
        self.seq = 0
        self.marked = 0

    @classmethod
    def ignore_compile_internals(cls) -> bool:
        return True

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        if _is_compiling():
            return func(*args, **kwargs)
        seq = self.seq
        self.seq += 1
        shapes: list[Any] = []
        dtypes: list[str] = []
        for value in args:
            _describe(value, shapes, dtypes)
        for value in kwargs.values():
            _describe(value, shapes, dtypes)
        name = func._schema.name
        key = json.dumps([name, shapes, dtypes])
        sid = self.signatures.get(key)
        first = sid is None
        if sid is None:
            sid = len(self.rows)
            self.signatures[key] = sid
            self.rows.append([sid, name, shapes, dtypes, seq, 0])
        self.rows[sid][5] += 1
        if not (first or self.keep_all):
            return func(*args, **kwargs)
        self.marked += 1
        nvtx: Any = torch.cuda.nvtx
        nvtx.range_push(KEEP_RANGE)
        nvtx.range_push(f"{OP_RANGE_PREFIX}{sid}")
        try:
            return func(*args, **kwargs)
        finally:
            nvtx.range_pop()
            nvtx.range_pop()


class CountersSession:
    def __init__(
        self, raw_dir: Path, keep_all: bool, replay_scopes: tuple[str, ...] = (), stop_code: CodeType | None = None
    ) -> None:
        self.raw_dir = raw_dir
        self.recorder = CountersRecorder(keep_all)
        self.replay_scopes = set(replay_scopes)
        self.trace_written = False
        self._active = False
        self._scopes_seen: set[str] = set()

    def start(self) -> None:
        if not torch.cuda.is_available():
            raise RuntimeError("the counters pass needs a CUDA device")
        self.recorder.__enter__()  # type: ignore[no-untyped-call]
        self._active = True
        runtime.activate(self)

    def stop(self) -> None:
        runtime.deactivate(self)
        if self._active:
            self._active = False
            runtime.leave_mode(self.recorder)
        torch.cuda.synchronize()
        data = {
            "version": 1,
            "keep_all": self.recorder.keep_all,
            "op_count": self.recorder.seq,
            "marked_ops": self.recorder.marked,
            "signatures": {
                key: [row[i] for row in self.recorder.rows]
                for i, key in enumerate(("signature_id", "op", "shapes", "dtypes", "first_op_seq", "count"))
            },
        }
        (self.raw_dir / COUNTERS_OPS_FILE).write_bytes(gzip.compress(orjson.dumps(data), compresslevel=1))
        self.trace_written = True

    def step(self) -> None:
        return None

    def scope_enter(self, name: str, caller: Any, decorator: bool) -> Any:
        """A scope named in --replay-scopes selects everything it runs for replay (the way to reach kernels
        launched outside aten ops, like a Triton kernel called directly): its first instance, or every
        one with keep_all. Other scopes mark nothing, so de-duplication holds inside them."""
        if name not in self.replay_scopes or not self._active:
            return False
        if name in self._scopes_seen and not self.recorder.keep_all:
            return False
        self._scopes_seen.add(name)
        nvtx: Any = torch.cuda.nvtx
        nvtx.range_push(KEEP_RANGE)
        nvtx.range_push(f"{SCOPE_RANGE_PREFIX}{name}")
        return True

    def scope_exit(self, token: Any) -> None:
        if token:
            nvtx: Any = torch.cuda.nvtx
            nvtx.range_pop()
            nvtx.range_pop()
