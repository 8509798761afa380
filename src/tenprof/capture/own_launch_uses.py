"""The tensors pass's view of the kernels the script launches itself: a Triton `kernel[grid](...)` or a
CUDA extension's function runs in no aten op, so the dispatch mode never sees the tensors it reads;
without this, a table only a Triton kernel gathers from reads as "made and never read".

While the tensors pass records, `triton.runtime.jit.JITFunction.run` is wrapped (when the script imports
Triton: a post-import hook), and so are the functions of CUDA extensions torch.utils.cpp_extension builds
meanwhile: each outermost launch becomes an op "(user kernel) NAME" of the pass, its
tensor arguments uses of it (TensorRecorder.launch_begin), and, with the access pass, its kernel launches
are tagged with the op's number like an aten op's, so their addresses are looked up among its tensors.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from tenprof.capture.compiling import is_compiling
from tenprof.capture.own_launches import OwnLaunchPatches, kernel_name
from tenprof.core.kernel_names import USER_KERNEL_PREFIX

if TYPE_CHECKING:
    from tenprof.capture.accesses_hook import AccessHook


class LaunchRecorder(Protocol):
    """What the uses need of the tensors recorder (capture.tensors.TensorRecorder): a launch made an op and
    ended, the recorder's state, and its way to stop on an error of its own. A protocol, so that the
    recorder, which builds the uses, and the uses do not import each other."""

    broken: str
    access: AccessHook | None

    def launch_begin(self, name: str, args: Any, kwargs: dict[str, Any], caller: Any) -> tuple[int, int, int, int]: ...

    def launch_end(self, token: tuple[int, int, int, int]) -> None: ...

    def give_up(self, exc: Exception) -> None: ...


class OwnLaunchUses:
    """Each outermost launch of the script's own an op of the tensors recorder (see the module docstring)."""

    def __init__(self, recorder: LaunchRecorder) -> None:
        self.recorder = recorder
        self._patches = OwnLaunchPatches(self._using)
        self._inside = False
        self.active = False

    def install(self) -> None:
        self.active = True
        self._patches.install()

    def uninstall(self) -> None:
        self.active = False
        self._patches.uninstall()

    def _using(self, original: Callable[..., Any], launched: Callable[[tuple[Any, ...]], Any]) -> Callable[..., Any]:
        uses = self

        def call(*args: Any, **kwargs: Any) -> Any:
            recorder = uses.recorder
            if uses._inside or not uses.active or recorder.broken or is_compiling():  # an autotuner's runs
                return original(*args, **kwargs)
            name = USER_KERNEL_PREFIX + kernel_name(launched(args))
            try:
                token = recorder.launch_begin(name, args, kwargs, sys._getframe(1))
            except Exception as exc:  # tenprof's bookkeeping must not become the script's error
                recorder.give_up(exc)
                return original(*args, **kwargs)
            uses._inside = True
            access = recorder.access
            if access is not None:
                access.enter(token[1])
            try:
                return original(*args, **kwargs)
            finally:
                uses._inside = False
                if access is not None:
                    access.leave(token[1])
                recorder.launch_end(token)

        return call
