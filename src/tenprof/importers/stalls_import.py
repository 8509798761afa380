"""Stalls pass: per-PC warp-stall samples and SASS (read by ncu_report_reader.read_source_counters)
-> tables, with the blame shift (tenprof.importers.blame) applied per kernel, and the text of the source
lines the SASS maps to (`source_lines`, read from this machine's files: see importers.source_lines)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from tenprof.core.kernel_names import base_name
from tenprof.core.ncu_names import COMPILED_RANGE_PREFIX, OP_RANGE_PREFIX, SCOPE_RANGE_PREFIX
from tenprof.importers.blame import blame
from tenprof.importers.counters_import import read_gz_json
from tenprof.importers.sass import parse_program
from tenprof.importers.source_lines import build_source_lines
from tenprof.store.schema import BLAME, PC_SAMPLES, SASS, STALL_KERNELS
from tenprof.store.writer import PassWriter


@dataclass
class StallsReport:
    kernels: int = 0
    samples: float = 0.0
    dropped: float = 0.0
    warnings: list[str] = field(default_factory=list)


def _last(ranges: list[str], prefix: str) -> str:
    for r in reversed(ranges):
        if r.startswith(prefix):
            return r[len(prefix) :]
    return ""


# Device code lives far above 4 GiB in the process's address space; per-PC metrics whose correlation ids
# are offsets into the function (seen with ncu 2025.3 on H200) give small numbers.
_CODE_ADDRESS = 1 << 32


def _code_rows(rows: list[Any], sampled: list[int]) -> list[tuple[int, str]]:
    """The kernel's SASS at its code addresses. ncu lists some PCs twice, once as an offset from the
    function start (a small number whose text repeats the instruction at that offset); those copies
    are dropped, so the listing is one function starting at its first instruction."""
    code = [(int(pc), str(text)) for pc, text in rows if str(text).strip() and str(text) != "N/A"]
    if any(pc >= _CODE_ADDRESS for pc in sampled) or any(pc >= _CODE_ADDRESS for pc, _ in code):
        code = [(pc, text) for pc, text in code if pc >= _CODE_ADDRESS]
    return code


def _sector_metric(names: set[str]) -> str:
    """The per-PC metric counting the L2 sectors a global memory instruction requested, as this ncu
    names it (the theoretical count, not the ideal or the excess)."""
    plain = sorted(
        n for n in names if "sectors" in n and "global" in n and not any(w in n for w in ("ideal", "excessive"))
    )
    preferred = [n for n in plain if "l2_theoretical_sectors_global" in n]
    return (preferred or plain or [""])[0]


def _sectors_by_pc(k: dict[str, Any], code: list[tuple[int, str]]) -> dict[int, float]:
    """pc -> L2 sectors requested, at code addresses (offsets from the function start are moved there)."""
    rows = k.get("pc_metrics", [])
    metric = _sector_metric({str(name) for _, name, _ in rows})
    if not metric or not code:
        return {}
    start = min(pc for pc, _ in code)
    out: dict[int, float] = {}
    for pc, name, value in rows:
        if name == metric:
            at = int(pc) if int(pc) >= _CODE_ADDRESS or start < _CODE_ADDRESS else start + int(pc)
            out[at] = out.get(at, 0.0) + float(value)
    return out


def build_stall_tables(
    data: dict[str, Any], signatures: dict[str, Any] | None
) -> tuple[dict[str, pa.Table], StallsReport]:
    sig_op: dict[int, str] = {}
    sig_count: dict[int, int] = {}
    sig_first: dict[int, int] = {}
    if signatures:
        s = signatures["signatures"]
        sig_op = {int(k): str(o) for k, o in zip(s["signature_id"], s["op"], strict=True)}
        sig_count = {int(k): int(c) for k, c in zip(s["signature_id"], s["count"], strict=True)}
        sig_first = {int(k): int(c) for k, c in zip(s["signature_id"], s["first_op_seq"], strict=True)}
    kernels: dict[str, list[Any]] = {c: [] for c in STALL_KERNELS.names}
    samples: dict[str, list[Any]] = {c: [] for c in PC_SAMPLES.names}
    sass: dict[str, list[Any]] = {c: [] for c in SASS.names}
    blamed: dict[str, list[Any]] = {c: [] for c in BLAME.names}
    report = StallsReport()
    for k in data["kernels"]:
        rid = int(k["replay_id"])
        sig = _last(k["nvtx"], OP_RANGE_PREFIX)
        total = float(sum(v for _, _, v in k["samples"]))
        kernels["replay_id"].append(rid)
        kernels["name"].append(base_name(str(k["name"])))
        sid = int(sig) if sig.isdigit() else -1
        kernels["op"].append(sig_op.get(sid, ""))
        kernels["scope"].append(_last(k["nvtx"], SCOPE_RANGE_PREFIX))
        kernels["signature_id"].append(sid)
        kernels["instances"].append(sig_count.get(sid, 1))
        kernels["first_op_seq"].append(sig_first.get(sid, -1))
        kernels["samples"].append(total)
        kernels["dropped"].append(float(k.get("dropped", 0.0)))
        kernels["compiled_kernel"].append(bool(_last(k["nvtx"], COMPILED_RANGE_PREFIX)))
        report.samples += total
        report.dropped += float(k.get("dropped", 0.0))
        code = _code_rows(k["sass"], [int(pc) for pc, _, _ in k["samples"]])
        program = parse_program(code)
        sectors = _sectors_by_pc(k, code)
        where = {int(pc): (str(f), int(n)) for pc, f, n in k.get("source_lines", [])}
        for ins in program.instructions:
            sass["replay_id"].append(rid)
            sass["pc"].append(ins.pc)
            sass["text"].append(ins.text)
            sass["opcode"].append(ins.opcode)
            sass["space"].append(ins.space)
            sass["file"].append(where.get(ins.pc, ("", -1))[0])
            sass["line"].append(where.get(ins.pc, ("", -1))[1])
            sass["l2_sectors"].append(sectors.get(ins.pc, -1.0))
        triples = [(int(pc), str(reason), float(v)) for pc, reason, v in k["samples"]]
        for pc, reason, v in triples:
            samples["replay_id"].append(rid)
            samples["pc"].append(pc)
            samples["reason"].append(reason)
            samples["samples"].append(v)
        for b in blame(program, triples, sectors):
            blamed["replay_id"].append(rid)
            blamed["stalled_pc"].append(b.stalled_pc)
            blamed["blamed_pc"].append(b.blamed_pc)
            blamed["reason"].append(b.reason)
            blamed["samples"].append(b.samples)
            blamed["shifted"].append(b.shifted)
            blamed["unresolved"].append(b.unresolved)
    report.kernels = len(kernels["replay_id"])
    if report.dropped:
        report.warnings.append(f"ncu dropped {report.dropped:.0f} samples (its sample buffer overflowed)")
    tables = {
        "stall_kernels": pa.table(kernels, schema=STALL_KERNELS),
        "pc_samples": pa.table(samples, schema=PC_SAMPLES),
        "sass": pa.table(sass, schema=SASS),
        "blame": pa.table(blamed, schema=BLAME),
        "source_lines": build_source_lines(zip(sass["file"], sass["line"], strict=True)),
    }
    return tables, report


def build_stalls_pass(writer: PassWriter, raw: Path, signatures: Path | None) -> StallsReport:
    sigs = read_gz_json(signatures) if signatures is not None and signatures.exists() else None
    tables, report = build_stall_tables(read_gz_json(raw), sigs)
    for name, table in tables.items():
        writer.write_table(name, table)
    return report
