"""The user-facing annotations: `tenprof.scope(name, flops=..., bytes=...)` and `tenprof.step(tokens=...)`.

They are cheap no-ops when no tenprof session is active, so they can stay in code that runs without
tenprof. With a session active, a scope is a `record_function` range (so any Kineto viewer shows it)
plus a record of the call path where it began, which places it correctly in the call-path tree.

The numbers a scope carries (flops, bytes, any other keyword) and the tokens a step held are checked when
given (a non-number is a TypeError naming the keyword) and handed to the session through two optional
methods, which only the timeline pass's session has (the other passes have no use for them):
    scope_enter_metrics(name, caller, decorator, metrics) -> token   instead of scope_enter, when there are numbers
    record_tokens(tokens)                                            just before step(), when tokens were given
"""

from __future__ import annotations

import functools
import numbers
import operator
import sys
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


class _Session(Protocol):
    def scope_enter(self, name: str, caller: Any, decorator: bool) -> Any: ...
    def scope_exit(self, token: Any) -> None: ...
    def step(self) -> None: ...


_active: list[_Session] = []
# called at every tenprof.step(), after the session's own step (the on-demand capture's: record.on_demand)
_step_hooks: list[Callable[[], None]] = []


def add_step_hook(hook: Callable[[], None]) -> None:
    _step_hooks.append(hook)


def remove_step_hook(hook: Callable[[], None]) -> None:
    if hook in _step_hooks:
        _step_hooks.remove(hook)


def activate(session: _Session) -> None:
    _active.append(session)


def deactivate(session: _Session) -> None:
    if session in _active:
        _active.remove(session)


def current() -> _Session | None:
    return _active[-1] if _active else None


def scope_metrics(given: dict[str, Any]) -> dict[str, float]:
    """The numbers given to a scope, as floats, those given as None left out; a value that is not a real
    number (a bool, a string, a tensor) is refused here, where the scope is made, not when it is recorded."""
    metrics: dict[str, float] = {}
    for key, value in given.items():
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise TypeError(f"tenprof.scope: {key}= must be a number (int or float), got {type(value).__name__}")
        metrics[key] = float(value)
    return metrics


def _enter(session: _Session, name: str, caller: Any, decorator: bool, metrics: dict[str, float]) -> Any:
    if metrics:
        with_metrics = getattr(session, "scope_enter_metrics", None)
        if with_metrics is not None:
            return with_metrics(name, caller, decorator, metrics)
    return session.scope_enter(name, caller, decorator)


class Scope:
    """A named region: `with tenprof.scope("forward"):` or as a decorator `@tenprof.scope("forward")`;
    `metrics` (flops, bytes, ...) are recorded with each entry of it."""

    def __init__(self, name: str, metrics: dict[str, float] | None = None) -> None:
        self.name = name
        self.metrics = metrics or {}
        self._tokens: list[tuple[_Session, Any]] = []

    def __enter__(self) -> Scope:
        session = current()
        if session is not None:
            self._tokens.append((session, _enter(session, self.name, sys._getframe(1), False, self.metrics)))
        return self

    def __exit__(self, *exc: object) -> None:
        if self._tokens:
            session, token = self._tokens.pop()
            session.scope_exit(token)

    def __call__(self, fn: F) -> F:
        name, metrics = self.name, self.metrics

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            session = current()
            if session is None:
                return fn(*args, **kwargs)
            token = _enter(session, name, sys._getframe(1), True, metrics)
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


def checked_tokens(tokens: Any) -> int:
    """The tokens given to tenprof.step() as an int (a numpy or 0-d tensor integer too); a TypeError for
    anything else, a ValueError below 0."""
    if isinstance(tokens, bool):
        raise TypeError("tenprof.step: tokens= must be an integer, got bool")
    try:
        count = operator.index(tokens)
    except TypeError:
        raise TypeError(f"tenprof.step: tokens= must be an integer, got {type(tokens).__name__}") from None
    if count < 0:
        raise ValueError(f"tenprof.step: tokens= must be 0 or more, got {count}")
    return count


def step(tokens: int | None = None) -> None:
    session = current()
    if session is None:
        if tokens is not None:
            checked_tokens(tokens)  # refused the same with or without a session
    else:
        if tokens is not None:
            count = checked_tokens(tokens)
            record = getattr(session, "record_tokens", None)
            if record is not None:
                record(count)
        session.step()
    for hook in _step_hooks:
        hook()
