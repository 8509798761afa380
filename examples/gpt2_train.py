"""GPT-2 small training steps, built from transformers.GPT2Config() with random weights (no download).

    tenprof run examples/gpt2_train.py --steps 5 --warmup 2

Batch 8, sequence 256, AdamW, bf16 autocast on the GPU. On a machine without CUDA it runs a 2-layer,
128-wide model so it finishes quickly. Prints `loop_s=` for the timed steps.
"""

import argparse
import time

import torch
from transformers import GPT2Config, GPT2LMHeadModel

import tenprof


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seq", type=int, default=256)
    args = parser.parse_args()
    cuda = torch.cuda.is_available()
    device = "cuda" if cuda else "cpu"
    config = GPT2Config() if cuda else GPT2Config(n_layer=2, n_embd=128, n_head=4)
    torch.manual_seed(0)
    model = GPT2LMHeadModel(config).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    tokens = torch.randint(0, config.vocab_size, (args.batch, args.seq), device=device)
    start = None
    for step in range(args.warmup + args.steps):
        if step == args.warmup:
            if cuda:
                torch.cuda.synchronize()
            start = time.perf_counter()
        with tenprof.scope("forward"), torch.autocast(device, dtype=torch.bfloat16, enabled=cuda):
            loss = model(tokens, labels=tokens).loss
        with tenprof.scope("backward"):
            loss.backward()
        with tenprof.scope("optimizer"):
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
        tenprof.step(tokens=args.batch * args.seq)
    if cuda:
        torch.cuda.synchronize()
    print(f"loop_s={time.perf_counter() - start:.6f} steps={args.steps} loss={float(loss):.4f}")


if __name__ == "__main__":
    main()
