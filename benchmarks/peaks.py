"""Measure what this GPU reaches: large cuBLAS GEMMs per dtype and a device-to-device copy.

    python benchmarks/peaks.py [--size 8192] [--repeat 20]

Prints one JSON object: the card, TFLOP/s per pipe (bf16, fp16, tf32, fp32: best of --repeat timed runs
of an N^3 matmul after warm-up) and the copy bandwidth (bytes read + written per second for a 2 GiB
tensor copy). These are the `measured` peaks of analyses/perf_model/gpu_peaks.py (docs/PERF_MODEL.md).
"""

import argparse
import json
import time

import torch


def _best_seconds(fn, repeat: int) -> float:
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(repeat):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        best = min(best, start.elapsed_time(end) / 1e3)
    return best


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=8192)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    n = args.size
    found = {"gpu": torch.cuda.get_device_name(0), "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    for pipe, dtype, tf32 in (
        ("bf16", torch.bfloat16, False),
        ("fp16", torch.float16, False),
        ("tf32", torch.float32, True),
        ("fp32", torch.float32, False),
    ):
        torch.backends.cuda.matmul.allow_tf32 = tf32
        pair = (torch.randn(n, n, device="cuda", dtype=dtype), torch.randn(n, n, device="cuda", dtype=dtype))
        seconds = _best_seconds(lambda pair=pair: torch.mm(*pair), args.repeat if pipe != "fp32" else 5)
        found[f"{pipe}_tflops"] = round(2 * n**3 / seconds / 1e12, 1)
        del pair
    src = torch.empty(1 << 30, device="cuda", dtype=torch.float16)  # 2 GiB
    dst = torch.empty_like(src)
    seconds = _best_seconds(lambda: dst.copy_(src), args.repeat)
    found["copy_tbs"] = round(2 * src.numel() * src.element_size() / seconds / 1e12, 3)
    print(json.dumps(found))


if __name__ == "__main__":
    main()
