"""torch.compile's generated wrapper modules (raw/compiled_code.json.gz) -> `compiled_kernels`: for each
generated Triton kernel, the aten ops it computes and the user's lines of those ops; and
`compiled_extern_calls`: the aten ops each wrapper runs through library kernels (`extern_kernels.mm`).

What Inductor writes, and what is read from it:
- before each kernel's definition `NAME = async_compile.triton('NAME', '''...''')`, a comment block
  with `# kernel path: FILE` and `... Original ATen: [aten.add, aten.gelu]`;
- inside the kernel's source, with `comment_origin` on (`tenprof run --compiled-lines`),
  `# ORIGIN:` blocks naming each FX node's aten op (`call_function aten.mul.Tensor`) and its stack
  trace's last frame (`File "/path/model.py", line 39, in forward`);
- without them, the lines from the stack traces Inductor's provenance tracking kept per kernel, which the
  capture stores beside each wrapper (`stack_traces`, tenprof.capture.compiled_code).
Those give `source = inductor-comments`, confidence high. A kernel no wrapper describes is read from its
own generated file when it still exists here (a torch.profiler trace names it: `kernel_file`), else from
its name: `triton_poi_fused_add_gelu_3` -> add, gelu (`kernel-name`, confidence
low: a multi-word op such as native_layer_norm splits into words).
The launch columns (warps, stages, block sizes, declared FLOPs and bytes) come from the arguments
Inductor's launcher gives each launch it makes under the profiler (BuildReport.triton_launches).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from tenprof.core.generated_code import embedded_kernels, extern_calls
from tenprof.core.inductor import STACK_FRAME, CompiledKernel, from_kernel_name, is_generated_file
from tenprof.errors import TraceFormatError
from tenprof.store.compiled_code import read_compiled_code
from tenprof.store.schema import COMPILED_EXTERN_CALLS, COMPILED_KERNELS
from tenprof.store.writer import PassWriter

_ORIGINAL_ATEN = re.compile(r"Original ATen: \[([^\]]*)\]")
_KERNEL_PATH = re.compile(r"^# kernel path: (\S+)", re.MULTILINE)
_ORIGIN_OP = re.compile(r"# call_function (aten\.\w+)")
_META_COUNT = re.compile(r"'(num_load|num_store|num_reduction)': (\d+)")
# provenance tracking's comment in the wrapper where it launches a kernel: "# [Provenance debug handles] NAME:N"
_DEBUG_HANDLE = re.compile(r"\[Provenance debug handles\] (\S+:\d+)")
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
    lines = [f"{file}:{line}" for file, line in STACK_FRAME.findall(body) if not _is_tenprof(file)]
    meta = dict(_META_COUNT.findall(body))
    counts = (int(meta.get("num_load", -1)), int(meta.get("num_store", -1)), int(meta.get("num_reduction", -1)))
    return ops, lines, counts


def parse_wrapper(
    source: str, wrapper_file: str = "", stack_traces: dict[str, list[list[str]]] | None = None
) -> list[CompiledKernel]:
    """Each generated kernel the wrapper defines, with its aten ops and source lines: from the `# ORIGIN:`
    blocks where Inductor wrote them, else from the stack traces its provenance tracking kept for the
    kernel (`stack_traces`: debug handle "kernel:N" -> each use's frames "file:line", outermost first; only
    the handles this wrapper names count; the innermost frame not tenprof's is the line, as an ORIGIN block
    names it)."""
    out: list[CompiledKernel] = []
    traces = _traces_by_kernel(source, stack_traces or {})
    for name, (start, end) in embedded_kernels(source).items():
        body = source[start:end]
        definition = source.rfind("\n", 0, start) + 1
        header_start = source.rfind("\n\n", 0, definition)
        header = source[header_start + 1 if header_start >= 0 else 0 : definition]
        ops: list[str] = []
        for listed in _ORIGINAL_ATEN.findall(header):
            ops += [_aten(x) for x in listed.split(",")]
        body_ops, lines, counts = _body_facts(body)
        if not lines:
            lines = [_innermost(frames) for frames in traces.get(name, [])]
        ops += body_ops
        path = _KERNEL_PATH.search(header)
        generated = path.group(1) if path else ""
        if ops or lines:
            kernel = CompiledKernel(
                name, _unique(ops), _unique(lines), generated, wrapper_file, "inductor-comments", "high", counts
            )
            out.append(kernel)
    return out


def _traces_by_kernel(source: str, stack_traces: dict[str, list[list[str]]]) -> dict[str, list[list[str]]]:
    """Kernel name -> the stack traces of its uses in this wrapper, grouped once: those of the debug handles
    ("name:N") the wrapper names for it, where it names any (a graph's provenance can hold other graphs'
    kernels of the same name), else all of that name's; a key without a handle is the kernel's name itself."""
    named: dict[str, set[str]] = {}
    for handle in _DEBUG_HANDLE.findall(source):
        named.setdefault(handle.rpartition(":")[0], set()).add(handle)
    found: dict[str, list[list[str]]] = {}
    for key, stacks in stack_traces.items():
        kernel, _, number = key.rpartition(":")
        if not number.isdigit():
            kernel = key
        own = named.get(kernel)
        if not own or not number.isdigit() or key in own:
            found.setdefault(kernel, []).extend(stacks)
    return found


def _innermost(frames: list[str]) -> str:
    """The innermost frame of a stack ("file:line" entries, outermost first) that is not tenprof's own."""
    kept = [f for f in frames if not _is_tenprof(f.rsplit(":", 1)[0])]
    return kept[-1] if kept else ""


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


def kind_of(name: str) -> str:
    """Inductor's kernel category from its name prefix (`triton_poi_...` -> pointwise)."""
    parts = name.split("_")
    return KINDS.get(parts[1], "") if len(parts) > 2 and parts[0] == "triton" else ""


def _number(value: Any, kind: type = int) -> Any:
    try:
        return kind(value)
    except (TypeError, ValueError):
        return None


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
        traces = row.get("stack_traces")
        for k in parse_wrapper(
            str(row.get("source", "")), str(row.get("path", "")), traces if isinstance(traces, dict) else None
        ):
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


def build_extern_calls_table(rows: list[dict[str, Any]]) -> pa.Table:
    """Per kept wrapper, the aten ops it runs through library kernels and how many calls of each it
    writes, in the order first written (the report's GEMM fallback reads them instead of the raw file)."""
    out: dict[str, list[Any]] = {name: [] for name in COMPILED_EXTERN_CALLS.names}
    for row in rows:
        calls: dict[str, int] = {}
        for op in extern_calls(str(row.get("source", ""))):
            calls[op] = calls.get(op, 0) + 1
        for op, n in calls.items():
            out["wrapper_file"].append(str(row.get("path", "")))
            out["aten_op"].append(op)
            out["calls"].append(n)
    return pa.table(out, schema=COMPILED_EXTERN_CALLS)


def _program_launches(ops: pa.Table, launches: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The launches' counts without autotuning's benchmark launches (the launch records, cpu ops named
    after the kernel, that are the ops' `is_autotuning`)."""
    if not launches:
        return launches
    names = ops.column("name").to_pylist()
    tuning = ops.column("is_autotuning").to_numpy()
    counts: dict[str, int] = {}
    for name, benchmark in zip(names, tuning.tolist(), strict=True):
        if name in launches and not benchmark:
            counts[name] = counts.get(name, 0) + 1
    return {name: {**meta, "launches": counts.get(name, 0)} for name, meta in launches.items()}


def write_compiled_kernels(writer: PassWriter, code_file: Path | None, launches: dict[str, dict[str, Any]]) -> str:
    """compiled_kernels, when the run compiled anything: what the generated code (`code_file`, kept by
    `tenprof run`; None for an imported trace) and the trace's launches say each Triton kernel computes;
    and compiled_extern_calls, when the kept code was read (even with no such call: its presence tells the
    report not to go back to the raw file).
    Returns a warning when the kept code cannot be read (the tables are then built without it)."""
    kernels = writer.tmp_dir / "kernels.parquet"
    names = pq.read_table(kernels, columns=["name"]).column("name").to_pylist() if kernels.exists() else []
    ops_file = writer.tmp_dir / "ops.parquet"  # the ops table this import just built, with is_autotuning
    if launches and ops_file.exists():
        launches = _program_launches(pq.read_table(ops_file, columns=["name", "is_autotuning"]), launches)
    warning = ""
    try:
        code = read_compiled_code(code_file, strict=True) if code_file is not None else []
    except TraceFormatError as exc:
        code, warning = [], f"torch.compile's kept code is not used: {exc}"
    if code or launches or any(str(n).startswith("triton_") for n in names):
        writer.write_table("compiled_kernels", build_compiled_table(code, [str(n) for n in names], launches))
    if code:
        writer.write_table("compiled_extern_calls", build_extern_calls_table(code))
    return warning
