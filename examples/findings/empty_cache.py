"""allocator churn: ResNet-18 trained in bf16 autocast calls `torch.cuda.empty_cache()` every step (a habit
copied to "avoid fragmentation"), so every step gives its activations' memory back to the driver and
takes it again with cudaMalloc, each call waiting for the GPU. --fixed: the call is gone.
(torchvision's ResNet-18, batch 64 at 224x224, channels_last; a small conv net where torchvision is
missing.)"""

import torch
from _common import device, loop, parse
from torch import nn

args = parse(__doc__)
dev = device()
try:
    from torchvision.models import resnet18

    model: nn.Module = resnet18(num_classes=100)
    batch, side = (64, 224) if dev == "cuda" else (2, 64)
except ImportError:
    model = nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 100)
    )
    batch, side = 2, 32
model = model.to(dev).to(memory_format=torch.channels_last)
optimizer = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
x = torch.randn(batch, 3, side, side, device=dev).to(memory_format=torch.channels_last)
y = torch.randint(0, 100, (batch,), device=dev)


def step() -> None:
    with torch.autocast(dev, dtype=torch.bfloat16):
        loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    if not args.fixed and dev == "cuda":
        torch.cuda.empty_cache()  # the planted mistake: the cached blocks go back to the driver


loop(args.steps, step)
