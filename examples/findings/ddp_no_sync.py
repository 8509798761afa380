"""all-reduce every micro-step: gradient accumulation under DistributedDataParallel without `no_sync()`.
Each step runs four micro-batches and one optimizer step, and every micro-batch's backward pass
all-reduces every gradient, though the optimizer uses only the sum the last one leaves. --fixed: the
first three backward passes run inside `model.no_sync()`, so the gradients are all-reduced once a step.
One process per GPU, under a launcher:

    torchrun --nproc-per-node 2 examples/findings/ddp_no_sync.py
    tenprof run -l "torchrun --nproc-per-node 2" -o OUT examples/findings/ddp_no_sync.py

(an MLP of six 4096 x 4096 layers in fp32, 100M parameters, on micro-batches of 32 rows: 400 MB of
gradients against little compute, as when fine-tuning a large model on small batches. NCCL on GPUs;
gloo and a small model on the CPU; run without a launcher, a group of one.)"""

import contextlib
import os

import torch
import torch.distributed as dist
from _common import loop, parse
from torch import nn
from torch.nn.parallel import DistributedDataParallel

MICRO_STEPS = 4

args = parse(__doc__)
cuda = torch.cuda.is_available()
if "RANK" not in os.environ:  # run alone: a group of one
    os.environ.update(RANK="0", LOCAL_RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1", MASTER_PORT="29533")
local_rank = int(os.environ["LOCAL_RANK"])
if cuda:
    torch.cuda.set_device(local_rank)
dist.init_process_group("nccl" if cuda else "gloo")
dev = torch.device("cuda", local_rank) if cuda else torch.device("cpu")
width, layers, rows = (4096, 6, 32) if cuda else (256, 2, 8)
torch.manual_seed(0)
mlp = nn.Sequential(*[nn.Sequential(nn.Linear(width, width), nn.ReLU()) for _ in range(layers)])
model = DistributedDataParallel(mlp.to(dev))
optimizer = torch.optim.SGD(model.parameters(), lr=1e-4)
batches = torch.randn(MICRO_STEPS, rows, width, device=dev)


def step() -> None:
    for i in range(MICRO_STEPS):
        last = i == MICRO_STEPS - 1
        deferred = model.no_sync() if args.fixed and not last else contextlib.nullcontext()
        with deferred:
            loss = model(batches[i]).square().mean() / MICRO_STEPS  # the planted mistake: no no_sync()
            loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)


loop(args.steps, step)
dist.destroy_process_group()
