"""allocator churn in a transformer: a six-layer encoder (GPT-2 small's width) trained in bf16 autocast with
AdamW calls `torch.cuda.empty_cache()` after every optimizer step, so each step takes its activations' and
the optimizer's scratch memory from the driver again. A second model for the allocator-churn check, unlike
empty_cache.py's ResNet (matmuls, layer norms and attention instead of convolutions). --fixed: the call is
gone. (Batch 16 of 256 tokens, 768 wide; a tiny encoder on the CPU.)"""

import torch
from _common import device, loop, parse
from torch import nn

args = parse(__doc__)
dev = device()
width, layers, batch, tokens = (768, 6, 16, 256) if dev == "cuda" else (64, 2, 2, 16)
layer = nn.TransformerEncoderLayer(width, nhead=width // 64, dim_feedforward=4 * width, batch_first=True)
model = nn.TransformerEncoder(layer, num_layers=layers, enable_nested_tensor=False).to(dev)
head = nn.Linear(width, 1000).to(dev)
optimizer = torch.optim.AdamW([*model.parameters(), *head.parameters()], lr=1e-4)
x = torch.randn(batch, tokens, width, device=dev)
y = torch.randint(0, 1000, (batch * tokens,), device=dev)


def step() -> None:
    with torch.autocast(dev, dtype=torch.bfloat16):
        loss = nn.functional.cross_entropy(head(model(x)).flatten(0, 1).float(), y)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    if not args.fixed and dev == "cuda":
        torch.cuda.empty_cache()  # the planted mistake: the cached blocks go back to the driver


loop(args.steps, step)
