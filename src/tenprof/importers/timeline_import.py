"""Build the timeline pass of a profile from a Kineto trace (+ sidecar), for `run` and `import` alike.

An event whose time or duration cannot be right (not a number, negative, beyond any clock) is left
out, counted, and said in one line of the pass's warnings (meta.json's timeline reason, which the
report shows); a trace where such events are the majority is refused. An import stopped by Ctrl-C or
an error leaves nothing behind (`import_output`); the rank a trace names is kept in meta.json."""

from __future__ import annotations

import datetime as dt
import gc
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tenprof.core.version import VERSION
from tenprof.errors import TraceFormatError
from tenprof.importers.callsites import read_callsites
from tenprof.importers.compiled_import import write_compiled_kernels
from tenprof.importers.formats.kineto_reader import TraceStream, compression, valid_rank
from tenprof.importers.interrupts import sigint_ignored
from tenprof.importers.timeline_builder import BuildReport, build_timeline
from tenprof.importers.timeline_columns import Collector
from tenprof.store.directory import open_output_dir
from tenprof.store.meta import GpuInfo, Meta, OutOfMemory, PassStatus, TimelineInfo, write_meta
from tenprof.store.schema import Pass
from tenprof.store.writer import PassWriter

# Below these sizes a pool of processes costs more to start than it saves (a JSON trace of 64 MB takes
# about half a second to read in one process; compressed files hold about 8x their size in JSON).
_PARALLEL_FROM_BYTES = 64 << 20
_PARALLEL_FROM_COMPRESSED_BYTES = 8 << 20


def import_workers(trace: Path) -> int:
    """How many processes read `trace`: TENPROF_IMPORT_WORKERS when set, else one per core (at most 4)
    for a large trace and 1 for a small one."""
    asked = os.environ.get("TENPROF_IMPORT_WORKERS", "")
    if asked.isdigit():
        return max(1, int(asked))
    try:
        size = trace.stat().st_size
        compressed = compression(trace) is not None
    except OSError:
        return 1
    if size < (_PARALLEL_FROM_COMPRESSED_BYTES if compressed else _PARALLEL_FROM_BYTES):
        return 1
    return max(1, min(4, os.cpu_count() or 1))


@contextmanager
def _without_cycle_collection() -> Iterator[None]:
    """The build allocates millions of objects and no reference cycles: the cycle collector would walk
    them again at every threshold, 15% of a large import's time, and free nothing."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def build_pass(
    writer: PassWriter,
    trace: Path,
    callsites: Path | None,
    max_workers: int | None = None,
    later_parts: list[Path] | None = None,
) -> BuildReport:
    """Stream `trace`, join with `callsites` when given, and write every timeline table, reading the trace
    in `import_workers` processes (at most `max_workers`). `later_parts`: the parts of the same recording
    that sessions started later wrote (a run that stopped the profiler for the steps it times), joined on."""
    stream = TraceStream(trace)
    sidecar = None
    problems = []
    if callsites is not None and callsites.exists():
        try:
            sidecar = read_callsites(callsites)
        except TraceFormatError as exc:  # the trace alone still gives ops, kernels and copies
            problems.append(f"Python lines are missing: {exc}")
    # the trace file's time is the recording's: a source edited after it is not quoted as the run's
    recorded = trace.stat().st_mtime if trace.exists() else None
    with _without_cycle_collection():
        workers = import_workers(trace)
        collector = stream.collect(workers if max_workers is None else min(workers, max_workers))
        for part in later_parts or []:
            later = TraceStream(part)
            collected = later.collect(workers if max_workers is None else min(workers, max_workers))
            collector.append_part(collected, (later.header.base_time_ns - stream.header.base_time_ns) / 1000.0)
        left_out = _drop_bad_times(collector, trace)
        report = build_timeline(collector, stream.header.base_time_ns, writer.write_table, sidecar, recorded)
    if left_out:
        problems.append(left_out)
        report.changed.insert(0, left_out)
    report.warnings[:0] = problems
    report.device_properties = stream.header.device_properties
    report.recorded = [k for k in TRACE_RECORDING_KEYS if stream.header.other.get(k)]
    info = stream.header.other.get("distributedInfo")  # before the events or, in older traces, after them
    report.rank = valid_rank(info.get("rank")) if isinstance(info, dict) else None
    return report


def _drop_bad_times(collector: Collector, trace: Path) -> str:
    """Leave out the events whose times cannot be right (`Collector.drop_bad_times`); the line that says
    so ('' when none were), or TraceFormatError when they are the majority: then it is no trace to judge."""
    timed = collector.timed_events
    left_out = collector.drop_bad_times()
    bad = sum(left_out.values())
    if not bad:
        return ""
    reasons = ", ".join(f"{n} with {why}" for why, n in sorted(left_out.items(), key=lambda item: -item[1]))
    if 2 * bad > timed:
        raise TraceFormatError(
            f"{trace}: {bad} of its {timed} events have times that cannot be right ({reasons}); not a trace "
            "tenprof can judge"
        )
    if len(left_out) > 1:
        return f"{bad} events were left out: {reasons}"
    (why,) = left_out
    return f"{bad} event{'s' if bad > 1 else ''} with {why} {'were' if bad > 1 else 'was'} left out"


# Top-level keys torch.profiler writes into its trace for the options it was given: what the capture
# recorded, and so what it cost (tenprof.analyses.timeline.overhead's estimate).
TRACE_RECORDING_KEYS = ("record_shapes", "profile_memory", "with_stack", "with_flops", "with_modules")


def gpus_from_device_properties(props: list[dict[str, Any]]) -> list[GpuInfo]:
    gpus: list[GpuInfo] = []
    for p in props:
        try:
            gpus.append(
                GpuInfo(
                    index=int(p.get("id", len(gpus))),
                    name=str(p.get("name", "")),
                    total_memory_bytes=int(p.get("totalGlobalMem", 0)),
                    compute_capability=f"{p.get('computeMajor', '')}.{p.get('computeMinor', '')}",
                    sm_count=int(p.get("numSms", 0)),
                )
            )
        except (TypeError, ValueError):
            continue
    return gpus


def now_iso() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


@contextmanager
def import_output(
    source_file: Path, out_dir: Path, force: bool, source: str, pass_name: str
) -> Iterator[tuple[Path, Meta]]:
    """Check the input is a file, make the output directory (a staging one when replacing a profile),
    write meta.json with the pass running, and yield (where to write, meta).

    When the block raises, everything this import made is removed, so the output directory is as it was
    and a retry is not blocked (a Ctrl-C included); when it ends, the new profile is put in place
    (`OutputDirectory.commit`). Making, committing and removing are not stopped half-way by a Ctrl-C."""
    if not source_file.exists():
        raise TraceFormatError(f"{source_file}: no such file")
    if source_file.is_dir():
        raise TraceFormatError(f"{source_file} is a directory; give the trace (or report) file itself")
    with sigint_ignored():
        output = open_output_dir(out_dir, force)
    meta = Meta(
        tenprof_version=VERSION,
        created_at=now_iso(),
        source=source,
        command=[str(source_file)],
        timeline=TimelineInfo(lines=False),  # an imported file holds no call-site lines of tenprof's
    )
    meta.passes[pass_name] = PassStatus(state="running", started_at=meta.created_at)
    try:
        write_meta(output.path, meta)
        yield output.path, meta
    except BaseException:
        with sigint_ignored():
            output.discard()
        raise
    with sigint_ignored():
        output.commit()


def import_trace(
    trace: Path, out_dir: Path, force: bool, max_workers: int | None = None, rank: int | None = None
) -> Meta:
    """`tenprof import`: a torch.profiler / Kineto trace the user already has -> a profile directory.
    `max_workers`: at most so many processes read the trace (see `build_pass`); `rank`: the rank it is
    imported as (a folder's), else the one the trace names, if any."""
    with import_output(trace, out_dir, force, "import", Pass.TIMELINE) as (path, meta):
        started = time.perf_counter()
        writer = PassWriter(path, Pass.TIMELINE)
        report = build_pass(writer, trace, None, max_workers)
        write_compiled_kernels(writer, None, report.triton_launches)
        writer.commit()
        meta.gpus = gpus_from_device_properties(report.device_properties)
        named = rank if rank is not None else report.rank
        meta.rank = named if named is not None else -1
        meta.passes[Pass.TIMELINE] = PassStatus(
            # what the build left out of the trace or changed in it makes the pass partial: the report says why
            state="partial" if report.changed else "complete",
            reason="; ".join(report.warnings),
            started_at=meta.created_at,
            duration_s=time.perf_counter() - started,
            rows=writer.rows,
        )
        meta.timeline.trace_span_ns = report.span_ns
        meta.timeline.trace_recorded = list(report.recorded)
        note_failed_allocation(meta, report)
        write_meta(path, meta)
    return meta


def note_failed_allocation(meta: Meta, report: BuildReport) -> None:
    """The last allocation the trace says failed (an "[OutOfMemory]" event; the one that ended a run that
    died of it): when it failed, into the run's out-of-memory error where the capture kept one, else as one
    (an imported trace: the script may have caught the error and gone on)."""
    if not report.failed_allocations:
        return
    last = report.failed_allocations[-1]
    known = meta.run.out_of_memory
    if known is None:
        kind, _, index = last.device.partition(":")
        meta.run.out_of_memory = known = OutOfMemory(
            message=f"the trace holds {len(report.failed_allocations)} allocation(s) that failed "
            f"([OutOfMemory] events), the last of {last.bytes} bytes on {last.device}",
            device=int(index) if kind == "cuda" and index else -1,
            device_type=kind,
            requested_bytes=last.bytes,
        )
    known.at_ns = last.ts_ns
    if known.allocated_bytes < 0:
        known.allocated_bytes, known.reserved_bytes = last.allocated_bytes, last.reserved_bytes
