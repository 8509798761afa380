"""Training steps of a compiled model, for attributing generated kernels to the aten ops they fuse.

    tenprof run examples/compiled_train.py --model mlp
    tenprof run examples/compiled_train.py --model gpt2 --mode reduce-overhead

`--model mlp`: blocks of Linear -> GELU -> Linear, scaled, plus a residual and LayerNorm (chains of
elementwise ops Inductor fuses). `--model gpt2`: GPT-2 small from transformers.GPT2Config() with random
weights (bf16 autocast on the GPU). `--mode`: torch.compile's mode (default, reduce-overhead: CUDA
graphs, max-autotune), or eager (not compiled: the run to diff against). Prints `loop_s=`.
"""

import argparse
import time

import torch
from torch import nn

import tenprof


class Block(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.up = nn.Linear(width, 4 * width)
        self.down = nn.Linear(4 * width, width)
        self.norm = nn.LayerNorm(width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = nn.functional.gelu(self.up(x))
        return self.norm(x + 0.5 * self.down(h))


def build(name: str, device: str) -> tuple[nn.Module, torch.Tensor, bool]:
    """The model, one batch of inputs, and whether the model computes its own loss (GPT-2)."""
    if name == "gpt2":
        from transformers import GPT2Config, GPT2LMHeadModel

        config = GPT2Config() if device == "cuda" else GPT2Config(n_layer=2, n_embd=128, n_head=4)
        tokens = torch.randint(0, config.vocab_size, (8, 256), device=device)
        return GPT2LMHeadModel(config).to(device), tokens, True
    width = 1024 if device == "cuda" else 64
    return nn.Sequential(*[Block(width) for _ in range(4)]).to(device), torch.randn(256, width, device=device), False


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", choices=("mlp", "gpt2"), default="mlp")
    parser.add_argument("--mode", choices=("default", "reduce-overhead", "max-autotune", "eager"), default="default")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=2)
    args = parser.parse_args()
    cuda = torch.cuda.is_available()
    device = "cuda" if cuda else "cpu"
    torch.manual_seed(0)
    model, batch, own_loss = build(args.model, device)
    compiled = model if args.mode == "eager" else torch.compile(model, mode=args.mode)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    start = time.perf_counter()
    for step in range(args.warmup + args.steps):
        if step == args.warmup:
            if cuda:
                torch.cuda.synchronize()
            start = time.perf_counter()
        with torch.autocast(device, dtype=torch.bfloat16, enabled=cuda and own_loss):
            out = compiled(batch, labels=batch) if own_loss else compiled(batch)
            loss = out.loss if own_loss else out.square().mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        tenprof.step()
    if cuda:
        torch.cuda.synchronize()
    print(f"loop_s={time.perf_counter() - start:.6f} steps={args.steps} loss={float(loss):.4f}")


if __name__ == "__main__":
    main()
