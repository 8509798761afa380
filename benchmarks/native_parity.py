"""The native capture (`tenprof run --capture native`) against the default one on the same script: what each
records and whether they attribute it alike.

    python benchmarks/native_parity.py OUT_DIR SCRIPT [ARGS...]

Runs the script under each capture (TENPROF_NATIVE_GPU=1 lets the native one run on a GPU before it is
checked there), then prints, per capture: ops, kernels, kernel time; and between them: the kernels with the
same (kernel name, op, file:line) in both, as a share of the kernel keys, the launches and the kernel time (issue 38's
parity: counts equal, GPU totals within 0.1%, the same op and line for at least 99.9% of kernel time), and
the ops with the same (name, input shapes, file:line). Runs are not timed here (benchmarks/overhead.py).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

from tenprof.store.profile import Profile, load_profile

CAPTURES = {"default": [], "native": ["--capture", "native"]}


def record(out: Path, capture: str, script: list[str]) -> Profile:
    target = out / capture
    env = {**os.environ, "TENPROF_NATIVE_GPU": "1"}
    argv = [sys.executable, "-m", "tenprof", "run", "--quiet", "--force", *CAPTURES[capture], "-o", str(target)]
    subprocess.run([*argv, *script], check=True, env=env)
    return load_profile(target)


def _where(profile: Profile) -> list[str]:
    """Each op's innermost frame as file:line ('' without one)."""
    frames = profile.table("frames")
    files, lines = frames.column("file").to_pylist(), frames.column("line").to_pylist()
    return [f"{Path(files[f]).name}:{lines[f]}" if f >= 0 else "" for f in profile.column("ops", "frame_id")]


def kernel_keys(profile: Profile, by_count: bool = False) -> Counter[tuple[str, str, str]]:
    """(kernel name, op name, op's file:line) -> kernel time, ns (or, `by_count`, launches)."""
    ops = profile.table("ops")
    names, where = ops.column("name").to_pylist(), _where(profile)
    kernels = profile.table("kernels")
    keys: Counter[tuple[str, str, str]] = Counter()
    columns = (kernels.column(c).to_pylist() for c in ("name", "op_id", "start_ns", "end_ns"))
    for name, op, start, end in zip(*columns, strict=True):
        keys[(name, names[op] if op >= 0 else "", where[op] if op >= 0 else "")] += 1 if by_count else end - start
    return keys


def op_keys(profile: Profile) -> Counter[tuple[str, str, str]]:
    """(op name, input shapes, file:line) -> count."""
    ops = profile.table("ops")
    names, shapes = ops.column("name").to_pylist(), ops.column("input_shapes").to_pylist()
    return Counter(zip(names, shapes, _where(profile), strict=True))


def overlap(a: Counter[tuple[str, str, str]], b: Counter[tuple[str, str, str]]) -> float:
    """The share of a's total that b has under the same key."""
    total = sum(a.values())
    return sum(min(v, b.get(k, 0)) for k, v in a.items()) / total if total else 1.0


def main() -> None:
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    out, script = Path(sys.argv[1]), sys.argv[2:]
    out.mkdir(parents=True, exist_ok=True)
    profiles = {capture: record(out, capture, script) for capture in CAPTURES}
    kernels = {c: kernel_keys(p) for c, p in profiles.items()}
    ops = {c: op_keys(p) for c, p in profiles.items()}
    for capture, profile in profiles.items():
        time_ns = sum(kernels[capture].values())
        sizes = f"ops {profile.table('ops').num_rows:8d}  kernels {profile.table('kernels').num_rows:7d}"
        print(f"{capture:8s} {sizes}  kernel time {time_ns / 1e6:10.3f} ms")
    default, native = kernels["default"], kernels["native"]
    print(f"kernel time with the same kernel, op and line: {overlap(default, native):.4%} of the default capture's")
    counts = {c: Counter({k: 1 for k in kernels[c]}) for c in kernels}
    print(f"kernel keys in both: {overlap(counts['default'], counts['native']):.4%}")
    # two runs' kernels last a little differently: counted per launch, the attribution alone is compared
    launches = {c: kernel_keys(p, by_count=True) for c, p in profiles.items()}
    print(f"launches with the same kernel, op and line: {overlap(launches['default'], launches['native']):.4%}")
    same_ops = overlap(ops["default"], ops["native"])
    print(f"ops with the same name, shapes and line: {same_ops:.4%} of the default capture's")


if __name__ == "__main__":
    main()
