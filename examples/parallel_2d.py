"""A 2D-parallel job: tensor parallel (TP) within pairs of ranks, data parallel (DP) across the pairs, each
a process group of its own, for profiling who arrives last per group.

    torchrun --nproc-per-node 4 -m tenprof run -o out2d examples/parallel_2d.py --slow-tp-group 1
    tenprof report out2d/

With W ranks (W even): TP groups of two consecutive ranks ({0, 1}, {2, 3}, ...), named tp0, tp1, ...; DP
groups of the ranks holding the same TP shard ({0, 2, ...} and {1, 3, ...}), named dp0 and dp1. Each step
runs LAYERS row-parallel linear layers (a local GEMM, then an all-reduce of the partial outputs in the TP
group) and then all-reduces a gradient-sized buffer in the DP group. `--slow-tp-group T` makes both ranks
of TP group T do extra GEMMs before each layer (the line marked below): inside group T neither is late (they
are equally slow), while at every DP all-reduce the ranks of group T arrive last. `--slow-rank R` slows
one rank alone: last in its TP group and in its DP group. NCCL on GPUs (one per rank, by LOCAL_RANK), gloo
on the CPU. Prints `loop_s=` for the timed steps on rank 0.
"""

import argparse
import os
import time

import torch
import torch.distributed as dist

import tenprof

LAYERS = 4
TP = 2  # ranks per tensor-parallel group


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--slow-tp-group", type=int, default=-1)
    parser.add_argument("--slow-rank", type=int, default=-1)
    parser.add_argument("--width", type=int, default=4096)
    parser.add_argument("--tokens", type=int, default=2048)
    args = parser.parse_args()
    cuda = torch.cuda.is_available()
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if cuda:
        torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl" if cuda else "gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    if world % TP:
        raise SystemExit(f"parallel_2d.py: {world} ranks cannot form tensor-parallel groups of {TP}")
    device = torch.device("cuda", local_rank) if cuda else torch.device("cpu")
    dtype = torch.bfloat16 if cuda else torch.float32
    if not cuda:  # the CPU stand-in: the same groups and calls, small enough to run on two cores
        args.width, args.tokens = min(args.width, 256), min(args.tokens, 64)
    # every rank makes every group, in the same order (new_group's contract), and keeps its own two
    tp_groups = [_group(list(range(g * TP, (g + 1) * TP)), f"tp{g}") for g in range(world // TP)]
    dp_groups = [_group(list(range(s, world, TP)), f"dp{s}") for s in range(TP)]
    my_tp, my_dp = tp_groups[rank // TP], dp_groups[rank % TP]
    slow = rank // TP == args.slow_tp_group or rank == args.slow_rank
    torch.manual_seed(rank)
    weights = [torch.randn(args.width // TP, args.width, device=device, dtype=dtype) * 0.01 for _ in range(LAYERS)]
    x = torch.randn(args.tokens, args.width // TP, device=device, dtype=dtype)
    gradient = torch.randn(16 << 20 if cuda else 1 << 16, device=device, dtype=dtype)  # 32 MiB (bf16) on a GPU
    extra = torch.randn(*(2 * [2048 if cuda else 128]), device=device, dtype=dtype)
    start = time.perf_counter()
    for step in range(args.warmup + args.steps):
        if step == args.warmup:
            if cuda:
                torch.cuda.synchronize()
            start = time.perf_counter()
        h = x
        for w in weights:
            if slow:
                for _ in range(10):
                    extra = torch.tanh(extra @ extra)  # the planted slow-down: --slow-tp-group / --slow-rank
            partial = h @ w  # this rank's shard of the layer: a partial sum of the full output
            dist.all_reduce(partial, group=my_tp)
            h = torch.relu(partial)[:, : args.width // TP]
        dist.all_reduce(gradient, group=my_dp)
        tenprof.step()
    if cuda:
        torch.cuda.synchronize()
    if rank == 0:
        print(f"loop_s={time.perf_counter() - start:.6f} steps={args.steps} world={world}")
    dist.destroy_process_group()


def _group(ranks: list[int], name: str) -> dist.ProcessGroup:
    """A process group named `name` in the trace's collectives (group_desc, where this torch has it)."""
    try:
        return dist.new_group(ranks, group_desc=name)
    except TypeError:  # a torch without group_desc: the group is known by its ranks
        return dist.new_group(ranks)


if __name__ == "__main__":
    main()
