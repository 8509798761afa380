"""variance: the same kernel with the same launch shape timing differently from step to step (clocks,
thermals, contention, data-dependent work), reported with its distribution so a lone mean is not trusted.
"The same launch" is the kernel, its grid and block, its op's input shapes where they were recorded, and
its op and place among that op's launches: a compiled region (`CompiledFunctionBackward`) or a graph replay
launches many GEMMs of one kernel and grid but of different sizes (the grid does not hold the reduced
dimension), all under the region's one set of input shapes; a public compiled transformer's backward so read
80 different GEMMs as "one shape varying 47%". For the same reason a GEMM's or convolution's launches without
recorded input shapes are not judged: one grid holds problems of any depth (a ResNet-50's 1x1 and 3x3
convolutions of one output size, on a public RTX 4090 trace, read as one launch varying 33%). Other kernels
without recorded shapes are the same launch at the same place in each step (the k-th launch of that kernel
and grid in the step): one pass's layers of one grid (the batch norms of that ResNet-50, 79%) need not be
the same work, so a single pass without shapes has no variance to judge.
Launches with neither a launch shape nor input shapes (a ROCm trace without record_shapes) share only a
name and are not judged; nor is a collective (NCCL) launched without recorded shapes: its grid is the
same whatever the size of the message, so its launches need not be the same work. The cost is the
launches' time above the group's lower quartile, summed over the groups that vary: what they would save
running as the faster quarter of the same launches do; the title names the costliest group and how many
others there are."""

from __future__ import annotations

import re

import numpy as np

from tenprof.analyses.findings.context import Context
from tenprof.analyses.findings.model import Finding
from tenprof.analyses.op_kinds import GEMM_KERNEL_WORDS, is_collective
from tenprof.core.intervals import rank_within
from tenprof.core.quantities import duration

# kernels whose grid leaves out the reduced dimension (a GEMM's K, a convolution's input channels and filter)
# ("conv" not followed by "ert": cuDNN's convertTensor and Triton's convert_element_type kernels are elementwise)
_GRID_HIDES_DEPTH = re.compile(
    "|".join((*GEMM_KERNEL_WORDS, "conv(?!ert)", "winograd", "fprop", "dgrad", "wgrad")), re.IGNORECASE
)


def check(ctx: Context) -> list[Finding]:
    k = ctx.profile.table("kernels")
    if k.num_rows == 0:
        return []
    step = ctx.step_index(ctx.kernel_launch_ns)
    keep = step >= 0
    if not keep.any():
        return []
    dur = k.column("duration_ns").to_numpy()[keep]
    names = ctx.profile.strings("kernels", "name")
    shape = np.stack(
        [k.column(c).to_numpy()[keep] for c in ("grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z")], axis=1
    ).astype(np.int64)
    total = int(dur.sum())
    # One kernel can serve several problem sizes with one grid (cuBLAS picks a kernel per shape range),
    # so the launching op's input shapes are part of what "the same launch" means.
    op_shapes = ctx.profile.strings("ops", "input_shapes")
    k_op = k.column("op_id").to_numpy()[keep]
    launched = k_op >= 0
    # a launch with no op has the shapes "" (as an op recorded without shapes): the same key
    no_shapes = op_shapes.values.index("") if "" in op_shapes.values else -1
    shapes_code = np.full(len(k_op), no_shapes, dtype=np.int64)
    shapes_code[launched] = op_shapes.codes[k_op[launched]]
    # ... and which of its op's launches it is, in which op: the k-th launch of a compiled region is the same
    # GEMM from step to step, its other launches of the same kernel are other GEMMs
    op_names = ctx.profile.strings("ops", "name")
    op_code = np.full(len(k_op), -1, dtype=np.int64)
    op_code[launched] = op_names.codes[k_op[launched]]
    ordinal = np.where(launched, k.column("ordinal_in_op").to_numpy()[keep], -1).astype(np.int64)
    # ... and, without input shapes, its place among the step's launches of that kernel and grid: the k-th in
    # each step is the same work from step to step, where launches of one grid in one step (one pass's layers)
    # need not be
    same = np.unique(np.column_stack([names.codes[keep], shape, step[keep]]), axis=0, return_inverse=True)[1]
    place = rank_within(same.ravel().astype(np.int64), ctx.kernel_launch_ns[keep])
    place[shapes_code != no_shapes] = -1
    launch_key = np.column_stack([names.codes[keep], shape, shapes_code, op_code, ordinal, place])
    # launches grouped by key: sorted by it (stable, so each group keeps launch order), cut where it changes
    by_group = np.lexsort(launch_key.T[::-1])
    ordered = launch_key[by_group]
    cut = np.flatnonzero(np.any(ordered[1:] != ordered[:-1], axis=1)) + 1
    bounds = np.concatenate([[0], cut, [len(by_group)]]) if len(by_group) else np.zeros(1, dtype=np.int64)
    noisy = []
    for g in np.argsort(by_group[bounds[:-1]], kind="stable").tolist():  # groups in order of their first launch
        if bounds[g + 1] - bounds[g] < 5:
            continue
        members = by_group[bounds[g] : bounds[g + 1]]
        code = launch_key[members[0]]
        key = (names.values[code[0]], *code[1:7].tolist(), op_shapes.values[code[7]] if code[7] >= 0 else "")
        if is_collective(str(key[0])):
            # a collective's time includes its wait for the other ranks (the ranks report and the step's
            # collective part judge that), and its grid is the same for any message size
            continue
        if not key[7] and _GRID_HIDES_DEPTH.search(str(key[0])):
            continue  # without input shapes, one grid is GEMMs of any depth
        if not any(key[1:7]) and not key[7]:
            # neither a launch shape (a ROCm trace records no grid or block) nor input shapes: the launches
            # share only the kernel's name, which one kernel keeps across problem sizes (a batch norm's
            # backward in every layer of a ResNet), so they need not be the same work
            continue
        d = dur[members].astype(np.float64)
        cv = float(d.std() / d.mean()) if d.mean() > 0 else 0.0
        if cv > ctx.t.variance_max_cv and d.sum() >= ctx.t.variance_min_share * total:
            # what the same launch takes when it runs well: its lower quartile (not the minimum, which a few
            # lucky launches set); a bimodal kernel's slow half is charged in full, not against the median
            # between the two modes
            excess = float(np.clip(d - np.percentile(d, 25), 0, None).sum())
            noisy.append((excess, cv, key, d, k_op[members]))
    if not noisy:
        return []
    noisy.sort(key=lambda x: -x[0])
    excess, cv, key, d, ops = noisy[0]
    p10, p50, p90 = np.percentile(d, [10, 50, 90])
    name = str(key[0])
    short = name if len(name) <= 70 else name[:67] + "..."
    return [
        Finding(
            id="variance",
            title=f"{short} varies {100 * cv:.0f}% (coefficient of variation) across {len(d)} launches of one shape"
            + (f", and {len(noisy) - 1} more kernel shape(s)" if len(noisy) > 1 else ""),
            cost_ns=int(sum(n[0] for n in noisy)),
            seen=[
                f"grid {key[1:4]}, block {key[4:7]}, {'same input shapes' if key[7] else 'input shapes not recorded'}: "
                f"p10 {duration(p10)}, median {duration(p50)}, "
                f"p90 {duration(p90)}, max {duration(d.max())}",
                f"{len(noisy)} kernel shape(s) vary more than {100 * ctx.t.variance_max_cv:.0f}%; the cost is their "
                f"launches' time above each shape's lower quartile, {duration(sum(n[0] for n in noisy))} in all, "
                f"{duration(excess)} of it this kernel's",
            ],
            where=ctx.where(ops, d.astype(np.int64)),  # the lines launching it, most kernel time first
            why="When identical launches take different times, a mean or a single measurement misleads; the cause "
            "is outside the kernel (clocks, temperature, other work on the GPU, data-dependent work or caching).",
            fix="Compare medians and percentiles over several steps, not one run's mean; check clocks and other "
            "processes on the GPU (nvidia-smi), and whether the input data changes the work done.",
            numbers={"cv": cv, "launches": float(len(d)), "p50_ns": float(p50), "p90_ns": float(p90)},
        )
    ]
