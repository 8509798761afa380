"""torch.compile's generated wrapper modules (raw/compiled_code.json.gz) -> `compiled_kernels`: for each
generated Triton kernel, the aten ops it computes and the user's lines of those ops.

What Inductor writes, and what is read from it:
- before each kernel's definition `NAME = async_compile.triton('NAME', '''...''')`, a comment block
  with `# kernel path: FILE` and `... Original ATen: [aten.add, aten.gelu]`;
- inside the kernel's source, with `comment_origin` on (tenprof turns it on in the timeline pass),
  `# ORIGIN:` blocks naming each FX node's aten op (`call_function aten.mul.Tensor`) and its stack
  trace's last frame (`File "/path/model.py", line 39, in forward`).
Those give `source = inductor-comments`, confidence high. A kernel whose comments are missing (another
torch version, comment_origin off) falls back to its name: `triton_poi_fused_add_gelu_3` -> add, gelu
(`kernel-name`, confidence low: a multi-word op such as native_layer_norm splits into words).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from tenprof.importers.counters_import import read_gz_json
from tenprof.store.schema import COMPILED_KERNELS

_DEFINITION = re.compile(r"^(\w+) = async_compile\.triton\('(\w+)', '''", re.MULTILINE)
_ORIGINAL_ATEN = re.compile(r"Original ATen: \[([^\]]*)\]")
_KERNEL_PATH = re.compile(r"^# kernel path: (\S+)", re.MULTILINE)
_ORIGIN_OP = re.compile(r"# call_function (aten\.\w+)")
_FRAME = re.compile(r'File "([^"]+)", line (\d+)')
_NAME = re.compile(r"^triton_(?:poi|red|per|tem|mm|bmm|for|spl|unk)_fused_(.+?)(?:_\d+)?$")
_META_COUNT = re.compile(r"'(num_load|num_store|num_reduction)': (\d+)")
KINDS = {
    "poi": "pointwise",
    "red": "reduction",
    "per": "persistent_reduction",
    "tem": "template",
    "for": "foreach",
    "spl": "split_scan",
    "mm": "matmul",
    "bmm": "matmul",
}


@dataclass(frozen=True)
class CompiledKernel:
    kernel: str
    aten_ops: tuple[str, ...]
    lines: tuple[str, ...]
    generated_file: str
    wrapper_file: str
    source: str
    confidence: str
    counts: tuple[int, int, int] = (-1, -1, -1)  # num_load, num_store, num_reduction from inductor_meta


_TENPROF_DIR = str(Path(__file__).resolve().parents[1])


def _is_tenprof(path: str) -> bool:
    return path.startswith(_TENPROF_DIR) or "/tenprof/capture/" in path.replace("\\", "/")


def _aten(name: str) -> str:
    """`aten.gelu_backward` / `aten.mul.Tensor` -> `aten::gelu_backward` / `aten::mul`."""
    parts = name.strip().split(".")
    return f"aten::{parts[1]}" if len(parts) >= 2 and parts[0] == "aten" else name.strip()


def _unique(items: list[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(i for i in items if i))


def parse_wrapper(source: str, wrapper_file: str = "") -> list[CompiledKernel]:
    out: list[CompiledKernel] = []
    definitions = list(_DEFINITION.finditer(source))
    for i, match in enumerate(definitions):
        name = match.group(2)
        body_end = source.find("''', device_str=", match.end())
        if body_end < 0:
            body_end = definitions[i + 1].start() if i + 1 < len(definitions) else len(source)
        body = source[match.end() : body_end]
        header_start = source.rfind("\n\n", 0, match.start())
        header = source[header_start + 1 if header_start >= 0 else 0 : match.start()]
        ops: list[str] = []
        for listed in _ORIGINAL_ATEN.findall(header):
            ops += [_aten(x) for x in listed.split(",")]
        ops += [_aten(x) for x in _ORIGIN_OP.findall(body)]
        # tenprof's own recorder can be the innermost frame of a node's stack: not a line of the program
        lines = [f"{file}:{line}" for file, line in _FRAME.findall(body) if not _is_tenprof(file)]
        path = _KERNEL_PATH.search(header)
        generated = path.group(1) if path else ""
        meta = dict(_META_COUNT.findall(body))
        counts = (int(meta.get("num_load", -1)), int(meta.get("num_store", -1)), int(meta.get("num_reduction", -1)))
        if ops or lines:
            kernel = CompiledKernel(
                name, _unique(ops), _unique(lines), generated, wrapper_file, "inductor-comments", "high", counts
            )
            out.append(kernel)
    return out


def from_kernel_name(name: str) -> CompiledKernel | None:
    """The fallback: the ops Inductor put in the kernel's name."""
    match = _NAME.match(name)
    if match is None:
        return None
    words = [w for w in match.group(1).split("_") if w and not w.isdigit()]
    return CompiledKernel(name, _unique([f"aten::{w}" for w in words]), (), "", "", "kernel-name", "low")


def kind_of(name: str) -> str:
    """Inductor's kernel category from its name prefix (`triton_poi_...` -> pointwise)."""
    parts = name.split("_")
    return KINDS.get(parts[1], "") if len(parts) > 2 and parts[0] == "triton" else ""


def build_compiled_table(rows: list[dict[str, Any]], kernel_names: list[str]) -> pa.Table:
    """One row per generated kernel seen in the wrappers, plus name-parsed rows for Triton kernels of the
    timeline that no wrapper describes."""
    found: dict[str, CompiledKernel] = {}
    for row in rows:
        for k in parse_wrapper(str(row.get("source", "")), str(row.get("path", ""))):
            found.setdefault(k.kernel, k)
    for name in dict.fromkeys(kernel_names):
        if name not in found:
            guess = from_kernel_name(name)
            if guess is not None:
                found[name] = guess
    kernels = list(found.values())
    return pa.table(
        {
            "kernel": [k.kernel for k in kernels],
            "aten_ops": [",".join(k.aten_ops) for k in kernels],
            "lines": [";".join(k.lines) for k in kernels],
            "generated_file": [k.generated_file for k in kernels],
            "wrapper_file": [k.wrapper_file for k in kernels],
            "source": [k.source for k in kernels],
            "confidence": [k.confidence for k in kernels],
            "kind": [kind_of(k.kernel) for k in kernels],
            "num_load": [k.counts[0] for k in kernels],
            "num_store": [k.counts[1] for k in kernels],
            "num_reduction": [k.counts[2] for k in kernels],
        },
        schema=COMPILED_KERNELS,
    )


def read_compiled_code(path: Path) -> list[dict[str, Any]]:
    data = read_gz_json(path) if path.exists() else []
    return data if isinstance(data, list) else []
