"""capture.dispatch_mode: the dispatch hooks of the tensors and counters passes run as they are while
Dynamo is not loaded, with Dynamo disabled inside them once it is, and torch wraps them no second time."""

from __future__ import annotations

import sys
import types
from typing import Any

import pytest

from tenprof.capture import dispatch_mode
from tenprof.capture.counters import CountersRecorder
from tenprof.capture.tensors import TensorRecorder


def test_the_hook_runs_as_it_is_until_dynamo_is_loaded_then_with_dynamo_disabled(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[tuple[str, Any]] = []

    def hook(self: Any, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        calls.append(("hook", func))
        return func, args, kwargs

    def disable(fn: Any, recursive: bool) -> Any:
        assert fn is hook and recursive
        calls.append(("disabled", None))

        def disabled(*args: Any) -> Any:
            calls.append(("through the switch", args[1]))
            return fn(*args)

        return disabled

    loaded = [False]
    monkeypatch.setattr(dispatch_mode, "_dynamo_loaded", lambda: loaded[0])
    monkeypatch.setattr(dispatch_mode, "_disable_dynamo", disable)
    dispatch = dispatch_mode.outside_dynamo(hook)
    assert dispatch(None, "add", (), (1,), {"out": 2}) == ("add", (1,), {"out": 2})
    assert calls == [("hook", "add")]
    loaded[0] = True
    assert dispatch(None, "mul", ()) == ("mul", (), None)
    assert dispatch(None, "sub", ()) == ("sub", (), None)
    assert calls[1:] == [
        ("disabled", None),  # made once, on the first op after Dynamo loaded
        ("through the switch", "mul"),
        ("hook", "mul"),
        ("through the switch", "sub"),
        ("hook", "sub"),
    ]


def test_dynamo_counts_as_loaded_once_its_import_has_finished(monkeypatch: pytest.MonkeyPatch) -> None:
    loading = types.ModuleType("torch._dynamo")
    loading.__spec__ = types.SimpleNamespace(_initializing=True)  # type: ignore[assignment]
    monkeypatch.setitem(sys.modules, "torch._dynamo", loading)
    assert not dispatch_mode._dynamo_loaded()
    loading.__spec__._initializing = False
    assert dispatch_mode._dynamo_loaded()
    monkeypatch.delitem(sys.modules, "torch._dynamo")
    assert not dispatch_mode._dynamo_loaded()


@pytest.mark.parametrize("mode", [TensorRecorder, CountersRecorder])
def test_torch_does_not_wrap_the_passes_hooks_again(mode: type) -> None:
    assert dispatch_mode.WRAPPED_BY_TORCH  # the torch of the tests wraps them: else this checks nothing
    assert not mode._should_skip_dynamo()  # type: ignore[attr-defined]
    hook = mode.__dict__["__torch_dispatch__"]
    assert not hasattr(hook.__wrapped__, "__wrapped__")  # outside_dynamo's, over the hook itself
