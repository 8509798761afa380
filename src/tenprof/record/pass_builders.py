"""Each pass's raw recording -> its tables and status (for `tenprof run` and `tenprof.profile()`).

torch-free. A bad recording gives a failed status saying what went wrong, in words a user can act on;
the raw files stay where they are; only bugs raise.
"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

from tenprof.capture.ncu_runner import find_ncu, permission_problem
from tenprof.core.ncu_names import METRICS
from tenprof.core.rawfiles import (
    CALLSITES_FILE,
    CHECKS_FILE,
    COMPILED_CODE_FILE,
    COUNTERS_FILE,
    COUNTERS_OPS_FILE,
    NCU_LOG_FILE,
    NCU_REPORT_BASE,
    STALLS_FILE,
    STEPPED_ASIDE_FILE,
    TENSORS_FILE,
    TRACE_FILE,
    later_trace_parts,
)
from tenprof.errors import TenprofError
from tenprof.importers.accesses_import import access_files, build_accesses_pass
from tenprof.importers.compiled_import import write_compiled_kernels
from tenprof.importers.counters_import import build_counters_pass, expected_replays, write_gz_json
from tenprof.importers.formats.ncu_report_reader import read_report, read_source_counters
from tenprof.importers.stalls_import import build_stalls_pass
from tenprof.importers.tensors_import import build_tensors_pass
from tenprof.importers.timeline_import import build_pass, note_failed_allocation
from tenprof.store.meta import Meta, PassStatus
from tenprof.store.profile import load_profile
from tenprof.store.schema import Pass
from tenprof.store.writer import PassWriter


def finish_tensors(writer: PassWriter, raw_dir: Path, meta: Meta, child_error: str, cut_short: str) -> PassStatus:
    """Raw tensors file -> tables; the caching allocator's totals go to meta.checks["tensors"]."""
    raw = raw_dir / TENSORS_FILE
    pass_status = PassStatus(state="failed")
    if not raw.exists():
        pass_status.reason = child_error or ("no tensors were written" + (f"; {cut_short}" if cut_short else ""))
        return pass_status
    try:
        report = build_tensors_pass(writer, raw)
    except TenprofError as exc:
        pass_status.reason = f"the tensors recording could not be read: {exc}"
        return pass_status
    pass_status.state = "partial" if cut_short or report.warnings else "complete"
    notes = ([f"cut short: {cut_short}"] if cut_short else []) + report.warnings
    if report.unseen_creators:
        notes.append(
            f"{report.unseen_creators} tensors were first seen as inputs: made before recording began or where no "
            "dispatch hook sees (inside torch.compile graphs, CUDA-graph replays)"
        )
    pass_status.reason = "; ".join(notes)
    if report.cuda_memory:
        meta.checks["tensors"] = {k: float(v) for k, v in report.cuda_memory.items()}
    return pass_status


def expected_replays_of(out_dir: Path) -> int:
    """Kernel signatures in this profile's timeline, for the counters progress line (0: unknown)."""
    try:
        profile = load_profile(out_dir)
        if not profile.has_pass(Pass.TIMELINE):
            return 0
        return expected_replays(profile.table("kernels"), profile.table("ops"))
    except Exception:  # only an estimate
        return 0


def _ncu_report_or_reason(raw_dir: Path, child_error: str) -> tuple[Path | None, str]:
    report_path = raw_dir / f"{NCU_REPORT_BASE}.ncu-rep"
    if report_path.exists():
        return report_path, ""
    log = (raw_dir / NCU_LOG_FILE).read_text(errors="replace") if (raw_dir / NCU_LOG_FILE).exists() else ""
    problem = permission_problem(log) or child_error or "ncu wrote no report"
    last = [line for line in log.splitlines() if line.startswith("==ERROR==")][-1:]
    return None, problem + (f" ({last[0]})" if last and last[0] not in problem else "")


def finish_stalls(writer: PassWriter, report_dir: Path, ncu: str, child_error: str, cut_short: str) -> PassStatus:
    """SourceCounters report -> plain columns (raw/stalls.json.gz) -> samples, SASS and blame tables.

    `report_dir` holds ncu's report and the child's signature table: this pass's own raw folder, or the
    counters pass's when one ncu run served both."""
    pass_status = PassStatus(state="failed")
    report_path, reason = _ncu_report_or_reason(report_dir, child_error)
    if report_path is None:
        pass_status.reason = reason
        return pass_status
    raw_dir = writer.tmp_dir / "raw"
    raw_dir.mkdir(exist_ok=True)
    try:
        write_gz_json(raw_dir / STALLS_FILE, read_source_counters(report_path, find_ncu(ncu)))
        report = build_stalls_pass(writer, raw_dir / STALLS_FILE, report_dir / COUNTERS_OPS_FILE)
    except TenprofError as exc:
        pass_status.reason = f"the ncu report could not be read: {exc}"
        return pass_status
    summary = f"{report.kernels} kernels sampled, {report.samples:.0f} warp samples"
    return _built(cut_short, [*report.warnings, summary])


def finish_counters(
    writer: PassWriter, raw_dir: Path, out_dir: Path, ncu: str, child_error: str, cut_short: str
) -> PassStatus:
    """ncu's report -> plain columns (raw/counters.json.gz) -> tables, matched to the timeline's kernels."""
    pass_status = PassStatus(state="failed")
    report_path, reason = _ncu_report_or_reason(raw_dir, child_error)
    if report_path is None:
        pass_status.reason = reason
        return pass_status
    try:
        write_gz_json(raw_dir / COUNTERS_FILE, read_report(report_path, list(METRICS), find_ncu(ncu)))
        profile = load_profile(out_dir)
        timeline = (
            {"kernels": profile.table("kernels"), "ops": profile.table("ops")}
            if profile.has_pass(Pass.TIMELINE)
            else None
        )
        report = build_counters_pass(writer, raw_dir / COUNTERS_FILE, raw_dir / COUNTERS_OPS_FILE, timeline)
    except TenprofError as exc:
        pass_status.reason = f"the ncu report could not be read: {exc}"
        return pass_status
    return _built(
        cut_short, [*report.warnings, f"{report.replays} kernels replayed for {report.signatures} op signatures"]
    )


def finish_accesses(writer: PassWriter, tensors_raw: Path, pid: int, cut_short: str) -> PassStatus:
    """The access tool's files (written into the tensors pass's raw folder by process `pid`) -> tables.

    The files move into this pass's raw folder; files of other processes (the script's own children,
    should the tool have started there) are removed."""
    raw_dir = writer.tmp_dir / "raw"
    raw_dir.mkdir(exist_ok=True)
    for path in access_files(tensors_raw, pid):
        if path.exists():
            shutil.move(str(path), raw_dir / path.name)
    for stray in tensors_raw.glob("access-*"):
        stray.unlink()
    launches_file, _, log_file = access_files(raw_dir, pid)
    if not launches_file.exists():
        problems = log_file.read_text(errors="replace").strip().splitlines()[:1] if log_file.exists() else []
        return PassStatus(state="failed", reason=problems[0] if problems else "the access tool recorded nothing")
    report = build_accesses_pass(writer, raw_dir, pid)
    records = access_files(raw_dir, pid)[1]
    if records.exists():
        _compress(records)  # what the tables were built from stays, smaller
    notes = [f"{report.launches} kernel launches, {report.records} access records for {report.accesses} warp accesses"]
    if report.dropped_weight:
        notes.append(f"{report.dropped_weight} warp accesses not recorded (the per-launch buffer was full)")
    notes += [f"access tool: {p}" for p in report.problems[:3]]
    return _built(cut_short, notes)


def _built(cut_short: str, notes: list[str]) -> PassStatus:
    """The status of a pass whose tables were written: partial when the script was cut short."""
    return PassStatus(
        state="partial" if cut_short else "complete",
        reason="; ".join([*([f"cut short: {cut_short}"] if cut_short else []), *notes]),
    )


def finish_timeline(writer: PassWriter, raw_dir: Path, meta: Meta, child_error: str, schedule: str) -> PassStatus:
    """Raw recording -> tables, for `tenprof run` and `tenprof.profile()` alike. A bad recording gives a
    failed status saying what went wrong (the raw files stay where they are); only bugs raise."""
    trace = raw_dir / TRACE_FILE
    pass_status = PassStatus(state="failed", started_at=meta.created_at)
    if child_error and not trace.exists():
        pass_status.reason = child_error
    elif not trace.exists():
        pass_status.reason = (
            "no trace was written"
            + (
                " (the --schedule's active steps were never reached; does the script call tenprof.step()?)"
                if schedule
                else ""
            )
            + (f"; {meta.run.cut_short_reason}" if meta.run.cut_short_reason else "")
        )
    else:
        try:
            later_parts = later_trace_parts(raw_dir)
            report = build_pass(writer, trace, raw_dir / CALLSITES_FILE, later_parts=later_parts)
            unread = write_compiled_kernels(writer, raw_dir / COMPILED_CODE_FILE, report.triton_launches)
            report.warnings += [unread] if unread else []
            aside = raw_dir / STEPPED_ASIDE_FILE
            stepped_aside = [aside.read_text().strip()] if aside.exists() else []
            pass_status.state = "partial" if meta.run.cut_short or stepped_aside else "complete"
            pass_status.reason = "; ".join(
                ([f"cut short: {meta.run.cut_short_reason}"] if meta.run.cut_short else [])
                + stepped_aside
                + report.warnings
            )
            meta.timeline.trace_span_ns = report.span_ns
            meta.timeline.clock_offset_ns = report.clock_offset_ns
            meta.timeline.clock_uncertainty_ns = report.clock_uncertainty_ns
            meta.timeline.timed_steps_gpu = report.timed_steps_gpu
            meta.timeline.input_sampling = report.input_sampling
            meta.timeline.op_copy = report.op_copy
            note_failed_allocation(meta, report)
            for part in (trace, *later_parts):
                _compress(part)
        except TenprofError as exc:
            pass_status.reason = f"the trace could not be imported: {exc}"
    if (raw_dir / CHECKS_FILE).exists():
        meta.checks = json.loads((raw_dir / CHECKS_FILE).read_text())
    return pass_status


def _compress(path: Path) -> None:
    with path.open("rb") as src, gzip.open(str(path) + ".gz", "wb", compresslevel=1) as dst:
        shutil.copyfileobj(src, dst, length=1 << 20)
    path.unlink()
