"""tenprof: a profiler that answers why a PyTorch GPU workload is slow and what to fix first.

Public API (torch is imported only by the capture functions, never by `load` or the analyses):
    tenprof.load(dir)              -> Profile
    tenprof.scope("forward")       context manager and decorator marking a user scope
    tenprof.step()                 marks the end of one training/inference step
    tenprof.profile(...)           profile a block of code in-process, writing a profile directory
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from tenprof.store.profile import Profile


def load(path: str) -> Profile:
    """Open a profile directory written by `tenprof run`, `tenprof import` or `tenprof.profile`."""
    from tenprof.store.profile import load_profile

    return load_profile(path)


def scope(name: str) -> Any:
    """A user scope: `with tenprof.scope("forward"):` or `@tenprof.scope("forward")`."""
    from tenprof.capture.runtime import Scope

    return Scope(name)


def step() -> None:
    """Mark the end of a step; steps delimit the per-step report and drive `--schedule`."""
    from tenprof.capture.runtime import step as _step

    _step()


def profile(output: str = "tenprof-out", **options: Any) -> Any:
    """Profile the enclosed block in this process: `with tenprof.profile("out") as p: ...`."""
    from tenprof.capture.inprocess import InProcessProfile

    return InProcessProfile(output, **options)


__all__ = ["__version__", "load", "profile", "scope", "step"]
