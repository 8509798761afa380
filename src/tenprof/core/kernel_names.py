"""What a demangled CUDA kernel name reduces to when two tools must agree on it.

Kineto and ncu demangle the same symbol differently (template arguments, parameter lists, namespaces),
so the importers that match ncu's kernels to the timeline's, and the analyses that join them again at
report time, compare the function name alone.
"""

from __future__ import annotations

import re

# The op a kernel launched outside every torch op is given (importers.user_launches): this, then its name.
USER_KERNEL_PREFIX = "(user kernel) "
# ... and in a trace that recorded no torch op at all (activities without the CPU's): its kernels are torch's own
# as much as the user's, their ops unknown
NO_OP_RECORDED_PREFIX = "(no op recorded) "
_TEMPLATE = re.compile(r"<[^<>]*>")


def base_name(name: str) -> str:
    """`void at::native::vectorized_elementwise_kernel<4, add>(int, ...)` -> `vectorized_elementwise_kernel`."""
    text = name.strip().replace("(anonymous namespace)", "anonymous")
    while "<" in text:
        reduced = _TEMPLATE.sub("", text)
        if reduced == text:
            break
        text = reduced
    text = text.split("(", 1)[0].strip()
    text = text.rsplit(" ", 1)[-1]
    return text.rsplit("::", 1)[-1]
