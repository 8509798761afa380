"""Whether torch.compile is tracing the code that runs now: the recorders stay out of the way then (what
Dynamo traces is not the script running, and a recorder's Python would break the graph)."""

from __future__ import annotations

import torch

# torch.compiler.is_compiling where this torch has it, else never compiling
is_compiling = getattr(getattr(torch, "compiler", None), "is_compiling", lambda: False)
