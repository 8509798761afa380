"""The counters pass, inside the profiled process: mark which ops Nsight Compute should replay.

The script runs under `ncu --nvtx --nvtx-include "tenprof_keep/"`, so ncu profiles only kernels
launched inside an NVTX range named `tenprof_keep`. A `TorchDispatchMode` sees every aten op; the first
time an op *signature* (op, input shapes, dtypes) is seen, the op runs inside `tenprof_keep` and a
range `tp:<signature id>` that names it; later ops with that signature run unmarked and are never
replayed. Their kernels get the representative's metrics when the profile is built (same kernel name,
launch configuration and op). With `keep_all`, every op instance is marked (the baseline that shows
what de-duplication saves).

torch.compile's Triton kernels run outside aten ops, so the dispatch mode never sees them: Inductor's
launcher (`CachingAutotuner`) is wrapped so that the first launch of each generated kernel after its
autotuning runs inside `tenprof_keep` and `tk:<kernel name>` (every launch with `keep_all`). Autotuning's
benchmark launches stay unmarked, so ncu does not replay them. The kernels marked are listed in
`counters_ops.json.gz` (`marked_compiled_kernels`).

The script's own Triton launches (`kernel[grid](...)`) and CUDA extension calls run in no aten op
either: they are wrapped so that each gets a signature like an op's, named "(user kernel) NAME" as the
timeline names it (OwnLaunchMarker), and is replayed once per signature.

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
from tenprof.capture.compiling import is_compiling
from tenprof.capture.dispatch_mode import outside_dynamo
from tenprof.capture.own_launches import OwnLaunchPatches, kernel_name
from tenprof.core.kernel_names import USER_KERNEL_PREFIX
from tenprof.core.ncu_names import COMPILED_RANGE_PREFIX, KEEP_RANGE, OP_RANGE_PREFIX, SCOPE_RANGE_PREFIX
from tenprof.core.rawfiles import COUNTERS_OPS_FILE


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

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        return False  # the hook is kept out of Dynamo by outside_dynamo, which loads Dynamo only if the script did

    @outside_dynamo
    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        if is_compiling():
            return func(*args, **kwargs)
        seq = self.seq
        self.seq += 1
        shapes: list[Any] = []
        dtypes: list[str] = []
        for value in args:
            _describe(value, shapes, dtypes)
        for value in kwargs.values():
            _describe(value, shapes, dtypes)
        sid = self.to_mark(func._schema.name, shapes, dtypes, seq)
        if sid < 0:
            return func(*args, **kwargs)
        _push(f"{OP_RANGE_PREFIX}{sid}")
        try:
            return func(*args, **kwargs)
        finally:
            _pop()

    def to_mark(self, name: str, shapes: list[Any], dtypes: list[str], seq: int) -> int:
        """Count one instance of the signature (name, shapes, dtypes); its id when this instance is to be
        replayed (the first, or every one with keep_all), else -1."""
        key = json.dumps([name, shapes, dtypes])
        sid = self.signatures.get(key)
        first = sid is None
        if sid is None:
            sid = len(self.rows)
            self.signatures[key] = sid
            self.rows.append([sid, name, shapes, dtypes, seq, 0])
        self.rows[sid][5] += 1
        if not (first or self.keep_all):
            return -1
        self.marked += 1
        return sid


def _push(inner: str) -> None:
    nvtx: Any = torch.cuda.nvtx
    nvtx.range_push(KEEP_RANGE)
    nvtx.range_push(inner)


def _pop() -> None:
    nvtx: Any = torch.cuda.nvtx
    nvtx.range_pop()
    nvtx.range_pop()


class CompiledLaunchMarker:
    """Marks launches of Inductor's generated Triton kernels for replay (see the module docstring)."""

    def __init__(self, keep_all: bool) -> None:
        self.keep_all = keep_all
        self.kept: set[str] = set()
        self.active = False
        self._restore: list[tuple[Any, str, Any]] = []

    def _wanted(self, tuner: Any) -> str:
        meta = getattr(tuner, "inductor_meta", None) or {}
        name = str(meta.get("kernel_name") or getattr(getattr(tuner, "fn", None), "__name__", ""))
        if not self.active or not name or (name in self.kept and not self.keep_all):
            return ""
        return name

    def install(self) -> None:
        try:
            from torch._inductor.runtime import triton_heuristics
        except Exception:  # no Inductor runtime in this torch: nothing compiled can run
            return
        autotuner = getattr(triton_heuristics, "CachingAutotuner", None)
        if autotuner is None:
            return
        marker = self
        self.active = True
        if hasattr(autotuner, "_pre_launch") and hasattr(autotuner, "_post_launch"):
            # called around the real launch, after autotuning inside run(): exactly the launch to replay
            pre, post = autotuner._pre_launch, autotuner._post_launch

            def pre_launch(tuner: Any, *args: Any, **kwargs: Any) -> Any:
                name = marker._wanted(tuner)
                if marker.keep_all:  # run() would take a cached path past these hooks after this launch
                    tuner._cache_eligible = False
                if name:
                    marker.kept.add(name)
                    _push(f"{COMPILED_RANGE_PREFIX}{name}")
                tuner._tenprof_marked = bool(name)
                return pre(tuner, *args, **kwargs)

            def post_launch(tuner: Any, *args: Any, **kwargs: Any) -> Any:
                try:
                    return post(tuner, *args, **kwargs)
                finally:
                    if getattr(tuner, "_tenprof_marked", False):
                        tuner._tenprof_marked = False
                        _pop()

            self._restore += [(autotuner, "_pre_launch", pre), (autotuner, "_post_launch", post)]
            autotuner._pre_launch, autotuner._post_launch = pre_launch, post_launch
            return
        run = autotuner.run

        def run_marked(tuner: Any, *args: Any, **kwargs: Any) -> Any:
            # older Inductor: autotuning happens inside run() while several configs remain, so only a
            # launch with one config left is marked (a kernel launched once is then not replayed)
            name = marker._wanted(tuner) if len(getattr(tuner, "launchers", ())) == 1 else ""
            if not name or kwargs.get("benchmark_run"):
                return run(tuner, *args, **kwargs)
            marker.kept.add(name)
            _push(f"{COMPILED_RANGE_PREFIX}{name}")
            try:
                return run(tuner, *args, **kwargs)
            finally:
                _pop()

        self._restore.append((autotuner, "run", run))
        autotuner.run = run_marked

    def uninstall(self) -> None:
        self.active = False
        for owner, attribute, original in reversed(self._restore):
            setattr(owner, attribute, original)
        self._restore.clear()


class OwnLaunchMarker:
    """Marks the script's own Triton launches (`kernel[grid](...)`) and CUDA extension calls (functions of
    modules torch.utils.cpp_extension builds meanwhile), in no aten op: the dispatch mode does not see
    them, for replay as if they were ops: a signature per ("(user kernel) NAME", tensor argument shapes,
    dtypes), the op name the timeline gives such a launch (importers.user_launches), so replays match its
    kernels as they match an op's; the first launch of each (every one with keep_all) runs in
    `tenprof_keep` and `tp:<signature id>`. Installed when the script imports Triton."""

    def __init__(self, recorder: CountersRecorder) -> None:
        self.recorder = recorder
        self._patches = OwnLaunchPatches(self._marking)
        self._inside = False
        self.active = False

    def install(self) -> None:
        self.active = True
        self._patches.install()

    def uninstall(self) -> None:
        self.active = False
        self._patches.uninstall()

    def _marking(self, original: Any, launched: Any) -> Any:
        """`original`, each outermost call counted under its signature and marked when to be replayed."""
        marker = self

        def call(*args: Any, **kwargs: Any) -> Any:
            if marker._inside or not marker.active or is_compiling():  # an autotuner's benchmark runs
                return original(*args, **kwargs)
            shapes: list[Any] = []
            dtypes: list[str] = []
            for value in (*args, *kwargs.values()):
                _describe(value, shapes, dtypes)
            recorder = marker.recorder
            sid = recorder.to_mark(USER_KERNEL_PREFIX + kernel_name(launched(args)), shapes, dtypes, recorder.seq)
            recorder.seq += 1
            marker._inside = True
            if sid >= 0:
                _push(f"{OP_RANGE_PREFIX}{sid}")
            try:
                return original(*args, **kwargs)
            finally:
                marker._inside = False
                if sid >= 0:
                    _pop()

        return call


class CountersSession:
    def __init__(
        self, raw_dir: Path, keep_all: bool, replay_scopes: tuple[str, ...] = (), stop_code: CodeType | None = None
    ) -> None:
        self.raw_dir = raw_dir
        self.recorder = CountersRecorder(keep_all)
        self.compiled = CompiledLaunchMarker(keep_all)
        self.own_launches = OwnLaunchMarker(self.recorder)
        self.replay_scopes = set(replay_scopes)
        self.trace_written = False
        self._active = False
        self._scopes_seen: set[str] = set()

    def start(self) -> None:
        if not torch.cuda.is_available():
            raise RuntimeError("the counters pass needs a CUDA device")
        self.recorder.__enter__()  # type: ignore[no-untyped-call]
        self.compiled.install()
        self.own_launches.install()
        self._active = True
        runtime.activate(self)

    def stop(self) -> None:
        runtime.deactivate(self)
        self.compiled.uninstall()
        self.own_launches.uninstall()
        if self._active:
            self._active = False
            runtime.leave_mode(self.recorder)
        torch.cuda.synchronize()
        data = {
            "version": 1,
            "keep_all": self.recorder.keep_all,
            "op_count": self.recorder.seq,
            "marked_ops": self.recorder.marked,
            "marked_compiled_kernels": sorted(self.compiled.kept),
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
        _push(f"{SCOPE_RANGE_PREFIX}{name}")
        return True

    def scope_exit(self, token: Any) -> None:
        if token:
            _pop()
