"""`outside_dynamo(hook)`: a TorchDispatchMode's `__torch_dispatch__` that Dynamo never compiles into, as
torch makes it, without importing Dynamo into a script that never loads it.

torch (2.13 here; each torch whose TorchDispatchMode has `_should_skip_dynamo`) wraps the hook of every
TorchDispatchMode subclass in `torch._disable_dynamo` unless `_should_skip_dynamo()` says False, and
that wrapper imports torch._dynamo on the first op dispatched: 1.1 s of a 2.7 s CPU tensors pass on the
2-core machine, in every script, compiled or not. Dynamo can only compile into the hook once it is
loaded, so the hook made here runs as it is until then, and through `torch._disable_dynamo` (what torch
would have wrapped it in) from the first op after Dynamo has finished loading. A mode that uses it
returns False from `_should_skip_dynamo`, so torch does not wrap it a second time. On a torch without
that wrap (`WRAPPED_BY_TORCH` False) a mode's hook is left as it is, as it always was there.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any

from torch._compile import _disable_dynamo
from torch.utils._python_dispatch import TorchDispatchMode

Hook = Callable[..., Any]

# Whether this torch wraps the hook of each mode (it asks `_should_skip_dynamo` when a subclass is made).
WRAPPED_BY_TORCH = hasattr(TorchDispatchMode, "_should_skip_dynamo")


def _dynamo_loaded() -> bool:
    """torch._dynamo is imported, and its import has finished (an op dispatched while it is still being
    imported is torch's own set-up, which nothing is compiling yet)."""
    module = sys.modules.get("torch._dynamo")
    return module is not None and not getattr(module.__spec__, "_initializing", False)


def outside_dynamo(hook: Hook) -> Hook:
    """`hook` (a `__torch_dispatch__`) called as it is while Dynamo is not loaded, and with Dynamo disabled
    inside it once Dynamo is (see the module docstring); `hook` itself where torch does not wrap hooks."""
    if not WRAPPED_BY_TORCH:
        return hook
    disabled: Hook | None = None

    @functools.wraps(hook)
    def dispatch(self: Any, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        nonlocal disabled
        if disabled is None:
            if not _dynamo_loaded():
                return hook(self, func, types, args, kwargs)
            disabled = _disable_dynamo(hook, recursive=True)
        return disabled(self, func, types, args, kwargs)

    return dispatch
