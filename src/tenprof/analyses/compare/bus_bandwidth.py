"""How fast a collective moved its data, as nccl-tests counts it, and how fast the links could.

nccl-tests' definitions (its doc/PERFORMANCE.md): a collective of S bytes that took t has an algorithm
bandwidth S / t, and a bus bandwidth, the rate each rank's link must have carried, of algbw times a factor
of the group's size n: all-reduce 2(n-1)/n; all-gather, reduce-scatter and all-to-all (n-1)/n; broadcast,
reduce and send/receive 1. S is the all-reduce's, broadcast's and reduce's buffer, the all-gather's output
and the reduce-scatter's input (each rank's part times n), the all-to-all's buffer. `message_bytes` gives
S from the trace's element counts ("In msg nelems", "Out msg nelems") and type; t is the time after the
last rank arrived (analyses.compare.collectives), not the kernel's, which also holds the wait.

The links: one GPU's NVLink bandwidth in one direction (NVIDIA's datasheets quote both directions
together: 900 GB/s for H100 SXM is 450 each way), for the SXM cards, whose GPUs of one host are linked by
NVLink; PCIe for the cards that have none. A group that spans hosts crosses the network, whose speed the
recording does not hold: no peak is given then.
"""

from __future__ import annotations

import re

ELEMENT_BYTES = {
    "Float": 4,
    "Double": 8,
    "Half": 2,
    "BFloat16": 2,
    "Int": 4,
    "Long": 8,
    "Short": 2,
    "Char": 1,
    "Byte": 1,
    "Bool": 1,
    "Float8_e4m3fn": 1,
    "Float8_e5m2": 1,
}

# (pattern in the CUDA device name, link, GB/s one way per GPU, source)
LINK_PEAKS = (
    (r"H100.*(SXM|HBM3)|H200", "NVLink 4", 450.0, "https://www.nvidia.com/en-us/data-center/h100/"),
    (r"B200|B100", "NVLink 5", 900.0, "https://www.nvidia.com/en-us/data-center/hgx/"),
    (r"A100-SXM|A100 SXM", "NVLink 3", 300.0, "https://www.nvidia.com/en-us/data-center/a100/"),
    (r"V100.*SXM|V100-SXM2", "NVLink 2", 150.0, "https://www.nvidia.com/en-us/data-center/v100/"),
    (r"H100.*PCIe|L40S|L4\b|A10\b|A100.*PCIe", "PCIe (no NVLink)", 32.0, "PCIe 4.0 x16, one way"),
)


def message_bytes(collective: str, in_elements: int, out_elements: int, element_type: str) -> int:
    """S of nccl-tests for one collective, -1 where the trace does not say enough."""
    size = ELEMENT_BYTES.get(element_type, 0)
    name = collective.lower().replace("_", "")
    elements = out_elements if name in ("allgather", "allgatherintotensorcoalesced") else in_elements
    return elements * size if size and elements > 0 else -1


def bus_factor(collective: str, ranks: int) -> float | None:
    """nccl-tests' bus bandwidth factor for a group of `ranks`; None for a collective it has none for."""
    name = collective.lower().replace("_", "")
    n = max(ranks, 1)
    if name.startswith("allreduce"):
        return 2 * (n - 1) / n
    if name.startswith(("allgather", "reducescatter", "alltoall")):
        return (n - 1) / n
    if name.startswith(("broadcast", "reduce", "send", "recv")):
        return 1.0
    return None


def link_peak(gpu: str, one_host: bool) -> tuple[str, float, str] | None:
    """(link, GB/s one way, source) between GPUs of this model on one host; None across hosts or unknown."""
    if not one_host:
        return None
    for pattern, link, peak, source in LINK_PEAKS:
        if re.search(pattern, gpu):
            return link, peak, source
    return None
