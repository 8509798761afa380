"""What tenprof cuts out of the source of one of Inductor's generated wrapper modules: each embedded
Triton kernel's source, and the aten ops the wrapper runs through library kernels (`extern_kernels`).

Pure string parsing of one wrapper's text (no I/O): the importers use it while building
`compiled_kernels`, the stalls report to quote a kernel's line, and the generated-code export to write
each kernel's source.
"""

from __future__ import annotations

import re

_DEFINITION = re.compile(r"^(\w+) = async_compile\.triton\('(\w+)', '''", re.MULTILINE)
_EXTERN_CALL = re.compile(r"extern_kernels\.(\w+)\(")


def embedded_kernels(source: str) -> dict[str, tuple[int, int]]:
    """Kernel name -> (start, end) of its source inside a wrapper: the text of the `'''...'''` string,
    which is exactly the file Triton compiles it from, so line N of that text is line N of the kernel's
    line info (checked against ncu's source lines on the H200)."""
    out: dict[str, tuple[int, int]] = {}
    definitions = list(_DEFINITION.finditer(source))
    for i, match in enumerate(definitions):
        end = source.find("''', device_str=", match.end())
        if end < 0:
            end = definitions[i + 1].start() if i + 1 < len(definitions) else len(source)
        out.setdefault(match.group(2), (match.end(), end))
    return out


def extern_calls(source: str) -> list[str]:
    """The aten ops a wrapper runs through library kernels, one per call in the order written:
    `extern_kernels.mm(` -> aten::mm (Inductor's `bias_addmm` is an addmm)."""
    return [f"aten::{'addmm' if name == 'bias_addmm' else name}" for name in _EXTERN_CALL.findall(source)]
