"""Run a function on a module right after the script imports it (a post-import hook), so tenprof can
change a module it must not import itself: importing it would cost the script (torch._inductor: about a
second) or change what it does (Triton)."""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from collections.abc import Callable, Sequence
from types import ModuleType


class AfterImport(importlib.abc.MetaPathFinder):
    """Calls `then(module)` once the module named `name` has been imported (the first time)."""

    def __init__(self, name: str, then: Callable[[ModuleType], None]) -> None:
        self.name, self.then = name, then

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != self.name:
            return None
        sys.meta_path.remove(self)  # find the real spec with the other finders, then only watch it load
        from importlib.util import find_spec

        spec = find_spec(fullname)
        if spec is None or spec.loader is None:
            return spec
        loader, then = spec.loader, self.then
        exec_module = loader.exec_module

        def exec_and_then(module: ModuleType) -> None:
            exec_module(module)
            then(module)

        loader.exec_module = exec_and_then  # type: ignore[method-assign]
        return spec


def when_imported(name: str, then: Callable[[ModuleType], None]) -> None:
    """`then(module)` now when `name` is imported already, else right after the script imports it."""
    module = sys.modules.get(name)
    if module is not None:
        then(module)
    else:
        sys.meta_path.insert(0, AfterImport(name, then))
