"""The native capture (`tenprof run --capture native`) against the default one on the same script: what each
records and whether they attribute it alike.

    [PARITY_CAPTURES=REFERENCE,CANDIDATE] python benchmarks/native_parity.py OUT_DIR SCRIPT [ARGS...]

Runs the script under each of the two captures (by default `default,native`; `native-cupti` is the native
capture with tenprof's own CUPTI client), then prints, per capture: ops, kernels and kernel time, in all and step
by step; and between them: the kernels with the same (kernel name, op, file:line) in both, as a share of the
kernel keys, the launches and the kernel time (issue 38's parity: counts equal, GPU totals within 0.1%, the
same op and line for at least 99.9% of kernel time), the ops with the same (name, input shapes, file:line)
and the allocator samples with the same (op, file:line, bytes), with the keys that differ most, and each
device's peak allocated; once over every step and once over the steps after the first two ("steady":
torch.compile compiles and autotunes in the first, and how many benchmark launches its autotuning makes
depends on timings). Each run compiles from an empty Inductor and Triton cache of its own (a new folder in
OUT_DIR), so that the second does not skip the compilation the first did. Runs are not timed here
(benchmarks/overhead.py).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from tenprof.store.profile import Profile, load_profile

CAPTURES = {"default": [], "native": ["--capture", "native"], "native-cupti": ["--capture", "native-cupti"]}
STEADY_FROM = 2  # the first step of the "steady" comparison
DIFFERENCES_SHOWN = 8


def record(out: Path, capture: str, script: list[str]) -> Profile:
    target = out / capture
    # new and empty: each run compiles (and autotunes) what it runs; nothing already in OUT_DIR is removed
    caches = Path(tempfile.mkdtemp(prefix=f"cache_{capture}_", dir=out))
    env = {
        **os.environ,
        "TORCHINDUCTOR_CACHE_DIR": str(caches / "inductor"),
        "TRITON_CACHE_DIR": str(caches / "triton"),
    }
    argv = [sys.executable, "-m", "tenprof", "run", "--quiet", "--force", *CAPTURES[capture], "-o", str(target)]
    subprocess.run([*argv, *script], check=True, env=env)
    return load_profile(target)


def _where(profile: Profile) -> list[str]:
    """Each op's innermost frame as file:line ('' without one)."""
    frames = profile.table("frames")
    files, lines = frames.column("file").to_pylist(), frames.column("line").to_pylist()
    return [f"{Path(files[f]).name}:{lines[f]}" if f >= 0 else "" for f in profile.column("ops", "frame_id")]


def _kernel_steps(profile: Profile) -> list[int]:
    """Each kernel's step: its op's (-1 without an op)."""
    steps = profile.column("ops", "step").tolist()
    return [steps[op] if op >= 0 else -1 for op in profile.column("kernels", "op_id").tolist()]


def kernel_keys(profile: Profile, by_count: bool = False, first_step: int = -1) -> Counter[tuple[str, str, str]]:
    """(kernel name, op name, op's file:line) -> kernel time, ns (or, `by_count`, launches), of the kernels of
    the steps from `first_step` on (every kernel when it is -1)."""
    ops = profile.table("ops")
    names, where = ops.column("name").to_pylist(), _where(profile)
    kernels = profile.table("kernels")
    keys: Counter[tuple[str, str, str]] = Counter()
    columns = zip(*(kernels.column(c).to_pylist() for c in ("name", "op_id", "start_ns", "end_ns")), strict=True)
    for (name, op, start, end), step in zip(columns, _kernel_steps(profile), strict=True):
        if first_step < 0 or step >= first_step:
            keys[(name, names[op] if op >= 0 else "", where[op] if op >= 0 else "")] += 1 if by_count else end - start
    return keys


def op_keys(profile: Profile, first_step: int = -1) -> Counter[tuple[str, str, str]]:
    """(op name, input shapes, file:line) -> count, of the steps from `first_step` on (all when it is -1)."""
    ops = profile.table("ops")
    names, shapes, steps = (ops.column(c).to_pylist() for c in ("name", "input_shapes", "step"))
    keys = zip(names, shapes, _where(profile), strict=True)
    return Counter(key for key, step in zip(keys, steps, strict=True) if first_step < 0 or step >= first_step)


def memory_keys(profile: Profile, first_step: int = -1) -> Counter[tuple[str, str, str]]:
    """(op name, op's file:line, bytes as text) -> allocator samples (allocations and frees), of the steps
    from `first_step` on (all when it is -1); samples outside ops under ("", "", bytes)."""
    ops, memory = profile.table("ops"), profile.table("memory")
    names, steps, where = ops.column("name").to_pylist(), ops.column("step").to_pylist(), _where(profile)
    keys: Counter[tuple[str, str, str]] = Counter()
    for op, size in zip(memory.column("op_id").to_pylist(), memory.column("bytes").to_pylist(), strict=True):
        if first_step < 0 or (op >= 0 and steps[op] >= first_step):
            keys[(names[op], where[op], str(size)) if op >= 0 else ("", "", str(size))] += 1
    return keys


def peak_allocated(profile: Profile) -> dict[str, int]:
    """The highest total allocated of each device the allocator samples name ("cpu", "cuda:0")."""
    memory = profile.table("memory")
    peaks: dict[str, int] = {}
    columns = (memory.column(c).to_pylist() for c in ("device_type", "device", "total_allocated_bytes"))
    for kind, device, total in zip(*columns, strict=True):
        name = str(kind) if device < 0 else f"{kind}:{device}"
        peaks[name] = max(peaks.get(name, 0), total)
    return peaks


def overlap(a: Counter[tuple[str, str, str]], b: Counter[tuple[str, str, str]]) -> float:
    """The share of a's total that b has under the same key."""
    total = sum(a.values())
    return sum(min(v, b.get(k, 0)) for k, v in a.items()) / total if total else 1.0


def print_differences(
    label: str, default: Counter[tuple[str, str, str]], native: Counter[tuple[str, str, str]]
) -> None:
    """The keys whose counts differ most between the captures (at most DIFFERENCES_SHOWN)."""
    keys = sorted(set(default) | set(native), key=lambda k: (-abs(default[k] - native[k]), k))
    for key in keys[:DIFFERENCES_SHOWN]:
        if default[key] != native[key]:
            print(f"  {label} first {default[key]:6d} second {native[key]:6d}  " + " | ".join(key)[:200])


def print_steps(profiles: dict[str, Profile]) -> None:
    """Per step (-1: kernels without an op): each capture's ops, kernels and kernel time; then each
    capture's step times (one run each, not a measurement of cost: the first step's start-up shows)."""
    rows: dict[int, list[str]] = {}
    for column, profile in enumerate(profiles.values()):
        ops = Counter(profile.column("ops", "step").tolist())
        kernels: Counter[int] = Counter()
        time_ns: Counter[int] = Counter()
        durations = profile.column("kernels", "duration_ns").tolist()
        for step, duration in zip(_kernel_steps(profile), durations, strict=True):
            kernels[step] += 1
            time_ns[step] += duration
        for step in set(ops) | set(kernels):
            row = rows.setdefault(step, [f"{'-':>8s} {'-':>8s} {'-':>10s}"] * len(profiles))
            row[column] = f"{ops[step]:8d} {kernels[step]:8d} {time_ns[step] / 1e6:10.3f}"
    print("step  " + "  ".join(f"{capture + ': ops, kernels, kernel ms':>28s}" for capture in profiles))
    for step in sorted(rows):
        print(f"{step:4d}  " + "  ".join(rows[step]))
    for capture, profile in profiles.items():
        steps = profile.table("steps")
        numbers, durations = steps.column("step").to_pylist(), steps.column("duration_ns").to_pylist()
        times = (f"{n}:{d / 1e6:.1f}" for n, d in zip(numbers, durations, strict=True))
        print(f"{capture} step ms: " + " ".join(times))


def compare(profiles: dict[str, Profile], first_step: int) -> None:
    """The parity lines, over the steps from `first_step` on (every kernel and op when it is -1)."""
    kernels = {c: kernel_keys(p, first_step=first_step) for c, p in profiles.items()}
    # two runs' kernels last a little differently: counted per launch, the attribution alone is compared
    launches = {c: kernel_keys(p, by_count=True, first_step=first_step) for c, p in profiles.items()}
    for capture in profiles:
        count, time_ms = sum(launches[capture].values()), sum(kernels[capture].values()) / 1e6
        print(f"{capture:8s} kernels {count:7d}  kernel time {time_ms:10.3f} ms")
    ref, new = list(profiles)
    same_time = overlap(kernels[ref], kernels[new])
    print(f"kernel time with the same kernel, op and line: {same_time:.4%} of the {ref} capture's")
    # the same, each key's time weighted by the share of its launches the other capture has under it: the
    # attribution alone, not the two runs' kernels lasting a little differently (the line above, 99.7% on
    # the MLP where every launch has its key in both)
    matched = sum(time * min(1.0, launches[new].get(key, 0) / launches[ref][key]) for key, time in kernels[ref].items())
    print(f"kernel time of launches matched key for key: {matched / max(1, sum(kernels[ref].values())):.4%}")
    counts = {c: Counter(dict.fromkeys(kernels[c], 1)) for c in kernels}
    print(f"kernel keys in both: {overlap(counts[ref], counts[new]):.4%}")
    print(f"launches with the same kernel, op and line: {overlap(launches[ref], launches[new]):.4%}")
    ops = {c: op_keys(p, first_step) for c, p in profiles.items()}
    print(f"ops with the same name, shapes and line: {overlap(ops[ref], ops[new]):.4%} of the {ref}'s")
    print_differences("op", ops[ref], ops[new])
    memory = {c: memory_keys(p, first_step) for c, p in profiles.items()}
    counts_text = ", ".join(f"{c} {sum(m.values())}" for c, m in memory.items())
    same_memory = overlap(memory[ref], memory[new])
    print(f"allocator samples: {counts_text}; with the same op, line and bytes: {same_memory:.4%} of the {ref}'s")
    print_differences("allocator samples", memory[ref], memory[new])
    if first_step < 0:
        print("peak allocated: " + "; ".join(f"{c} {peak_allocated(p)}" for c, p in profiles.items()))


def main() -> None:
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    out, script = Path(sys.argv[1]), sys.argv[2:]
    out.mkdir(parents=True, exist_ok=True)
    profiles = {}
    chosen = os.environ.get("PARITY_CAPTURES", "default,native").split(",")
    if len(chosen) != 2 or any(c not in CAPTURES for c in chosen):
        raise SystemExit(f"PARITY_CAPTURES: two of {', '.join(CAPTURES)}, comma-separated")
    for capture in chosen:
        started = time.perf_counter()
        profiles[capture] = record(out, capture, script)
        print(f"{capture}: recorded and imported in {time.perf_counter() - started:.0f} s", flush=True)
    for capture, profile in profiles.items():
        print(f"{capture:8s} ops {profile.table('ops').num_rows:8d}  kernels {profile.table('kernels').num_rows:7d}")
        if profile.meta.timeline.op_copy:  # TENPROF_OPS=sampled: what the copy gave, launches_changed with it
            print(f"{capture:8s} op copy {profile.meta.timeline.op_copy}")
    print_steps(profiles)
    print("== every step")
    compare(profiles, -1)
    print(f"== steady: the steps from {STEADY_FROM} on")
    compare(profiles, STEADY_FROM)


if __name__ == "__main__":
    main()
