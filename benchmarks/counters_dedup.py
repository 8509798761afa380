"""What replaying one kernel per signature saves: the counters pass with and without de-duplication.

    python benchmarks/counters_dedup.py run --mode dedup --json dedup.json [script args...]
    python benchmarks/counters_dedup.py run --mode all --json all.json [script args...]
    python benchmarks/counters_dedup.py compare dedup.json all.json

`run --mode dedup` is `tenprof run --passes timeline,counters` (one replay per kernel signature);
`run --mode all` is `tenprof run --passes counters --counters-all` (every kernel replayed). Each writes a
small summary (kernels, replays, the counters pass's wall time, every replay's metrics by signature), so
the two can run in separate sessions of the same card. `compare` prints how many fewer replays and how
much less time de-duplication took, and how far the de-duplicated metrics are from every duplicate's own
replay, per kernel and summed per op. The default script is GPT-2 small, one training step.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from tenprof.store.profile import load_profile

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = [str(ROOT / "examples" / "gpt2_train.py"), "--steps", "1", "--warmup", "0"]
COMPARED = ("duration_ns", "dram_read_bytes", "dram_write_bytes", "instructions", "sm_throughput_pct")


def run(mode: str, out: Path, json_path: Path, script: list[str]) -> None:
    passes = ["--passes", "timeline,counters"] if mode == "dedup" else ["--passes", "counters", "--counters-all"]
    cmd = [sys.executable, "-m", "tenprof", "run", "--quiet", "--force", *passes, "-o", str(out), *script]
    started = time.perf_counter()
    done = subprocess.run(cmd, check=False)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed with {done.returncode}")
    summarize(mode, out, json_path, cmd, wall)


def summarize(mode: str, out: Path, json_path: Path, cmd: list[str], wall: float) -> None:
    """The summary of a profile made by either mode (also one cut short by a time limit: partial)."""
    profile = load_profile(out)
    sigs = {r["signature_id"]: r for r in profile.table("counter_signatures").to_pylist()}
    replays = []
    for row in profile.table("kernel_metrics").to_pylist():
        sig = sigs.get(row["signature_id"], {})
        key = [
            sig.get("op", ""),
            sig.get("shapes", ""),
            sig.get("dtypes", ""),
            row["name"],
            row["grid_size"],
            row["block_size"],
        ]
        replays.append({"key": key, **{m: row[m] for m in COMPARED}})
    summary = {
        "mode": mode,
        "command": cmd,
        "wall_s": wall,
        "counters_pass_s": profile.meta.passes["counters"].duration_s,
        "counters_pass_state": profile.meta.passes["counters"].state,
        "timeline_kernels": profile.table("kernels").num_rows,
        "op_instances": sum(int(s["count"]) for s in sigs.values()),
        "signatures": len(sigs),
        "replays": len(replays),
        "replay_rows": replays,
    }
    json_path.write_text(json.dumps(summary))
    print(json.dumps({k: v for k, v in summary.items() if k != "replay_rows"}, indent=2))


def compare(dedup_path: Path, all_path: Path) -> dict[str, Any]:
    dedup = json.loads(dedup_path.read_text())
    full = json.loads(all_path.read_text())
    rep: dict[tuple[Any, ...], dict[str, Any]] = {}
    for r in dedup["replay_rows"]:
        rep.setdefault(tuple(r["key"]), r)
    rel: dict[str, list[float]] = defaultdict(list)
    per_op: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(lambda: [0.0, 0.0]))
    unmatched = 0
    for row in full["replay_rows"]:
        r = rep.get(tuple(row["key"]))
        if r is None:
            unmatched += 1
            continue
        for m in COMPARED:
            a, b = float(r[m] or 0.0), float(row[m] or 0.0)
            if b:
                rel[m].append(abs(a - b) / abs(b))
            per_op[row["key"][0]][m][0] += a
            per_op[row["key"][0]][m][1] += b
    op_rel = {
        m: statistics.median(abs(v[m][0] - v[m][1]) / v[m][1] for v in per_op.values() if v[m][1]) for m in COMPARED
    }
    result = {
        "replays_dedup": dedup["replays"],
        "replays_all": full["replays"],
        "fewer_replays": full["replays"] / max(dedup["replays"], 1),
        "counters_pass_s_dedup": dedup["counters_pass_s"],
        "counters_pass_s_all": full["counters_pass_s"],
        "less_time": full["counters_pass_s"] / max(dedup["counters_pass_s"], 1e-9),
        "timeline_kernels": dedup["timeline_kernels"],
        "op_instances": dedup["op_instances"],
        "signatures": dedup["signatures"],
        "replays_of_the_full_run_without_a_representative": unmatched,
        "per_kernel_median_rel_diff": {m: statistics.median(v) for m, v in rel.items() if v},
        "per_kernel_p90_rel_diff": {m: sorted(v)[int(0.9 * (len(v) - 1))] for m, v in rel.items() if v},
        "per_op_median_rel_diff": op_rel,
    }
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run")
    r.add_argument("--mode", choices=("dedup", "all"), required=True)
    r.add_argument("--json", required=True)
    r.add_argument("--out", default="")
    s = sub.add_parser("summarize", help="summarize a profile made by tenprof run directly")
    s.add_argument("--mode", choices=("dedup", "all"), required=True)
    s.add_argument("--json", required=True)
    s.add_argument("--out", required=True)
    c = sub.add_parser("compare")
    c.add_argument("dedup")
    c.add_argument("all")
    args, script = parser.parse_known_args()
    if args.command == "run":
        out = Path(args.out or f"/tmp/tenprof-counters-{args.mode}")
        run(args.mode, out, Path(args.json), script or DEFAULT)
    elif args.command == "summarize":
        summarize(args.mode, Path(args.out), Path(args.json), [], 0.0)
    else:
        print(json.dumps(compare(Path(args.dedup), Path(args.all)), indent=2))


if __name__ == "__main__":
    main()
