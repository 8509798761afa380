"""Names of the raw files a pass's child writes into `<profile>/<pass>/raw/`: the capture side writes
them, the launcher and the importers read them, so each name is written down once."""

STATUS_FILE = "child_status.json"
TRACE_FILE = "kineto_trace.json"
CALLSITES_FILE = "callsites.json.gz"
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
