"""The costs of layout-conversions and variance against sums of the recorded kernels: what each charges,
on the corpus recordings made on an H100 (tests/data/finding_channels_last, finding_variance) and on the
channels_last pair's plain torch.profiler trace, which has no shapes and so no speed of light."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tenprof.analyses.findings import Finding
from tenprof.analyses.findings.context import Context
from tenprof.analyses.findings.thresholds import Thresholds
from tenprof.cli.main import main
from tenprof.store.profile import Profile, load_profile
from tests.conftest import DATA
from tests.helpers import findings_of


def _found(profile: Profile) -> dict[str, Finding]:
    return {f.id: f for f in findings_of(profile)}


def _kernel_ns(profile: Profile, wanted: str, unwanted: str = "") -> tuple[int, int]:
    """Time and count of the analysed steps' kernels whose name holds `wanted` (and not `unwanted`)."""
    ctx = Context(profile, Thresholds())
    names = profile.table("kernels").column("name").to_pylist()
    chosen = ctx.kernels_in_steps & np.array(
        [wanted.lower() in n.lower() and not (unwanted and unwanted in n) for n in names]
    )
    return int(profile.column("kernels", "duration_ns")[chosen].sum()), int(chosen.sum())


def test_layout_conversions_counts_the_conversions_and_the_nchw_batch_norms(rebuilt: dict[str, Profile]) -> None:
    # A bf16 conv block in NCHW (H100): cuDNN's transposes around the convolutions, and batch norm (forward
    # and backward) on its NCHW kernels at under a tenth of its speed of light.
    profile = rebuilt["finding_channels_last"]
    found = _found(profile)
    layout = found["layout-conversions"]
    to_nhwc, n_to = _kernel_ns(profile, "nchwToNhwc")
    to_nchw, n_back = _kernel_ns(profile, "nhwcToNchw")
    norms, _ = _kernel_ns(profile, "batch_norm", unwanted="channels_last")
    assert (
        layout.numbers["conversion_ns"] == to_nhwc + to_nchw and f"{n_to + n_back} conversion kernels" in layout.seen[0]
    )
    assert layout.numbers["nchw_norm_ns"] == norms > to_nhwc + to_nchw
    # counted: the batch norms' time above what the channels-last kernels the fix runs would take, their speed of
    # light (under a tenth of their time here) over the share of it those kernels reach
    from tenprof.analyses.findings.layouts import CHANNELS_LAST_NORM_SHARE

    ideal = layout.numbers["nchw_norm_ideal_ns"]
    assert 0 < ideal < 0.1 * norms and layout.numbers["norm_after_fix_ns"] == ideal / CHANNELS_LAST_NORM_SHARE
    assert layout.cost_ns == int(to_nhwc + to_nchw + norms - ideal / CHANNELS_LAST_NORM_SHARE)
    # the twin's channels-last batch norms (not used to choose the share) take about what was assumed
    twin = rebuilt["finding_channels_last_fixed"]
    twin_norms, _ = _kernel_ns(twin, "batch_norm")
    steps = Context(profile, Thresholds()).step_count, Context(twin, Thresholds()).step_count
    assert abs(twin_norms / steps[1] - layout.numbers["norm_after_fix_ns"] / steps[0]) < 0.1 * twin_norms / steps[1]
    assert "batch norm runs its NCHW kernels" in layout.title
    # the same time is not charged twice: far-below-speed-of-light leaves the batch norms out
    slow = found.get("far-below-speed-of-light")
    assert slow is None or "batch_norm" not in slow.title
    assert "layout-conversions" not in _found(rebuilt["finding_channels_last_fixed"])


def test_layout_conversions_without_shapes_counts_the_conversions_alone(tmp_path: Path) -> None:
    # torch.profiler without record_shapes: no speed of light for the batch norms, so only the transposes
    out = tmp_path / "plain"
    assert main(["import", "--quiet", str(DATA / "corpus_traces" / "channels_last.json.gz"), "-o", str(out)]) == 0
    profile = load_profile(out)
    layout = _found(profile)["layout-conversions"]
    conversions = sum(_kernel_ns(profile, name)[0] for name in ("nchwToNhwc", "nhwcToNchw"))
    assert layout.cost_ns == layout.numbers["conversion_ns"] == conversions > 0
    assert len(layout.seen) == 1 and "batch norm" not in layout.title


def test_variance_charges_the_launches_above_the_lower_quartile(rebuilt: dict[str, Profile]) -> None:
    # index_add_ alternating spread-out and colliding indices: two modes, 34 us and 7.4 ms. The fix runs every
    # launch as the fast mode does, so the slow mode is charged whole, not against the median between the two.
    profile = rebuilt["finding_variance"]
    variance = _found(profile)["variance"]
    ctx = Context(profile, Thresholds())
    names = profile.table("kernels").column("name").to_pylist()
    chosen = ctx.kernels_in_steps & np.array(["indexFunc" in n for n in names])
    d = profile.column("kernels", "duration_ns")[chosen].astype(float)
    assert variance.cost_ns == pytest.approx(np.clip(d - np.percentile(d, 25), 0, None).sum(), abs=1)
    slow = d > 10 * np.percentile(d, 25)
    assert 0.4 * len(d) <= slow.sum() <= 0.6 * len(d)  # the two modes, half the launches each
    assert variance.cost_ns > 0.95 * (d[slow] - np.median(d[~slow])).sum()
