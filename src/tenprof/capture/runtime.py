"""The user-facing annotations: `tenprof.scope(name)` and `tenprof.step()`.

They are cheap no-ops when no tenprof session is active, so they can stay in code that runs without
tenprof. With a session active, a scope is a `record_function` range (so any Kineto viewer shows it)
plus a record of the call path where it began, which places it correctly in the call-path tree.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


class _Session(Protocol):
    def scope_enter(self, name: str, caller: Any, decorator: bool) -> Any: ...
    def scope_exit(self, token: Any) -> None: ...
    def step(self) -> None: ...


_active: list[_Session] = []


def activate(session: _Session) -> None:
    _active.append(session)


def deactivate(session: _Session) -> None:
    if session in _active:
        _active.remove(session)


def current() -> _Session | None:
    return _active[-1] if _active else None


class Scope:
    """A named region: `with tenprof.scope("forward"):` or as a decorator `@tenprof.scope("forward")`."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._tokens: list[tuple[_Session, Any]] = []

    def __enter__(self) -> Scope:
        session = current()
        if session is not None:
            self._tokens.append((session, session.scope_enter(self.name, sys._getframe(1), False)))
        return self

    def __exit__(self, *exc: object) -> None:
        if self._tokens:
            session, token = self._tokens.pop()
            session.scope_exit(token)

    def __call__(self, fn: F) -> F:
        name = self.name

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            session = current()
            if session is None:
                return fn(*args, **kwargs)
            token = session.scope_enter(name, sys._getframe(1), True)
            try:
                return fn(*args, **kwargs)
            finally:
                session.scope_exit(token)

        return wrapper  # type: ignore[return-value]


def leave_mode(mode: Any) -> None:
    """Pop a torch function/dispatch mode tenprof pushed; if the script left modes of its own pushed
    above it, torch refuses, and ours goes when they do (the recording has stopped either way)."""
    try:
        mode.__exit__(None, None, None)
    except Exception:
        pass


def step() -> None:
    session = current()
    if session is not None:
        session.step()
