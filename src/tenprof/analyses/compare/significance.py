"""One rule for "beyond the step-to-step noise", used wherever a report says a difference is real.

Two sets of step times (two runs in `diff`; the steps run with the capture off against the recorded ones
in the overhead line) are compared by the Wilcoxon rank-sum statistic: the sum of one set's ranks in the
pooled times (ties share their mean rank). Its p-value is the share of the ways to split the pooled times
into sets of the same sizes whose statistic is at least as extreme: counted over every split when there
are at most `EXACT_SPLITS` of them, else over `SAMPLED_SPLITS` random ones (fixed seed, the observed
split counted once). A difference is beyond the noise when p < `SIGNIFICANT`, and only then.

Why ranks: step times have outliers (a slow first step, a garbage collection) that move a mean or a
median test's statistic; ranks do not care how far a step is, only where it lies. The most extreme split
(every step of one set below every step of the other) has p = 2 / C(n + m, n) two-sided, 1 / C(n + m, n)
one-sided: with too few steps no outcome can be significant, and `can_tell` says so before anything is
claimed either way.
"""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

SIGNIFICANT = 0.05
EXACT_SPLITS = 20_000
SAMPLED_SPLITS = 20_000
_BATCH_VALUES = 4_000_000  # pooled values relabelled at once: bounds the memory of a large test

Alternative = Literal["two-sided", "less"]


@dataclass(frozen=True)
class RankTest:
    p_value: float
    splits: int  # how many splits the p-value counts over
    exact: bool  # every split counted (else a sample of them)

    @property
    def beyond_noise(self) -> bool:
        return self.p_value < SIGNIFICANT

    def describe(self, sizes: tuple[int, int]) -> str:
        how = "all" if self.exact else "a sample of"
        return f"rank-sum test, {sizes[0]} vs {sizes[1]} steps, {how} {self.splits} splits"


def smallest_p(n: int, m: int, alternative: Alternative = "two-sided") -> float:
    """The smallest p-value sets of n and m steps can give (every step of one below every step of the other)."""
    if n == 0 or m == 0:
        return 1.0
    splits = math.comb(n + m, n)
    if splits.bit_length() > 1000:  # beyond a float's range: as good as 0
        return 0.0
    return min(1.0, (2.0 if alternative == "two-sided" else 1.0) / splits)


def can_tell(n: int, m: int, alternative: Alternative = "two-sided") -> bool:
    """Whether n against m steps can show a difference beyond the noise at all."""
    return smallest_p(n, m, alternative) < SIGNIFICANT


def rank_sum_test(x: npt.ArrayLike, y: npt.ArrayLike, alternative: Alternative = "two-sided") -> RankTest:
    """The rank-sum test of `x` against `y`; 'less': the evidence that `x` is lower than `y`."""
    a, b = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    # A report asks the same question several times (the overhead line, the step decomposition, the
    # findings, MFU each measure the overhead), and a sampled test of a long run takes ~0.4 s: the same
    # values give the same answer (the sample's seed is fixed), so it is worked out once.
    return _rank_sum_test(a.tobytes(), b.tobytes(), alternative)


@functools.lru_cache(maxsize=64)
def _rank_sum_test(x: bytes, y: bytes, alternative: Alternative) -> RankTest:
    a, b = np.frombuffer(x, dtype=np.float64), np.frombuffer(y, dtype=np.float64)
    n, total = len(a), len(a) + len(b)
    if n == 0 or len(b) == 0:
        return RankTest(1.0, 0, True)
    ranks = _mid_ranks(np.concatenate([a, b]))
    observed = float(ranks[:n].sum())
    centre = n * (total + 1) / 2.0
    tolerance = 1e-9 * total * total

    def as_extreme(sums: npt.NDArray[np.float64]) -> int:
        if alternative == "less":
            return int(np.count_nonzero(sums <= observed + tolerance))
        return int(np.count_nonzero(np.abs(sums - centre) >= abs(observed - centre) - tolerance))

    splits = math.comb(total, n)
    if splits <= EXACT_SPLITS:
        chosen = np.fromiter(itertools.chain.from_iterable(itertools.combinations(range(total), n)), np.int64)
        sums = ranks[chosen.reshape(splits, n)].sum(axis=1)
        return RankTest(as_extreme(sums) / splits, splits, True)
    rng = np.random.default_rng(0)
    batch = max(1, _BATCH_VALUES // total)
    count = 0
    for done in range(0, SAMPLED_SPLITS, batch):
        rows = min(batch, SAMPLED_SPLITS - done)
        shuffled = rng.permuted(np.broadcast_to(ranks, (rows, total)), axis=1)
        count += as_extreme(shuffled[:, :n].sum(axis=1))
    return RankTest((count + 1) / (SAMPLED_SPLITS + 1), SAMPLED_SPLITS, False)


def _mid_ranks(values: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Ranks from 1, ties sharing the mean of the ranks they span."""
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    ends = np.r_[starts[1:], len(values)]
    mean_rank = (starts + ends + 1) / 2.0  # ranks starts+1 .. ends, averaged
    ranks = np.empty(len(values), dtype=np.float64)
    ranks[order] = np.repeat(mean_rank, ends - starts)
    return ranks
