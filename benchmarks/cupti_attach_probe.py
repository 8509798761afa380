"""What tenprof's own CUPTI client costs a program while it records nothing: attached with every activity
and callback disabled (what `--capture native-cupti` leaves between its recorded windows today), against
detached (CUPTI finalized) and against no client at all.

    python benchmarks/cupti_attach_probe.py [--workload mlp|gpt2-compiled] [--steps 20] [--rounds 3]

One process, one model (toggle_probe.py's). Phases of `--steps` steps, in this order: plain (CUPTI never
loaded); then `--rounds` times: on (the client recording kernels, copies and the launch calls), off (the
client attached, everything disabled), detached (`CuptiClient.detach`: CUPTI finalized), and on again
(CUPTI attached anew: whether re-attaching works, and its records). Prints each phase kind's median step,
its ratio to plain, the kernels the client recorded in each "on" phase (0 after a detach would mean the
re-attach failed), and the cost of a detach and of a re-attach. Needs a GPU and CUPTI's headers.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import defaultdict

import torch
from toggle_probe import gpt2_step, mlp_step, timed

from tenprof.capture.cupti_client import KIND_CONCURRENT_KERNEL, CuptiClient


def kernels(client: CuptiClient) -> int:
    """The kernels recorded so far (after a collect)."""
    records, _ = client.records()
    return int((records["kind"] == KIND_CONCURRENT_KERNEL).sum()) if len(records) else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workload", choices=("mlp", "gpt2-compiled"), default="mlp")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("cupti_attach_probe.py needs a GPU")
    step = mlp_step() if args.workload == "mlp" else gpt2_step(compiled=True)
    timed(step, 5)  # warm-up (and compilation)
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, {args.workload}, {args.steps} steps a phase")
    phases: dict[str, list[float]] = defaultdict(list)
    phases["plain"] += timed(step, args.steps)
    client = CuptiClient.load()
    costs: dict[str, list[float]] = defaultdict(list)
    seen = 0
    for r in range(args.rounds):
        for name in ("on", "off", "detached"):
            if name == "on":
                started = time.perf_counter()
                client.enable(True)
                costs["attach" if r else "first attach"].append(time.perf_counter() - started)
            phases[name] += timed(step, args.steps)
            torch.cuda.synchronize()
            if name == "on":
                client.enable(False)
                client.collect()
                now = kernels(client)
                print(f"round {r + 1}: {now - seen} kernels recorded in its 'on' phase")
                seen = now
            elif name == "off":
                started = time.perf_counter()
                client.detach()
                costs["detach"].append(time.perf_counter() - started)
    client.close()
    plain = statistics.median(phases["plain"])
    for name, times in phases.items():
        median = statistics.median(times)
        print(f"{name:9s} median {median * 1e3:8.3f} ms  {median / plain:5.3f}x plain  ({len(times)} steps)")
    for name, times in costs.items():
        print(f"{name:13s} {', '.join(f'{t * 1e3:.1f}' for t in times)} ms")


if __name__ == "__main__":
    main()
