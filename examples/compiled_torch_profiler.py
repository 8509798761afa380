"""A torch.profiler trace of a compiled model, made the usual way without tenprof, for `tenprof import`.

    python examples/compiled_torch_profiler.py -o compiled_trace.json.gz
    tenprof import compiled_trace.json.gz -o prof && tenprof report prof

Compiles the MLP blocks of compiled_train.py (torch.compile default mode), runs two warm-up steps
unprofiled (compilation happens there), then records `--steps` steps with torch.profiler
(record_shapes, with_stack) and writes the Chrome trace. Run with TORCHINDUCTOR_BENCHMARK_KERNEL=1 and
Inductor's kernels declare their FLOPs and bytes, which the trace carries.
"""

import argparse

import torch
from compiled_train import build
from torch.profiler import ProfilerActivity, profile


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("-o", "--output", default="compiled_trace.json.gz")
    parser.add_argument("--steps", type=int, default=2)
    args = parser.parse_args()
    cuda = torch.cuda.is_available()
    device = "cuda" if cuda else "cpu"
    torch.manual_seed(0)
    model, batch, _ = build("mlp", device)
    compiled = torch.compile(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)

    def step() -> None:
        compiled(batch).square().mean().backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    for _ in range(2):
        step()
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with profile(activities=activities, record_shapes=True, with_stack=True) as prof:
        for _ in range(args.steps):
            step()
            prof.step()
    prof.export_chrome_trace(args.output)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
