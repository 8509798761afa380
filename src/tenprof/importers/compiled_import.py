"""torch.compile's generated wrapper modules (raw/compiled_code.json.gz) -> `compiled_kernels`: for each
generated Triton kernel, the aten ops it computes and the user's lines of those ops.

What Inductor writes, and what is read from it:
- before each kernel's definition `NAME = async_compile.triton('NAME', '''...''')`, a comment block
  with `# kernel path: FILE` and `... Original ATen: [aten.add, aten.gelu]`;
- inside the kernel's source, with `comment_origin` on,
  `# ORIGIN:` blocks naming each FX node's aten op (`call_function aten.mul.Tensor`) and its stack
  trace's last frame (`File "/path/model.py", line 39, in forward`); tenprof turns `comment_origin` on
  in every pass's run.
Those give `source = inductor-comments`, confidence high. A kernel no wrapper describes is read from its
own generated file when it still exists here (a torch.profiler trace names it: `kernel_file`), else from
its name: `triton_poi_fused_add_gelu_3` -> add, gelu (`kernel-name`, confidence
low: a multi-word op such as native_layer_norm splits into words).
The launch columns (warps, stages, block sizes, declared FLOPs and bytes) come from the arguments
Inductor's launcher gives each launch it makes under the profiler (BuildReport.triton_launches).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from tenprof.capture.rawfiles import COMPILED_CODE_FILE
from tenprof.errors import TraceFormatError
from tenprof.importers.counters_import import inside_autotuning, read_gz_json
from tenprof.store.schema import COMPILED_KERNELS
from tenprof.store.writer import PassWriter

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


def _body_facts(body: str) -> tuple[list[str], list[str], tuple[int, int, int]]:
    """The aten ops of the `# ORIGIN:` blocks, their source lines and Inductor's load/store/reduction
    counts, from one kernel's source."""
    ops = [_aten(x) for x in _ORIGIN_OP.findall(body)]
    # tenprof's own recorder can be the innermost frame of a node's stack: not a line of the program
    lines = [f"{file}:{line}" for file, line in _FRAME.findall(body) if not _is_tenprof(file)]
    meta = dict(_META_COUNT.findall(body))
    counts = (int(meta.get("num_load", -1)), int(meta.get("num_store", -1)), int(meta.get("num_reduction", -1)))
    return ops, lines, counts


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


def parse_wrapper(source: str, wrapper_file: str = "") -> list[CompiledKernel]:
    out: list[CompiledKernel] = []
    for name, (start, end) in embedded_kernels(source).items():
        body = source[start:end]
        definition = source.rfind("\n", 0, start) + 1
        header_start = source.rfind("\n\n", 0, definition)
        header = source[header_start + 1 if header_start >= 0 else 0 : definition]
        ops: list[str] = []
        for listed in _ORIGINAL_ATEN.findall(header):
            ops += [_aten(x) for x in listed.split(",")]
        body_ops, lines, counts = _body_facts(body)
        ops += body_ops
        path = _KERNEL_PATH.search(header)
        generated = path.group(1) if path else ""
        if ops or lines:
            kernel = CompiledKernel(
                name, _unique(ops), _unique(lines), generated, wrapper_file, "inductor-comments", "high", counts
            )
            out.append(kernel)
    return out


def from_kernel_file(name: str, source: str, path: str) -> CompiledKernel | None:
    """A kernel's own generated file (the `kernel_file` a torch.profiler trace names): its ORIGIN blocks
    when Inductor wrote them (comment_origin on), else only its counts, with the ops from its name."""
    ops, lines, counts = _body_facts(source)
    if ops or lines:
        return CompiledKernel(name, _unique(ops), _unique(lines), path, "", "inductor-comments", "high", counts)
    guess = from_kernel_name(name)
    if guess is None:
        return None
    return CompiledKernel(name, guess.aten_ops, (), path, "", guess.source, guess.confidence, counts)


_EXTERN_CALL = re.compile(r"extern_kernels\.(\w+)\(")


def extern_calls(source: str) -> list[str]:
    """The aten ops a wrapper runs through library kernels: `extern_kernels.mm(` -> aten::mm
    (Inductor's `bias_addmm` is an addmm)."""
    return [f"aten::{'addmm' if name == 'bias_addmm' else name}" for name in _EXTERN_CALL.findall(source)]


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


def _number(value: Any, kind: type = int) -> Any:
    try:
        return kind(value)
    except (TypeError, ValueError):
        return None


# Inductor's generated files are content-addressed: `c` + 51 base32 characters, in a two-letter directory
_GENERATED_FILE = re.compile(r"(^|/)c[a-z0-9]{51}\.py$")


def is_generated_file(path: str) -> bool:
    """`/tmp/torchinductor_u/o3/co377...wgelq.py` is; Triton's or torch's own sources are not."""
    return bool(_GENERATED_FILE.search(path.replace("\\", "/")))


def _read_text(path: str) -> str:
    """A generated kernel file named by an imported trace, when it still exists on this machine."""
    if not is_generated_file(path):
        return ""
    try:
        return Path(path).read_text(errors="replace")
    except OSError:
        return ""


def build_compiled_table(
    rows: list[dict[str, Any]], kernel_names: list[str], launches: dict[str, dict[str, Any]] | None = None
) -> pa.Table:
    """One row per generated kernel seen in the wrappers, plus rows for Triton kernels of the timeline
    (or Inductor launches of the trace, `launches`: kernel -> launch args) that no wrapper describes:
    from the kernel's own generated file when it can be read here, else from its name."""
    launches = launches or {}
    found: dict[str, CompiledKernel] = {}
    for row in rows:
        for k in parse_wrapper(str(row.get("source", "")), str(row.get("path", ""))):
            found.setdefault(k.kernel, k)
    for name in dict.fromkeys([*kernel_names, *launches]):
        if name in found:
            continue
        path = str(launches.get(name, {}).get("kernel_file", "") or "")
        text = _read_text(path)
        guess = from_kernel_file(name, text, path) if text else from_kernel_name(name)
        if guess is not None:
            found[name] = guess
    kernels = list(found.values())
    meta = [launches.get(k.kernel, {}) for k in kernels]
    gb = [_number(m.get("kernel_num_gb"), float) for m in meta]
    return pa.table(
        {
            "kernel": [k.kernel for k in kernels],
            "aten_ops": [",".join(k.aten_ops) for k in kernels],
            "lines": [";".join(k.lines) for k in kernels],
            # the file the launcher loaded (its line info's file) before the wrapper's `kernel path` comment
            "generated_file": [
                str(m.get("kernel_file", "") or "") or k.generated_file for k, m in zip(kernels, meta, strict=True)
            ],
            "wrapper_file": [k.wrapper_file for k in kernels],
            "source": [k.source for k in kernels],
            "confidence": [k.confidence for k in kernels],
            "kind": [kind_of(k.kernel) for k in kernels],
            "num_load": [k.counts[0] for k in kernels],
            "num_store": [k.counts[1] for k in kernels],
            "num_reduction": [k.counts[2] for k in kernels],
            "launches": [int(m.get("launches", 0)) for m in meta],
            "num_warps": [_number(m.get("num_warps")) for m in meta],
            "num_stages": [_number(m.get("num_stages")) for m in meta],
            "block_sizes": [str(m.get("kernel_kwargs", "") or "") for m in meta],
            "flops": [_number(m.get("kernel_flop"), float) for m in meta],
            "bytes": [None if g is None else g * 1e9 for g in gb],
        },
        schema=COMPILED_KERNELS,
    )


def kept_code_files(profile_dir: Path) -> list[Path]:
    """Every pass's kept wrappers, those of the ncu run (counters, else stalls) first: its kernels are
    the ones the counters and stalls reports name, should another run have generated different code."""
    order = {"counters": 0, "stalls": 1, "timeline": 2}
    found = profile_dir.glob(f"*/raw/{COMPILED_CODE_FILE}")
    return sorted(found, key=lambda p: (order.get(p.parent.parent.name, 3), p.parent.parent.name))


def read_compiled_code(path: Path, strict: bool = False) -> list[dict[str, Any]]:
    """The kept wrappers; none when the file is absent, or damaged unless `strict` (TraceFormatError):
    reports then fall back to what the trace says, as for a run that kept no code."""
    try:
        data = read_gz_json(path) if path.exists() else []
    except TraceFormatError:
        if strict:
            raise
        return []
    return data if isinstance(data, list) else []


def _program_launches(ops_file: Path, launches: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The launches' counts without autotuning's benchmark launches (the launch records, cpu ops named
    after the kernel, that run inside an autotuning record)."""
    if not launches or not ops_file.exists():
        return launches

    ops = pq.read_table(ops_file, columns=["name", "parent_op_id"])
    names = ops.column("name").to_pylist()
    tuning = inside_autotuning(names, ops.column("parent_op_id").to_numpy())
    counts: dict[str, int] = {}
    for name, benchmark in zip(names, tuning.tolist(), strict=True):
        if name in launches and not benchmark:
            counts[name] = counts.get(name, 0) + 1
    return {name: {**meta, "launches": counts.get(name, 0)} for name, meta in launches.items()}


def write_compiled_kernels(writer: PassWriter, code_file: Path | None, launches: dict[str, dict[str, Any]]) -> str:
    """compiled_kernels, when the run compiled anything: what the generated code (`code_file`, kept by
    `tenprof run`; None for an imported trace) and the trace's launches say each Triton kernel computes.
    Returns a warning when the kept code cannot be read (the table is then built without it)."""
    kernels = writer.tmp_dir / "kernels.parquet"
    names = pq.read_table(kernels, columns=["name"]).column("name").to_pylist() if kernels.exists() else []
    launches = _program_launches(writer.tmp_dir / "ops.parquet", launches)
    warning = ""
    try:
        code = read_compiled_code(code_file, strict=True) if code_file is not None else []
    except TraceFormatError as exc:
        code, warning = [], f"torch.compile's kept code is not used: {exc}"
    if code or launches or any(str(n).startswith("triton_") for n in names):
        writer.write_table("compiled_kernels", build_compiled_table(code, [str(n) for n in names], launches))
    return warning
