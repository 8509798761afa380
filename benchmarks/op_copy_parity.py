"""Whether copying ops by launches (capture/op_copy.py) gives back what a recording had: its steps' ops taken
out and copied back from the steps kept, then rebuilt and compared.

    python benchmarks/op_copy_parity.py PROFILE KEPT_STEPS [OUT_DIR]
    e.g. python benchmarks/op_copy_parity.py tests/data/gpt2_bf16 0,1

PROFILE is a tenprof profile with its raw trace and call-site log (a native capture's, or a Kineto one's: the
call sites are moved onto the trace's clock for the copy and back). Every recorded step not in KEPT_STEPS loses
its op records and call sites, as a capture with the op callbacks off there would leave them; `copy_ops`
gives them back; the copy is rebuilt by the importer (in OUT_DIR, a temporary folder by default) and set
beside the recording: kernels with the same op, user line and step (count and share of kernel time), ops
with the same step, name, shapes, line and parent, and backward ops whose forward op is in their own step.
CPU only; seconds.
"""

from __future__ import annotations

import gzip
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import orjson

from tenprof.analyses.timeline.attribution_keys import kernel_keys, memory_keys, op_keys
from tenprof.capture.op_copy import NOT_COPIED_PREFIXES, OP_CATEGORIES, StepWindow, copy_ops
from tenprof.importers.timeline_import import build_pass
from tenprof.store.directory import is_profile_dir
from tenprof.store.meta import read_meta, write_meta
from tenprof.store.profile import Profile, load_profile
from tenprof.store.writer import PassWriter


def _windows(trace: dict[str, Any], profile: Profile) -> list[StepWindow]:
    """The recorded steps' ProfilerStep ranges on the host, on the trace's clock (ns)."""
    steps = profile.table("steps")
    recorded = dict(zip(steps.column("step").to_pylist(), steps.column("capture_on").to_pylist(), strict=True))
    windows = []
    for e in trace["traceEvents"]:
        name = str(e.get("name", ""))
        if e.get("ph") == "X" and e.get("cat") == "user_annotation" and name.startswith("ProfilerStep#"):
            step = int(name.split("#")[1])
            if recorded.get(step) is not False:
                windows.append(StepWindow(step, round(e["ts"] * 1000), round((e["ts"] + e["dur"]) * 1000)))
    return windows


def main() -> None:
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    source, kept = Path(sys.argv[1]), {int(s) for s in sys.argv[2].split(",")}
    out = Path(sys.argv[3]) if len(sys.argv) > 3 else Path(tempfile.mkdtemp(prefix="tenprof-opcopy-")) / "copy"
    if out.exists() and not is_profile_dir(out):  # replaced below: only a profile, never anything else
        raise SystemExit(f"{out} exists and is not a tenprof profile: give another OUT_DIR")
    stored = load_profile(source)
    raw = source / "timeline" / "raw"
    trace = orjson.loads(gzip.decompress((raw / "kineto_trace.json.gz").read_bytes()))
    sidecar = orjson.loads(gzip.decompress((raw / "callsites.json.gz").read_bytes()))
    base = int(trace.get("baseTimeNanoseconds", 0))
    # the call sites are on the perf clock; a Kineto trace's times are its clock's less its base time
    shift = (stored.meta.timeline.clock_offset_ns or 0) - base if base else 0
    windows = _windows(trace, stored)
    dropped = [w for w in windows if w.step not in kept]

    def in_dropped(ns: float) -> bool:
        return any(w.start_ns <= ns <= w.end_ns for w in dropped)

    events = [
        e
        for e in trace["traceEvents"]
        if not (
            e.get("ph") == "X"
            and e.get("cat") in OP_CATEGORIES
            and not str(e.get("name", "")).startswith(NOT_COPIED_PREFIXES)
            and in_dropped(e["ts"] * 1000)
        )
    ]
    calls = {k: list(v) for k, v in sidecar["calls"].items()}
    calls["start_ns"] = [t + shift for t in calls["start_ns"]]
    calls["end_ns"] = [t + shift for t in calls["end_ns"]]
    keep = [i for i, start in enumerate(calls["start_ns"]) if not in_dropped(start)]
    calls = {k: [v[i] for i in keep] for k, v in calls.items()}
    copied, copied_calls, report = copy_ops(events, calls, windows, kept & {w.step for w in windows})
    print(f"{source}: steps {[w.step for w in windows]}, kept {sorted(kept)}")
    taken = len(sidecar["calls"]["start_ns"]) - len(keep)
    print(f"  taken out {len(trace['traceEvents']) - len(events)} ops, {taken} call sites")
    into = sorted({step for step, _, _ in report.copied})
    print(f"  copied {report.ops} ops, {report.calls} call sites into {into}; unmatched {report.unmatched}")
    trace["traceEvents"] = events + copied
    rows = sorted(zip(*(calls[k] + copied_calls[k] for k in calls), strict=True), key=lambda r: r[1])
    sidecar["calls"] = {k: [row[j] - (shift if k.endswith("_ns") else 0) for row in rows] for j, k in enumerate(calls)}
    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(source, out)
    (out / "timeline" / "raw" / "kineto_trace.json.gz").write_bytes(gzip.compress(orjson.dumps(trace)))
    (out / "timeline" / "raw" / "callsites.json.gz").write_bytes(gzip.compress(orjson.dumps(sidecar)))
    writer = PassWriter(out, "timeline")
    shutil.copytree(out / "timeline" / "raw", writer.tmp_dir / "raw")
    build_pass(writer, writer.tmp_dir / "raw" / "kineto_trace.json.gz", writer.tmp_dir / "raw" / "callsites.json.gz")
    writer.commit()
    meta = read_meta(out)
    meta.passes["timeline"].rows = writer.rows
    write_meta(out, meta)
    rebuilt = load_profile(out)
    a, b = kernel_keys(stored), kernel_keys(rebuilt)
    same = [x[:3] == y[:3] for x, y in zip(a, b, strict=True)]
    share = sum(x[3] for x, s in zip(a, same, strict=True) if s) / max(1, sum(x[3] for x in a))
    print(f"  kernels {len(a)}: {sum(same)} with the same op, line and step, {100 * share:.4f}% of kernel time")
    oa, ob = op_keys(stored), op_keys(rebuilt)
    print(f"  ops {sum(oa.values())} / {sum(ob.values())}: {sum((oa - ob).values())} of the recording's not alike")
    ma, mb = memory_keys(stored), memory_keys(rebuilt)
    alike = sum(x == y for x, y in zip(ma, mb, strict=True))
    print(f"  allocator reports {len(ma)}: {alike} in the same op (name, line, step) as recorded")
    ops = rebuilt.table("ops").to_pydict()
    forward = [(i, f) for i, f in enumerate(ops["forward_op_id"]) if f >= 0]
    own = sum(ops["step"][i] == ops["step"][f] for i, f in forward)
    print(f"  backward ops with a forward op: {len(forward)}, in their own step {own}")


if __name__ == "__main__":
    main()
