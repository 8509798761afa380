"""The performance model: FLOPs, bytes, achieved rates and speed of light per op, line and step, and MFU.

Pure function of the timeline pass (no Nsight Compute). Method:
- Each op instance's FLOPs and minimum bytes come from its recorded shapes, strides, dtypes and values
  (op_cost). An op is charged only when no op around it is: the outermost op with a formula owns
  the work (aten::convolution, not also the cudnn_convolution inside it; aten::to, not also its copy_),
  and an op that moves nothing (a view) never hides what runs inside it. An op with no formula is
  *unknown*: its kernel time is reported as not modelled, never as 0 FLOPs.
- The time an op is judged on is its kernels' time: the kernels it and the ops inside it launched (not
  its CPU time, which the profiler inflates). Autotuning benchmarks and the steps run with the capture
  off (no ops to charge) are left out.
- Speed of light: ideal time = max(FLOPs / the peak of the pipe it ran on, bytes / peak bandwidth), per
  gpu_peaks; efficiency = ideal / measured. The pipe: tensor cores of the dtype for matrix products
  (an fp32 one on TF32 tensor cores only where its kernels say tf32), the non-tensor FP32 rate otherwise.
  A causal attention op's ideal counts half its FLOPs (its kernels skip the masked half). Above 100%:
  the data came from cache faster than memory bandwidth allows (the ideal is a floor, not a score).
- MFU per step: the step's FLOPs over (step time x the datasheet's dense peak of the pipe most FLOPs ran
  on). The
  profiled step is slower than the program's; where tenprof timed steps with the capture off
  (analyses.timeline.overhead), MFU is also given on that un-profiled step time, which is the one to believe.
- User metrics (tenprof.scope(..., flops=...), Triton launch_metadata): summed per scope or kernel name
  and divided by the kernel time inside it, as Proton does.
"""

from __future__ import annotations

import dataclasses
import json
import re
import weakref
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from tenprof.analyses.perf_model.gpu_peaks import GpuPeaks, peaks_for
from tenprof.analyses.perf_model.op_cost import FORMULA_OPS, OpCost, op_cost_of_row
from tenprof.analyses.timeline.overhead import in_unrecorded_steps, kernel_launch_ns, measure
from tenprof.analyses.timeline.summary import user_frame_of
from tenprof.store.profile import Profile
from tenprof.store.strings import Strings

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]

# the is_causal argument of the attention ops, by position in their aten schemas
_CAUSAL_ARG = {
    "aten::_scaled_dot_product_flash_attention": 4,
    "aten::_scaled_dot_product_efficient_attention": 6,
    "aten::_scaled_dot_product_cudnn_attention": 6,
    "aten::_scaled_dot_product_flash_attention_backward": 11,
    "aten::_scaled_dot_product_efficient_attention_backward": 11,
    "aten::_scaled_dot_product_cudnn_attention_backward": 14,
}
_FLOPS_KEY = re.compile(r"flops(8|16|32|64)?")
# below this share of kernel time with formulas, the FLOPs counted say too little of the work for an MFU
_MIN_MODELLED_PERCENT = 50.0
# the tensor-core pipe of each compute dtype (op_cost's names -> gpu_peaks' pipes)
_TENSOR_PIPE = {"bfloat16": "bf16", "float16": "fp16", "float8": "fp8", "int8": "int8", "float64": "fp64"}
_PIPE_TEXT = {
    "fp32": "FP32 (no tensor cores)",
    "tf32": "TF32 tensor cores",
    "bf16": "BF16 tensor cores",
    "fp16": "FP16 tensor cores",
    "fp8": "FP8 tensor cores",
    "int8": "INT8 tensor cores",
    "fp64": "FP64 tensor cores",
}


@dataclass(frozen=True)
class Speed:
    """Work and kernel time of some ops, and what follows from them. None: not known (never 0)."""

    gpu_ns: int
    flops: float | None
    bytes: float | None
    ideal_ns: float | None  # at the speed of light; None without peaks or without FLOPs

    @property
    def tflops_per_s(self) -> float | None:
        return self.flops / self.gpu_ns / 1e3 if self.flops is not None and self.gpu_ns > 0 else None

    @property
    def gbytes_per_s(self) -> float | None:
        return self.bytes / self.gpu_ns if self.bytes is not None and self.gpu_ns > 0 else None

    @property
    def sol_percent(self) -> float | None:
        return 100.0 * self.ideal_ns / self.gpu_ns if self.ideal_ns is not None and self.gpu_ns > 0 else None


@dataclass(frozen=True)
class OpSpeed:
    """The instances of one op with one signature (name, shapes, dtypes, strides, values)."""

    name: str
    shapes: str
    dtype: str
    pipe: str  # the peak it is judged against ("bf16", "tf32", "fp32", ...); "" when unknown
    bound: str  # "compute" or "memory" at the speed of light; "" when unknown
    rule: str  # the FLOP formula used
    calls: int
    speed: Speed
    line: str  # the user line most of its kernel time came from
    kernel_times: list[tuple[str, int]]  # each kernel it ran and its time, most first
    strides: str = ""
    values: str = ""
    matmul: bool = False  # its FLOPs are matrix products (could run on tensor cores)

    @property
    def kernels(self) -> list[str]:
        """The names of the kernels holding the most of its time (at most 3)."""
        return [name for name, _ in self.kernel_times[:3]]


@dataclass(frozen=True)
class LineSpeed:
    line: str
    speed: Speed


@dataclass(frozen=True)
class StepSpeed:
    step: int
    duration_ns: int
    flops: float | None  # None when the step ran kernels no formula covers... only if it ran none that one did
    tokens: int | None
    mfu_percent: float | None

    @property
    def tokens_per_s(self) -> float | None:
        return self.tokens / self.duration_ns * 1e9 if self.tokens and self.duration_ns > 0 else None


@dataclass(frozen=True)
class UnknownOp:
    name: str
    calls: int
    gpu_ns: int
    why: str = "no formula"  # or: its shapes or values were not recorded


@dataclass(frozen=True)
class UserMetrics:
    """A scope or user kernel the user gave numbers to (tenprof.scope(..., flops=...), launch_metadata)."""

    owner: str  # "scope" or "launch"
    name: str
    calls: int
    gpu_ns: int  # kernel time inside it
    metrics: dict[str, float]  # summed over its calls

    @property
    def tflops_per_s(self) -> float | None:
        """flops and Triton's flops8/16/32/64 (Proton's names) over the kernel time inside."""
        counted = [v for k, v in self.metrics.items() if _FLOPS_KEY.fullmatch(k)]
        return sum(counted) / self.gpu_ns / 1e3 if counted and self.gpu_ns > 0 else None

    @property
    def gbytes_per_s(self) -> float | None:
        return self.metrics["bytes"] / self.gpu_ns if "bytes" in self.metrics and self.gpu_ns > 0 else None


@dataclass(frozen=True)
class PerfModel:
    gpu: str
    peaks: str  # what the efficiencies are against, e.g. "H100 SXM (measured bf16, datasheet others)"
    mfu_pipe: str  # the pipe MFU is against
    mfu_peak_tflops: float | None
    ops: list[OpSpeed]
    lines: list[LineSpeed]
    steps: list[StepSpeed]
    total: Speed  # every modelled op
    kernel_ns: int  # all kernel time (modelled or not)
    unknown: list[UnknownOp]  # ops with kernel time but no formula, most time first
    user: list[UserMetrics] = field(default_factory=list)
    mfu_percent: float | None = None  # median over the recorded complete steps
    unprofiled_mfu_percent: float | None = None  # on the step time measured with the capture off
    tokens_per_s: float | None = None  # median over the steady steps that said how many tokens they held

    @property
    def modelled_percent(self) -> float:
        return 100.0 * self.total.gpu_ns / self.kernel_ns if self.kernel_ns else 0.0


# What depends on the profile alone, made once per profile: the report's section and the speed-of-light
# finding each build a model (of all kernels, and of the analysed steps').
_SIGNATURES: weakref.WeakKeyDictionary[Profile, tuple[I64, I64, list[OpCost]]] = weakref.WeakKeyDictionary()
_OWNERS: weakref.WeakKeyDictionary[Profile, I64] = weakref.WeakKeyDictionary()


def perf_model(profile: Profile, kernels: npt.NDArray[np.bool_] | None = None) -> PerfModel | None:
    """The model of a profile with GPU kernels (only of the `kernels` marked, when given: the findings
    judge the analysed steps); None without kernels (nothing to judge)."""
    if not profile.table("kernels").num_rows:
        return None
    return _Model(profile, kernels).build()


class _Model:
    def __init__(self, profile: Profile, kernels: npt.NDArray[np.bool_] | None) -> None:
        self.profile = profile
        gpus = profile.meta.gpus
        self.gpu = gpus[0].name if gpus else ""
        self.peaks: GpuPeaks | None = peaks_for(self.gpu) if self.gpu else None
        ops = profile.table("ops")
        self.n_ops = ops.num_rows
        self.parent = ops.column("parent_op_id").to_numpy()
        self.names = profile.strings("ops", "name")
        columns = ("name", "input_shapes", "input_dtypes", "input_strides", "input_values")
        coded = [profile.strings("ops", c) for c in columns]
        self.texts = [c.values for c in coded]
        cached = _SIGNATURES.get(profile)
        if cached is None:
            cached = _SIGNATURES[profile] = self._signatures(coded)
        self.sig, self.sig_keys, self.costs = cached
        self.k_op = profile.column("kernels", "op_id").astype(np.int64)
        self.k_dur = profile.column("kernels", "duration_ns").astype(np.int64)
        # kernels of Inductor's autotuning benchmarks are not the program's: left out of everything
        autotuning = ops.column("is_autotuning").to_numpy(zero_copy_only=False).astype(bool)
        self.k_keep = (
            (self.k_op < 0) | ~autotuning[np.maximum(self.k_op, 0)] if self.n_ops else np.ones(len(self.k_op), bool)
        )
        # kernels of the steps run with the capture off (to time the program un-profiled) have no op: they
        # are not work the model could judge, and counting them would read as unmodelled time
        self.k_keep &= ~in_unrecorded_steps(profile, kernel_launch_ns(profile))
        if kernels is not None:
            self.k_keep = self.k_keep & kernels
        self.k_names = profile.strings("kernels", "name")
        self.sig_pipe: list[str] = []

    def _signatures(self, coded: list[Strings]) -> tuple[I64, I64, list[OpCost]]:
        """One signature per distinct combination of the five columns among the ops with a formula (costs
        are computed once per signature); every other op shares signature 0, unknown. Per op, its
        signature; per signature, its codes into the five columns and its cost."""
        rows = np.flatnonzero(self.names.where(lambda n: n in FORMULA_OPS))
        codes, first = _combined_codes([c.codes[rows] for c in coded])
        sig = np.zeros(self.n_ops, dtype=np.int64)
        sig[rows] = codes + 1
        found = np.stack([c.codes[rows[first]] for c in coded], axis=1) if len(rows) else np.zeros((0, 5))
        keys: I64 = np.concatenate([np.full((1, 5), -1, dtype=np.int64), found.astype(np.int64)])
        costs = [OpCost(None, None, "", False, "")] + [
            op_cost_of_row(*(self.texts[j][int(key[j])] for j in range(5))) for key in keys[1:]
        ]
        return sig, keys, costs

    def build(self) -> PerfModel:
        owner_of = _OWNERS.get(self.profile)
        if owner_of is None:
            owner_of = _OWNERS[self.profile] = self._owners()
        k_owner = np.where(self.k_op >= 0, owner_of[np.maximum(self.k_op, 0)], -1) if self.n_ops else self.k_op
        k_owner = np.where(self.k_keep, k_owner, -2)  # -2: autotuning, left out of everything
        kept = k_owner != -2
        op_gpu = np.bincount(k_owner[k_owner >= 0], weights=self.k_dur[k_owner >= 0], minlength=self.n_ops)
        op_gpu = op_gpu.astype(np.int64)
        sig_pipe = self.sig_pipe = self._pipes(k_owner)
        flops, nbytes, ideal = self._per_op(sig_pipe)
        known = (op_gpu > 0) & ~np.isnan(flops)
        lines = _Lines(self.profile)
        ops = self._op_rows(op_gpu, known, flops, nbytes, ideal, sig_pipe, k_owner, lines)
        total = _speed(op_gpu[known], flops[known], nbytes[known], ideal[known])
        unknown = self._unknown(k_owner, known)
        steps, mfu_pipe, peak = self._steps(known, flops)
        model = PerfModel(
            gpu=self.gpu,
            peaks=self._peaks_text(),
            mfu_pipe=mfu_pipe,
            mfu_peak_tflops=None if peak is None else peak / 1e12,
            ops=ops,
            lines=self._line_rows(op_gpu, known, flops, nbytes, ideal, lines),
            steps=steps,
            total=total,
            kernel_ns=int(self.k_dur[kept].sum()),
            unknown=unknown,
            user=self._user_metrics(k_owner),
        )
        return self._with_mfu(model, peak)

    # -- ownership and costs

    def _owners(self) -> I64:
        """Per op, the op that owns its work: its outermost enclosing op with a formula (itself when it has
        one and nothing around it does), -1 when none does. Walked top-down one depth at a time."""
        if not self.n_ops:
            return np.zeros(0, dtype=np.int64)
        names = self.texts[0]
        has = np.array(
            [k[0] >= 0 and self._owns(c, names[int(k[0])]) for c, k in zip(self.costs, self.sig_keys, strict=True)]
        )
        owns = has[self.sig]
        depth = self.profile.column("ops", "depth").astype(np.int64)
        order = np.argsort(depth, kind="stable")
        bounds = np.searchsorted(depth[order], np.arange(int(depth.max()) + 2))
        owner_of = self._outermost(owns, order, bounds)
        # Autocast records an op twice: as called (fp32 inputs, then the casts) and, inside it, as run (bf16
        # inputs). The inner one says what ran: the outer one owns nothing, so the inner one owns its own
        # work and each cast (an aten::to) its own.
        ids = np.arange(self.n_ops, dtype=np.int64)
        name = self.names.codes
        again = (owner_of >= 0) & (owner_of != ids) & (name == name[np.maximum(owner_of, 0)])
        if again.any():
            owns[owner_of[again]] = False
            owner_of = self._outermost(owns, order, bounds)
        return owner_of

    def _outermost(self, owns: npt.NDArray[np.bool_], order: I64, bounds: I64) -> I64:
        """Per op, its outermost enclosing op (itself included) marked in `owns`, -1 when none is."""
        owner_of = np.full(self.n_ops, -1, dtype=np.int64)
        for d in range(len(bounds) - 1):
            rows = order[bounds[d] : bounds[d + 1]]
            parent = self.parent[rows]
            inherited = np.where(parent >= 0, owner_of[np.maximum(parent, 0)], -1)
            owner_of[rows] = np.where(inherited >= 0, inherited, np.where(owns[rows], rows, -1))
        return owner_of

    @staticmethod
    def _owns(cost: OpCost, name: str) -> bool:
        # An op that does no arithmetic and cannot say what it moves (a view; `to` whose copy, if any, is not
        # recorded) does not hide what runs inside it: a reshape's or a `to`'s copy_ is then the owner.
        return name in FORMULA_OPS and not (cost.flops == 0 and not cost.bytes)

    def _pipes(self, k_owner: I64) -> list[str]:
        """Per signature, the peak it is judged against: tensor cores of its dtype for matrix products
        (fp32 on TF32 only where its kernels' names say tf32), non-tensor FP32 otherwise."""
        tf32 = self.k_names.where(lambda n: "tf32" in n.lower() or "s1688" in n.lower())
        sig_tf32 = np.zeros(len(self.costs), dtype=bool)
        hit = (k_owner >= 0) & tf32
        sig_tf32[self.sig[k_owner[hit]]] = True
        pipes = []
        for i, cost in enumerate(self.costs):
            if not cost.matmul:
                pipes.append("fp32" if cost.flops is not None else "")
            elif cost.dtype == "float32":
                pipes.append("tf32" if sig_tf32[i] else "fp32")
            else:
                pipes.append(_TENSOR_PIPE.get(cost.dtype, ""))
        return pipes

    def _per_op(self, sig_pipe: list[str]) -> tuple[F64, F64, F64]:
        """Per op: FLOPs, bytes (NaN: unknown) and ideal time in ns (NaN without peaks or FLOPs)."""
        sig_flops = np.array([np.nan if c.flops is None else c.flops for c in self.costs], dtype=np.float64)
        sig_bytes = np.array([np.nan if c.bytes is None else c.bytes for c in self.costs], dtype=np.float64)
        sig_ideal = np.full(len(self.costs), np.nan)
        if self.peaks is not None:
            bandwidth, _ = self.peaks.bytes_per_s()
            for i, pipe in enumerate(sig_pipe):
                peak = self.peaks.flops_per_s(pipe) if pipe else None
                # No ideal without FLOPs, nor without bytes for an op that is not a matrix product: its memory
                # time is most of its ideal, and the FLOPs alone would make it look far slower than it is.
                if peak is None or np.isnan(sig_flops[i]) or (np.isnan(sig_bytes[i]) and not self.costs[i].matmul):
                    continue
                compute = sig_flops[i] / peak[0] * (0.5 if self._causal(i) else 1.0)
                memory = 0.0 if np.isnan(sig_bytes[i]) else sig_bytes[i] / bandwidth
                sig_ideal[i] = max(compute, memory) * 1e9
        if not self.n_ops:
            empty = np.zeros(0)
            return empty, empty, empty
        return sig_flops[self.sig], sig_bytes[self.sig], sig_ideal[self.sig]

    def _causal(self, sig: int) -> bool:
        """A causal attention op: its kernels skip the masked half of the scores, which the FLOPs (as torch
        counts them) do not, so its ideal time is half its FLOPs' time."""
        key = self.sig_keys[sig]
        index = _CAUSAL_ARG.get(self.texts[0][int(key[0])]) if key[0] >= 0 else None
        if index is None:
            return False
        try:
            values = json.loads(self.texts[4][int(key[4])])
            return bool(values[index] == "True")
        except (ValueError, TypeError, IndexError):
            return False

    # -- tables

    def _op_rows(
        self,
        op_gpu: I64,
        known: npt.NDArray[np.bool_],
        flops: F64,
        nbytes: F64,
        ideal: F64,
        sig_pipe: list[str],
        k_owner: I64,
        lines: _Lines,
    ) -> list[OpSpeed]:
        """One row per signature that ran kernels and has a formula, most kernel time first."""
        ops = np.flatnonzero((op_gpu > 0) & known)
        sig = self.sig[ops]
        size = len(self.costs)
        calls = np.bincount(sig, minlength=size)
        gpu = np.bincount(sig, weights=op_gpu[ops], minlength=size).astype(np.int64)
        total_flops = np.bincount(sig, weights=flops[ops], minlength=size)
        sig_bytes, sig_ideal = np.full(size, np.nan), np.full(size, np.nan)
        sig_bytes[sig], sig_ideal[sig] = nbytes[ops], ideal[ops]  # the same for every op of a signature
        # the line holding the most of each signature's kernel time, and its kernels by time
        best_line = _heaviest_per_group(sig, lines.frame_of(ops), op_gpu[ops])
        # (a trace of kernels without ops has no owner: `known` is empty)
        charged = (k_owner >= 0) & (known[np.maximum(k_owner, 0)] if len(known) else False)
        k_sig = self.sig[k_owner[charged]]
        kernel_times = _sums_per_pair(k_sig, self.k_names.codes[charged], self.k_dur[charged])
        rows = []
        for s in np.flatnonzero(calls).tolist():
            cost = self.costs[s]
            key = self.sig_keys[s]
            texts = [self.texts[j][int(key[j])] for j in range(5)]
            n = int(calls[s])
            speed = Speed(
                int(gpu[s]),
                float(total_flops[s]),
                None if np.isnan(sig_bytes[s]) else float(sig_bytes[s] * n),
                None if np.isnan(sig_ideal[s]) else float(sig_ideal[s] * n),
            )
            times = sorted(kernel_times.get(s, {}).items(), key=lambda kv: -kv[1])
            rows.append(
                OpSpeed(
                    name=texts[0],
                    shapes=texts[1],
                    dtype=cost.dtype,
                    pipe=sig_pipe[s],
                    bound=_bound(cost, sig_pipe[s], self.peaks),
                    rule=cost.rule,
                    calls=n,
                    speed=speed,
                    line=lines.text(best_line.get(s, -1)),
                    kernel_times=[(self.k_names.values[c], int(t)) for c, t in times],
                    strides=texts[3],
                    values=texts[4],
                    matmul=cost.matmul,
                )
            )
        rows.sort(key=lambda r: -r.speed.gpu_ns)
        return rows

    def _line_rows(
        self, op_gpu: I64, known: npt.NDArray[np.bool_], flops: F64, nbytes: F64, ideal: F64, lines: _Lines
    ) -> list[LineSpeed]:
        """The modelled ops' work per user line (-1: no line)."""
        ops = np.flatnonzero(known)
        frame = lines.frame_of(ops) + 1
        size = int(frame.max()) + 1 if len(frame) else 0

        def total(values: F64) -> tuple[F64, F64]:
            """Per line, the sum of the known values and how many were unknown."""
            unknown = np.isnan(values[ops])
            sums = np.bincount(frame, weights=np.where(unknown, 0.0, values[ops]), minlength=size)
            missing = np.bincount(frame, weights=unknown.astype(np.float64), minlength=size)
            return sums.astype(np.float64), missing.astype(np.float64)

        gpu = np.bincount(frame, weights=op_gpu[ops], minlength=size)
        (f, f_nan), (b, b_nan), (i, i_nan) = total(flops), total(nbytes), total(ideal)
        rows = [
            LineSpeed(
                lines.text(u - 1),
                Speed(
                    int(gpu[u]),
                    None if f_nan[u] else float(f[u]),
                    None if b_nan[u] else float(b[u]),
                    None if i_nan[u] else float(i[u]),
                ),
            )
            for u in np.flatnonzero(gpu > 0).tolist()
        ]
        rows.sort(key=lambda r: -r.speed.gpu_ns)
        return rows

    def _unknown(self, k_owner: I64, known: npt.NDArray[np.bool_]) -> list[UnknownOp]:
        """Kernel time the model cannot judge, by the innermost op that launched it ("(no op)" outside ops):
        under no op with a formula, or under one whose shapes or values were not recorded."""
        owner_known = np.where(k_owner >= 0, known[np.maximum(k_owner, 0)] if self.n_ops else False, False)
        lost = np.flatnonzero((k_owner != -2) & ~owner_known)
        if not len(lost):
            return []
        op = self.k_op[lost]
        name = np.where(op >= 0, self.names.codes[np.maximum(op, 0)] if self.n_ops else -1, -1) + 1
        unrecorded = (k_owner[lost] >= 0).astype(np.int64)
        sums = _sums_per_pair(name * 2 + unrecorded, np.zeros(len(lost), dtype=np.int64), self.k_dur[lost])
        counts = _sums_per_pair(
            name * 2 + unrecorded, np.zeros(len(lost), dtype=np.int64), np.ones(len(lost), np.int64)
        )
        rows = [
            UnknownOp(
                self.names.values[key // 2 - 1] if key // 2 else "(no op)",
                int(counts[key][0]),
                int(by[0]),
                "shapes or values not recorded" if key % 2 else "no formula",
            )
            for key, by in sums.items()
        ]
        rows.sort(key=lambda u: -u.gpu_ns)
        return rows

    def _steps(self, known: npt.NDArray[np.bool_], flops: F64) -> tuple[list[StepSpeed], str, float | None]:
        """Per complete recorded step: its FLOPs, its time and MFU. An op belongs to the step row whose range
        holds its start (not to the step number: numbers repeat in a trace stitched from several). The host
        may run ahead of the GPU, so a step's time is the GPU's: from the later of its start and the end of
        the previous step's last kernel, to the later of its end and the end of its own last kernel."""
        steps = self.profile.table("steps")
        if not steps.num_rows or not self.n_ops:
            return [], "", None
        start, end = (steps.column(c).to_numpy().astype(np.int64) for c in ("start_ns", "end_ns"))
        order = np.argsort(start, kind="stable")
        op_start = self.profile.column("ops", "start_ns")
        pos = np.searchsorted(start[order], op_start, side="right") - 1
        row = np.where(pos >= 0, order[np.maximum(pos, 0)], -1)
        row = np.where((row >= 0) & (op_start < end[np.maximum(row, 0)]), row, -1)
        charged = known & (row >= 0)
        pipe, peak = self._mfu_pipe(charged, flops)
        size = steps.num_rows
        per_step = np.bincount(row[charged], weights=flops[charged], minlength=size)
        # each step's last kernel end, by the kernels' launch times (a capture-off step's kernels have no op)
        launched = kernel_launch_ns(self.profile)
        k_pos = np.searchsorted(start[order], launched, side="right") - 1
        k_row = np.where(k_pos >= 0, order[np.maximum(k_pos, 0)], -1)
        k_row = np.where((k_row >= 0) & (launched < end[np.maximum(k_row, 0)]), k_row, -1)
        last_end = np.zeros(size, dtype=np.int64)
        np.maximum.at(last_end, k_row[k_row >= 0], self.profile.column("kernels", "end_ns")[k_row >= 0])
        complete = steps.column("complete").to_numpy(zero_copy_only=False)
        capture_on = steps.column("capture_on").to_pylist()
        tokens = steps.column("tokens").to_pylist()
        numbers = steps.column("step").to_pylist()
        rows = []
        gpu_free = 0  # when the GPU finished the previous step's work: a step's own work starts after it
        for i in order.tolist():
            began = max(int(start[i]), gpu_free)
            done = max(int(end[i]), int(last_end[i]))
            gpu_free = done
            if not complete[i] or capture_on[i] is False:
                continue
            took = done - began if done > began else int(end[i] - start[i])
            f = float(per_step[i])
            mfu = 100.0 * f / (took * 1e-9 * peak) if peak is not None and took > 0 else None
            token = tokens[i] if tokens[i] is not None and tokens[i] >= 0 else None
            rows.append(StepSpeed(int(numbers[i]), int(took), f, token, mfu))
        return rows, pipe, peak

    def _mfu_pipe(self, charged: npt.NDArray[np.bool_], flops: F64) -> tuple[str, float | None]:
        """The pipe most of the FLOPs ran on, and its dense peak (None without peaks)."""
        per_sig = np.bincount(self.sig[charged], weights=flops[charged], minlength=len(self.costs))
        pipe_flops: dict[str, float] = {}
        for s in np.flatnonzero(per_sig).tolist():
            pipe_flops[self.sig_pipe[s]] = pipe_flops.get(self.sig_pipe[s], 0.0) + float(per_sig[s])
        pipe = max(pipe_flops, key=lambda p: pipe_flops[p]) if pipe_flops else ""
        # MFU is against the datasheet's dense peak (the convention), not the measured one SOL uses
        found = self.peaks.flops_per_s(pipe, measured=False) if self.peaks is not None and pipe else None
        return pipe, None if found is None else found[0]

    def _with_mfu(self, model: PerfModel, peak: float | None) -> PerfModel:
        """MFU of the typical step: the median of the steady steps' (the first left out when there are
        several; a median, so that a one-off stall or a trace stitched from several runs does not decide
        it); and the median step's FLOPs over the step time measured with the capture off, where it was
        (the GPU's own work per step, which profiling does not slow, bounds that from below)."""
        steady = model.steps[1:] if len(model.steps) > 1 else model.steps
        rates = [s.tokens_per_s for s in steady if s.tokens_per_s is not None]
        if rates:
            model = dataclasses.replace(model, tokens_per_s=float(np.median(rates)))
        if peak is None or not steady or model.modelled_percent < _MIN_MODELLED_PERCENT:
            return model
        mfu = float(np.median([s.mfu_percent or 0.0 for s in steady]))
        model = dataclasses.replace(model, mfu_percent=mfu)
        overhead = measure(self.profile)
        if overhead.unprofiled_step_ns:
            step = max(overhead.unprofiled_step_ns, overhead.gpu_busy_per_step_ns or 0.0)
            per_step = float(np.median([s.flops or 0.0 for s in steady]))
            model = dataclasses.replace(model, unprofiled_mfu_percent=100.0 * per_step / (step * 1e-9 * peak))
        return model

    def _user_metrics(self, k_owner: I64) -> list[UserMetrics]:
        table = self.profile.table("user_metrics")
        if not table.num_rows:
            return []
        owner = table.column("owner").to_pylist()
        owner_id = table.column("owner_id").to_pylist()
        metric = table.column("metric").to_pylist()
        value = table.column("value").to_pylist()
        scope_gpu, scope_names = self._scope_kernel_time()
        op_gpu = self._op_inclusive_kernel_time()
        groups: dict[tuple[str, str], dict[str, float]] = {}
        seen: dict[tuple[str, str], set[int]] = {}
        times: dict[tuple[str, str], int] = {}
        for kind, oid, m, v in zip(owner, owner_id, metric, value, strict=True):
            if kind == "scope" and 0 <= oid < len(scope_names):
                name, gpu = scope_names[oid], int(scope_gpu[oid])
            elif kind == "launch" and 0 <= oid < self.n_ops:
                name, gpu = self.names.at(oid), int(op_gpu[oid])
            else:
                continue
            key = (kind, name)
            sums = groups.setdefault(key, {})
            sums[m] = sums.get(m, 0.0) + float(v)
            if oid not in seen.setdefault(key, set()):
                seen[key].add(oid)
                times[key] = times.get(key, 0) + gpu
        rows = [UserMetrics(k[0], k[1], len(seen[k]), times[k], dict(groups[k])) for k in groups]
        rows.sort(key=lambda r: -r.gpu_ns)
        return rows

    def _op_inclusive_kernel_time(self) -> I64:
        """Per op, the kernel time of it and the ops inside it."""
        total = np.zeros(self.n_ops, dtype=np.int64)
        at = np.where(self.k_keep, self.k_op, -1)
        weight = self.k_dur
        while (at >= 0).any():
            live = at >= 0
            np.add.at(total, at[live], weight[live])
            at = np.where(live, self.parent[np.maximum(at, 0)], -1)
        return total

    def _scope_kernel_time(self) -> tuple[I64, list[str]]:
        """Per scope range, the kernel time of the ops inside it (nested scopes included), and its name."""
        scopes = self.profile.table("scopes")
        names = scopes.column("name").to_pylist()
        parent = scopes.column("parent_scope_id").to_numpy()
        total = np.zeros(len(names), dtype=np.int64)
        if not self.n_ops or not len(names):
            return total, names
        op_scope = self.profile.column("ops", "scope_id")
        at = np.where((self.k_op >= 0) & self.k_keep, op_scope[np.maximum(self.k_op, 0)], -1)
        while (at >= 0).any():
            live = at >= 0
            np.add.at(total, at[live], self.k_dur[live])
            at = np.where(live, parent[np.maximum(at, 0)], -1)
        return total, names

    def _peaks_text(self) -> str:
        if self.peaks is None:
            return f"no peaks known for {self.gpu or 'this GPU'}: rates shown, no speed-of-light efficiency"
        measured = ", ".join(self.peaks.measured_tflops)
        bandwidth = self.peaks.bytes_per_s()[1]
        return f"{self.peaks.model}: " + (
            f"measured {measured} peak, datasheet dense rates otherwise; {bandwidth} memory bandwidth"
            if measured
            else f"datasheet dense rates; {bandwidth} memory bandwidth"
        )


def pipe_text(pipe: str) -> str:
    return _PIPE_TEXT.get(pipe, pipe or "unknown")


def _speed(gpu: I64, flops: F64, nbytes: F64, ideal: F64) -> Speed:
    def total(values: F64) -> float | None:
        return None if not len(values) or np.isnan(values).any() else float(values.sum())

    return Speed(int(gpu.sum()), total(flops), total(nbytes), total(ideal))


def _bound(cost: OpCost, pipe: str, peaks: GpuPeaks | None) -> str:
    if peaks is None or cost.flops is None or cost.bytes is None or not pipe:
        return ""
    peak = peaks.flops_per_s(pipe)
    if peak is None:
        return ""
    return "compute" if cost.flops / peak[0] >= cost.bytes / peaks.bytes_per_s()[0] else "memory"


class _Lines:
    """Each op's user line (the innermost frame of its call path in user code), as a frame index."""

    def __init__(self, profile: Profile) -> None:
        frames = profile.table("frames")
        self._user = user_frame_of(profile)
        self._op_frame = profile.column("ops", "frame_id")
        self._files = frames.column("file").to_pylist()
        self._lines = frames.column("line").to_pylist()

    def frame_of(self, ops: I64) -> I64:
        frame = self._op_frame[ops]
        if not len(self._user):
            return np.full(len(ops), -1, dtype=np.int64)
        return np.where(frame >= 0, self._user[np.maximum(frame, 0)], -1).astype(np.int64)

    def text(self, frame: int) -> str:
        return f"{self._files[frame]}:{self._lines[frame]}" if frame >= 0 else ""


def _dense(key: I64) -> tuple[I64, I64]:
    """`key` as codes 0..n-1 in sorted order, and a row holding each code (a sort, not numpy's hashing
    unique, which is slow on millions of rows)."""
    order = np.argsort(key, kind="stable")
    ordered = key[order]
    new = np.ones(len(key), dtype=bool)
    new[1:] = ordered[1:] != ordered[:-1]
    codes = np.empty(len(key), dtype=np.int64)
    codes[order] = np.cumsum(new) - 1
    return codes, order[new]


def _combined_codes(columns: list[I64]) -> tuple[I64, I64]:
    """One code per distinct row of the columns (codes each), and a row holding each code."""
    if not columns or not len(columns[0]):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    key = columns[0].astype(np.int64)
    bound = int(key.max()) + 1
    for column in columns[1:]:
        width = int(column.max()) + 1
        if bound * width >= 1 << 62:  # keep the combined key inside int64
            key, first = _dense(key)
            bound = len(first)
        key = key * width + column
        bound *= width
    return _dense(key)


def _heaviest_per_group(group: I64, member: I64, weight: I64) -> dict[int, int]:
    """For each group, the member with the largest total weight."""
    totals = _sums_per_pair(group, member, weight)
    return {g: max(by.items(), key=lambda kv: kv[1])[0] for g, by in totals.items()}


def _sums_per_pair(group: I64, member: I64, weight: I64) -> dict[int, dict[int, float]]:
    """Sum of `weight` per (group, member) pair, as {group: {member: sum}}."""
    if not len(group):
        return {}
    shift = int(member.min())
    width = int(member.max()) - shift + 1
    codes, first = _dense(group * width + (member - shift))
    sums = np.bincount(codes, weights=weight)
    out: dict[int, dict[int, float]] = {}
    for row, total in zip(first.tolist(), sums.tolist(), strict=True):
        out.setdefault(int(group[row]), {})[int(member[row])] = total
    return out
