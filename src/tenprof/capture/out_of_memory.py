"""The moment a script dies of an out-of-memory error: what the allocator held, kept before it is freed.

`post_mortem(exc, raw_dir)` is called where the capture catches the exception that ended the script,
while the script's frames (and so its tensors) are still alive in the traceback. For an out-of-memory
error it returns, as JSON-able values for the run's status:

- the error's own words (`message`) and what it asked for (`requested_bytes`, parsed from PyTorch's
  "Tried to allocate 128.00 MiB", or the CPU allocator's "you tried to allocate N bytes"; -1 when it does
  not say) and on which device;
- for a CUDA device the caching allocator's state then: allocated and reserved bytes, the largest free
  block inside the reserved segments and all their free bytes (what fragmentation leaves unusable), and
  the card's free and total memory as the driver sees them;
- the allocator's snapshot (`torch.cuda.memory._snapshot()`), written to `raw_dir/memory_snapshot.pickle`,
  which PyTorch's memory viewer (https://pytorch.org/memory_viz) opens: its segments always, and each
  block's stack where the script recorded allocator history itself.

Nothing runs before the error, so the capture costs nothing more until then. Any other exception gives
None. What held the memory, by op and line, comes from the timeline's own allocator reports
(analyses.findings.out_of_memory), which need no allocator history.
"""

from __future__ import annotations

import pickle
import re
from pathlib import Path
from typing import Any

SNAPSHOT_FILE = "memory_snapshot.pickle"
_REQUESTED = re.compile(r"Tried to allocate ([0-9.]+) (B|bytes|KiB|MiB|GiB|TiB)")
_DEVICE = re.compile(r"GPU (\d+) has a total capacity")
_CPU_FAILED = "DefaultCPUAllocator: can't allocate memory"
_CPU_REQUESTED = re.compile(r"you tried to allocate (\d+) bytes")
_UNITS = {"B": 1, "bytes": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}


def is_out_of_memory(exc: BaseException) -> bool:
    """torch.OutOfMemoryError (CUDA's caching allocator, also raised as torch.cuda.OutOfMemoryError), by its
    class's name, so that no torch is imported here; or the CPU allocator's RuntimeError."""
    if any(c.__name__ == "OutOfMemoryError" for c in type(exc).__mro__):
        return True
    return isinstance(exc, RuntimeError) and _CPU_FAILED in str(exc)


def requested(message: str) -> tuple[int, int]:
    """(bytes the failed allocation asked for, its CUDA device) from PyTorch's message; -1 where not said."""
    size = _REQUESTED.search(message)
    device = _DEVICE.search(message)
    if size:
        asked = int(float(size.group(1)) * _UNITS[size.group(2)])
    else:
        cpu = _CPU_REQUESTED.search(message)
        asked = int(cpu.group(1)) if cpu else -1
    return asked, int(device.group(1)) if device else -1


def post_mortem(exc: BaseException, raw_dir: Path) -> dict[str, Any] | None:
    """What the allocator held when `exc` was raised (see the module), or None when it is no out-of-memory
    error. Never raises: an allocator that cannot be read leaves its fields out and says why."""
    if not is_out_of_memory(exc):
        return None
    message = str(exc)
    asked, device = requested(message)
    found: dict[str, Any] = {
        "message": message[:4000],
        "requested_bytes": asked,
        "device": device,
        "device_type": "cpu" if _CPU_FAILED in message else "cuda",
    }
    if found["device_type"] != "cuda":
        return found  # the CPU allocator keeps no state to read
    try:
        found.update(_allocator_state(device if device >= 0 else None, raw_dir))
    except Exception as error:  # the post-mortem still has the message and the timeline's reports
        found["allocator_error"] = f"{error.__class__.__name__}: {error}"
    return found


def _allocator_state(device: int | None, raw_dir: Path) -> dict[str, Any]:
    import torch

    if not torch.cuda.is_available() or not torch.cuda.is_initialized():  # type: ignore[no-untyped-call]
        return {}
    index = torch.cuda.current_device() if device is None else device
    stats = torch.cuda.memory_stats(index)
    free, total = torch.cuda.mem_get_info(index)
    snapshot = torch.cuda.memory._snapshot()
    with open(raw_dir / SNAPSHOT_FILE, "wb") as file:
        pickle.dump(snapshot, file)
    free_blocks = [
        int(block["size"])
        for segment in snapshot.get("segments", [])
        if int(segment.get("device", index)) == index
        for block in segment.get("blocks", [])
        if block.get("state") == "inactive"
    ]
    return {
        "device": index,
        "allocated_bytes": int(stats.get("allocated_bytes.all.current", -1)),
        "reserved_bytes": int(stats.get("reserved_bytes.all.current", -1)),
        "largest_free_block_bytes": max(free_blocks, default=0),
        "free_in_reserved_bytes": sum(free_blocks),
        "device_free_bytes": int(free),
        "device_total_bytes": int(total),
        "snapshot": SNAPSHOT_FILE,
    }
