"""Where the host sampler puts a short stretch of pure Python between two calls that let the
interpreter's lock go (a torch op, a sleep(0)): in the stretch, where it runs, or at the release after it.

    python benchmarks/sampler_attribution.py [--items 300] [--stretch-ms 1]

Runs tenprof's HostSampler in this process over `items` rounds of (time.sleep(0), a busy stretch) and
prints the samples that landed in the stretch and at the release, once with a waiting thread asking for
the lock after a whole sampling period and once after a tenth of it (tenprof's setting). A timing: run it
on an idle machine (on a loaded one the OS, not the lock, decides when the sampler runs).
"""

from __future__ import annotations

import argparse
import threading
import time

from tenprof.capture import host_sampler
from tenprof.capture.callsites import FrameInterner
from tenprof.capture.host_sampler import HostSampler


def stretch(seconds: float) -> None:
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        for _ in range(200):
            pass


def item(seconds: float) -> None:
    time.sleep(0)  # the release
    stretch(seconds)


def measure(items: int, seconds: float, switches_per_period: int) -> tuple[int, int]:
    host_sampler.SWITCHES_PER_PERIOD = switches_per_period
    interner = FrameInterner(None, set())
    sampler = HostSampler(interner)
    sampler.start()
    try:
        for _ in range(items):
            item(seconds)
    finally:
        sampler.stop()
    me = threading.get_native_id()
    samples = sampler.samples
    functions = [interner.rows[samples[i + 2]][4] for i in range(0, len(samples), 3) if samples[i] == me]
    return functions.count("stretch"), functions.count("item")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=300)
    parser.add_argument("--stretch-ms", type=float, default=1.0)
    args = parser.parse_args()
    for switches in (1, 10):
        in_stretch, at_release = measure(args.items, args.stretch_ms / 1e3, switches)
        print(
            f"lock asked for after 1/{switches} of a period: {in_stretch} samples in the stretch, "
            f"{at_release} at the release ({args.items} rounds of {args.stretch_ms} ms)"
        )


if __name__ == "__main__":
    main()
