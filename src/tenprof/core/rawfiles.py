"""Names of the raw files a pass's child writes into `<profile>/<pass>/raw/`, and the names inside them
both sides must agree on: the capture side writes them, the launcher and the importers read them, so
each name is written down once."""

from pathlib import Path

STATUS_FILE = "child_status.json"
TRACE_FILE = "kineto_trace.json"  # the first part of the trace; a run that stopped torch.profiler to time
# steps un-profiled wrote one part per recording session: kineto_trace.json, kineto_trace.1.json, ...
CALLSITES_FILE = "callsites.json.gz"
SAVING_FILE = "saving"  # written by the child as it starts to save: it reacted to the signal that ended it
KILLED_FILE = "killed_unresponsive"  # written by the launcher before it kills a child that never began to save
CHECKS_FILE = "checks.json"
WORKER_SAMPLES_DIR = "workers"  # DataLoader workers' samples while they run (merged into CALLSITES_FILE)
TENSORS_FILE = "tensors.json.gz"
COUNTERS_OPS_FILE = "counters_ops.json.gz"
NCU_REPORT_BASE = "counters"  # ncu writes counters.ncu-rep
NCU_LOG_FILE = "ncu.log"
COUNTERS_FILE = "counters.json.gz"  # the report read into plain columns
STALLS_FILE = "stalls.json.gz"  # the SourceCounters report read into plain columns
COMPILED_CODE_FILE = "compiled_code.json.gz"  # torch.compile wrapper sources (tenprof.capture.compiled_code)
PROFILER_LOG_FILE = "profiler.log"  # the profiler library's own log lines, kept out of what the run shows
STEPPED_ASIDE_FILE = "stepped_aside.txt"  # why the timeline stopped early: the script started its own profiler
# the named ranges whose trace start the timeline pass brackets on the perf clock, to align the clocks
SYNC_PREFIX = "tenprof::clock_sync#"
# the GPU clock reader's float columns in the call-site log (tenprof.capture.gpu_clocks)
GPU_FLOAT_COLUMNS = (
    "sm_clock_mhz",
    "max_sm_clock_mhz",
    "memory_clock_mhz",
    "power_w",
    "power_limit_w",
    "temperature_c",
)


def later_trace_parts(raw_dir: Path) -> list[Path]:
    """The trace's parts after the first in `raw_dir`, in order: as written, or gzipped once imported."""
    parts: list[Path] = []
    while True:
        name = trace_part_name(len(parts) + 1)
        found = [raw_dir / n for n in (name, name + ".gz") if (raw_dir / n).is_file()]
        if not found:
            return parts
        parts.append(found[0])


def trace_part_name(index: int) -> str:
    """The file name of the trace's part `index` (0: TRACE_FILE)."""
    return TRACE_FILE if index == 0 else TRACE_FILE.replace(".json", f".{index}.json")
