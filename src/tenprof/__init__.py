"""tenprof: a profiler that answers why a PyTorch GPU workload is slow and what to fix first.

Public API (torch is imported only by the capture functions, never by `load` or the analyses):
    tenprof.load(dir)              -> Profile
    tenprof.scope("forward")       context manager and decorator marking a user scope; numbers it does
                                   (flops=, bytes=, any keyword) are recorded with each entry
    tenprof.step()                 marks the end of one training/inference step; tokens=N: what it held
    tenprof.profile(...)           profile a block of code in-process, writing a profile directory
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tenprof.core.version import VERSION as __version__

if TYPE_CHECKING:
    from tenprof.store.profile import Profile


def load(path: str) -> Profile:
    """Open a profile directory written by `tenprof run`, `tenprof import` or `tenprof.profile`."""
    from tenprof.store.profile import load_profile

    return load_profile(path)


def scope(name: str, flops: float | None = None, bytes: float | None = None, **metrics: float) -> Any:
    """A user scope: `with tenprof.scope("forward"):` or `@tenprof.scope("forward")`.

    `flops`, `bytes` and any other keyword are numbers the scope's work does, recorded with each entry of
    it (the profile's user_metrics table); a value that is not a number raises TypeError here."""
    from tenprof.capture.runtime import Scope, scope_metrics

    if flops is None and bytes is None and not metrics:
        return Scope(name)
    return Scope(name, scope_metrics({"flops": flops, "bytes": bytes, **metrics}))


def step(tokens: int | None = None) -> None:
    """Mark the end of a step; steps delimit the per-step report and drive `--schedule`. `tokens`: how many
    tokens the step just ended held (the profile's steps.tokens)."""
    from tenprof.capture.runtime import step as _step

    _step(tokens)


def profile(output: str = "tenprof-out", **options: Any) -> Any:
    """Profile the enclosed block in this process: `with tenprof.profile("out") as p: ...`."""
    from tenprof.record.inprocess import InProcessProfile

    return InProcessProfile(output, **options)


def listen() -> str:
    """Let `tenprof capture PID -o OUT --steps N` record this process's next steps on request, with nothing
    recorded until then (as `tenprof run --on-demand` does); the listener's socket path."""
    from tenprof.record.on_demand import listen as _listen

    return str(_listen())


__all__ = ["__version__", "listen", "load", "profile", "scope", "step"]
