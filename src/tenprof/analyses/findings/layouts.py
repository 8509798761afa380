"""What an NCHW network pays for its layout, for the layout-conversions finding: cuDNN's conversion kernels
(nchwToNhwc / nhwcToNchw) around its tensor-core convolutions, and the batch-norm ops that run PyTorch's
NCHW kernels, which reduce each channel across batch and space far below the card's bandwidth (the
channels-last kernels are the ones the fix runs instead).

The conversions are the evidence: they must hold `names.min_share` of the analysed steps' kernel time.
Where they do, each batch-norm op (forward or backward) whose kernels have no channels-last variant in
their names is charged its kernel time above what the channels-last kernels the fix runs instead would
take: its speed of light (analyses.perf_model) over the share of it those kernels reach,
CHANNELS_LAST_NORM_SHARE. Charging all the time above the speed of light (until 2026-12-07) counted as
saved what the channels-last kernels still take: the corpus's channels_last pair was charged 1.26x the time
its fix saved on an H100. far-below-speed-of-light then leaves those ops out. Without recorded shapes there
is no speed of light, and only the conversions count.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from tenprof.analyses.findings.context import Context
from tenprof.analyses.perf_model import OpSpeed

LAYOUT_CONVERSION = re.compile(r"nchwToNhwc|nhwcToNchw", re.IGNORECASE)
BATCH_NORM_OPS = frozenset(
    {
        "aten::native_batch_norm",
        "aten::cudnn_batch_norm",
        "aten::_batch_norm_impl_index",
        "aten::native_batch_norm_backward",
        "aten::batch_norm_backward",
    }
)
_CHANNELS_LAST_KERNEL = re.compile(r"channels_last|nhwc", re.IGNORECASE)
# The share of their speed of light PyTorch's channels-last batch-norm kernels reach (forward and backward
# together): 0.29 in ResNet-18's batch norms (bf16, batch 64 at 224x224; tests/data/finding_empty_cache and
# _fixed, one H100, 2026-11-27), measured on that model, not on the channels_last pair it is checked on
# (whose twin's reach 0.30).
CHANNELS_LAST_NORM_SHARE = 0.29


@dataclass(frozen=True)
class LayoutCost:
    conversions: npt.NDArray[np.bool_]  # the analysed steps' conversion kernels
    conversion_ns: int
    norms: list[OpSpeed]  # batch-norm ops on NCHW kernels, charged when the conversions are
    norm_ns: int  # their kernel time
    norm_ideal_ns: float  # theirs at the speed of light

    @property
    def norm_after_fix_ns(self) -> float:
        """What the batch norms would take on the channels-last kernels (see the module)."""
        return self.norm_ideal_ns / CHANNELS_LAST_NORM_SHARE

    @property
    def cost_ns(self) -> int:
        return self.conversion_ns + int(max(0.0, self.norm_ns - self.norm_after_fix_ns))


def layout_cost(ctx: Context) -> LayoutCost | None:
    """The NCHW layout's cost in the analysed steps, None where the conversions are too few to judge."""
    if ctx.steps_kernel_ns == 0:
        return None
    names = ctx.profile.strings("kernels", "name")
    conversions = ctx.kernels_in_steps & names.where(lambda n: bool(LAYOUT_CONVERSION.search(n)))
    conversion_ns = int(ctx.profile.column("kernels", "duration_ns")[conversions].sum())
    if conversion_ns < ctx.t.names_min_share * ctx.steps_kernel_ns:
        return None
    norms = [row for row in (ctx.perf.ops if ctx.perf else []) if _nchw_norm(row)]
    return LayoutCost(
        conversions,
        conversion_ns,
        norms,
        sum(row.speed.gpu_ns for row in norms),
        sum(row.speed.ideal_ns or 0.0 for row in norms),
    )


def _nchw_norm(row: OpSpeed) -> bool:
    return (
        row.name in BATCH_NORM_OPS
        and row.speed.ideal_ns is not None
        and not any(_CHANNELS_LAST_KERNEL.search(name) for name, _ in row.kernel_times)
    )
