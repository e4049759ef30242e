"""Statistics shared by every family: mean/std, bootstrap CIs, paired tests, RMSE, AUROC,
Wilson intervals.

All functions are pure and deterministic for a given ``seed``.  Bootstrap and permutation
procedures resample per-item statistics, never text (as sacrebleu does).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy is imported by the functions that use it: a small score needs none
    import numpy as np

__all__ = [
    "mean",
    "sample_std",
    "mean_std",
    "mean_std_chunks",
    "distinct_counts",
    "bootstrap_ci",
    "bootstrap_ci_counts",
    "percentile_interval",
    "PairedTest",
    "paired_bootstrap",
    "paired_permutation",
    "rmse",
    "auroc",
    "rankdata",
    "normal_cdf",
    "normal_ppf",
    "wilson_interval",
    "cohen_kappa",
    "cohen_kappa_ci",
]

DEFAULT_RESAMPLES = 1000
DEFAULT_SEED = 12345


def _arr(values: Sequence[float] | np.ndarray) -> np.ndarray:
    import numpy as np

    return np.asarray(values, dtype=np.float64)


SMALL = 2048
"""Below this many values, :func:`mean` and :func:`sample_std` run in plain Python, so that a
small score never imports numpy.  Both ways give the very same float: the same IEEE
subtractions and products, summed exactly by ``math.fsum`` (tested)."""


def _floats(values: Sequence[float] | np.ndarray) -> list[float] | None:
    """``values`` as a list of floats when it is small and numpy is not needed, else None."""
    if hasattr(values, "tolist"):  # ndarray, array('d')
        return values.tolist() if len(values) < SMALL else None  # type: ignore[no-any-return]
    if len(values) >= SMALL:
        return None
    return [float(v) for v in values]


def mean(values: Sequence[float] | np.ndarray) -> float | None:
    """Arithmetic mean; None for no values (never NaN)."""
    vals = _floats(values)
    if vals is None:
        vals = _arr(values).tolist()
    if not vals:
        return None
    return float(math.fsum(vals) / len(vals))


def sample_std(values: Sequence[float] | np.ndarray) -> float | None:
    """Sample standard deviation (n-1), as Python's ``statistics.stdev``; 0.0 when n < 2
    (LBRAG's convention), None for no values."""
    vals = _floats(values)
    if vals is not None:
        if not vals:
            return None
        if len(vals) < 2:
            return 0.0
        m = math.fsum(vals) / len(vals)
        return float(math.sqrt(math.fsum([(x - m) * (x - m) for x in vals]) / (len(vals) - 1)))
    a = _arr(values)
    if a.size == 0:
        return None
    if a.size < 2:
        return 0.0
    m = math.fsum(a.tolist()) / a.size
    d = a - m
    return float(math.sqrt(math.fsum((d * d).tolist()) / (a.size - 1)))


def mean_std(values: Sequence[float] | np.ndarray) -> tuple[float | None, float | None]:
    """``(mean(values), sample_std(values))``, the exact sum computed once for both (the very
    same floats as the two functions; tested)."""
    vals = _floats(values)
    if vals is not None:
        if not vals:
            return None, None
        n = len(vals)
        m = math.fsum(vals) / n
        if n < 2:
            return float(m), 0.0
        return float(m), float(math.sqrt(math.fsum([(x - m) * (x - m) for x in vals]) / (n - 1)))
    a = _arr(values)
    n = a.size
    if n < 2:
        return (None, None) if n == 0 else (float(a[0]), 0.0)
    m = math.fsum(a.tolist()) / n
    d = a - m
    return float(m), float(math.sqrt(math.fsum((d * d).tolist()) / (n - 1)))


def mean_std_chunks(chunks: Callable[[], Iterable[Sequence[float] | np.ndarray]],
                    counts: dict[float, int] | None = None,
                    ) -> tuple[float | None, float | None, int]:
    """``(mean, sample_std, n)`` of values that come in chunks, ``chunks()`` giving them again
    for the second pass: the very same floats as :func:`mean_std` of the whole list (its
    exact sums, ``math.fsum``, read the chunks one after the other; tested), in memory of one
    chunk.  ``counts``: :func:`distinct_counts` of the same chunks when the caller took them
    already (None: taken here)."""
    from itertools import chain

    counted = counts if counts is not None else distinct_counts(chunks)
    if counted is not None:
        found = _mean_std_counted(counted)
        if found is not None:
            return found
    n = 0

    def lists() -> Iterator[list[float]]:
        nonlocal n
        for chunk in chunks():
            n += len(chunk)
            yield chunk.tolist() if hasattr(chunk, "tolist") else list(chunk)

    total = math.fsum(chain.from_iterable(lists()))  # element by element in C
    if n == 0:
        return None, None, 0
    m = total / n
    if n < 2:
        return float(m), 0.0, n

    def squares() -> Iterator[list[float]]:
        for chunk in chunks():
            if len(chunk) >= SMALL:
                d = _arr(chunk) - m
                yield (d * d).tolist()
            else:
                yield [(x - m) * (x - m) for x in
                       (chunk.tolist() if hasattr(chunk, "tolist") else chunk)]

    return float(m), float(math.sqrt(math.fsum(chain.from_iterable(squares())) / (n - 1))), n


DISTINCT = 4096
"""Most distinct values :func:`mean_std_chunks` sums by value and count (0/1 metrics, F1 and
RLC of short answers, token counts); past it, value by value."""


def distinct_counts(chunks: Callable[[], Iterable[Sequence[float] | np.ndarray]],
                    ) -> dict[float, int] | None:
    """Each distinct value of the chunks and how often it comes, when the first chunk is big
    (numpy is then in use), every value is finite and there are at most :data:`DISTINCT`;
    else None."""
    counts: dict[float, int] = {}
    first = True
    table = None  # the hash table of _hashed_unique, reused chunk after chunk
    for chunk in chunks():
        if first and len(chunk) < SMALL:
            return None
        first = False
        import numpy as np

        found = None
        if len(counts) > 4:  # a sort of many repeated values is slow: hash them
            if table is None:
                table = np.zeros(1 << 16, dtype=np.uint64)
            found = _hashed_unique(_arr(chunk), table)
        values, times = found or np.unique(_arr(chunk), return_counts=True)
        if values.size > DISTINCT or not np.isfinite(values).all():
            return None
        for v, k in zip(values.tolist(), times.tolist(), strict=True):
            counts[v] = counts.get(v, 0) + k
        if len(counts) > DISTINCT:
            return None
    return counts if counts else None


def _hashed_unique(values: np.ndarray, table: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """``np.unique(values, return_counts=True)`` (the distinct values in order, their counts)
    by a 16-bit multiplicative hash of each value's bits in ``table`` (65,536 uint64, any
    content), without sorting the values: None when two distinct bit patterns share a bucket
    or two distinct patterns are equal floats (0.0 and -0.0: ``np.unique`` keeps one), then
    the caller sorts.  (Some 3x faster than the sort on 16,384 values of a few hundred
    distinct ratios.)"""
    import numpy as np

    bits = np.ascontiguousarray(values, dtype=np.float64).view(np.uint64)
    if not bits.size:
        return None
    buckets = ((bits * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(48)).astype(np.uint16)
    table[buckets] = bits
    if not np.array_equal(table[buckets], bits):
        return None  # a collision
    ordered = np.sort(buckets, kind="stable")  # radix sort of 16-bit keys
    starts = np.flatnonzero(np.concatenate(([True], ordered[1:] != ordered[:-1])))
    times = np.diff(np.append(starts, ordered.size))
    distinct = table[ordered[starts]].view(np.float64)
    order = np.argsort(distinct, kind="stable")
    distinct, times = distinct[order], times[order]
    if distinct.size > 1 and (distinct[1:] == distinct[:-1]).any():
        return None
    return distinct, times


def _mean_std_counted(counts: dict[float, int]) -> tuple[float, float, int] | None:
    """:func:`mean_std_chunks` from each distinct value's count: the sums are exact (rational
    arithmetic) and rounded once, which is what ``math.fsum`` returns (the correctly rounded
    sum); the mean and each deviation's square are the same float operations as value by
    value.  None when the sum is zero (the sign of a zero sum is fsum's to give)."""
    from fractions import Fraction

    n = sum(counts.values())
    exact = sum(Fraction(v) * k for v, k in counts.items())
    if exact == 0:
        return None
    try:
        m = float(exact) / n
        if n < 2:
            return m, 0.0, n
        squares = sum(Fraction((v - m) * (v - m)) * k for v, k in counts.items())
        return m, float(math.sqrt(float(squares) / (n - 1))), n
    except (OverflowError, ValueError):  # past the float range: fsum's own answer
        return None


def _resample_means(a: np.ndarray, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Means of ``n_resamples`` bootstrap resamples, in chunks to bound memory."""
    import numpy as np

    n = a.size
    out = np.empty(n_resamples)
    chunk = max(1, min(n_resamples, 4_000_000 // max(n, 1)))
    for start in range(0, n_resamples, chunk):
        stop = min(n_resamples, start + chunk)
        idx = rng.integers(0, n, size=(stop - start, n))
        out[start:stop] = a[idx].mean(axis=1)
    return out


def percentile_interval(estimates: Sequence[float] | np.ndarray, confidence: float = 0.95,
                        ) -> tuple[float, float]:
    """The percentile interval of bootstrap ``estimates`` at level ``confidence``: their
    ``(1 - confidence) / 2`` and ``1 - (1 - confidence) / 2`` quantiles (numpy's default
    linear interpolation, Hyndman & Fan's definition 7), so 0.90 cuts 5% from each tail.
    Efron & Tibshirani (1993), *An Introduction to the Bootstrap*, section 13.3.  The one
    place every bootstrap interval of ragmeter takes its tails from."""
    import numpy as np

    if not 0.0 <= confidence <= 1.0:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence!r}")
    tail = (1.0 - confidence) / 2.0
    lo, hi = np.quantile(_arr(estimates), [tail, 1.0 - tail])
    return (float(lo), float(hi))


def bootstrap_ci(values: Sequence[float] | np.ndarray, *, confidence: float = 0.95,
                 n_resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED,
                 ) -> tuple[float, float] | None:
    """Percentile bootstrap confidence interval of the mean; None for no values."""
    import numpy as np

    a = _arr(values)
    if a.size == 0:
        return None
    if a.size == 1 or np.all(a == a[0]):
        return (float(a[0]), float(a[0]))
    means = _resample_means(a, n_resamples, np.random.default_rng(seed))
    return percentile_interval(means, confidence)


def bootstrap_ci_counts(counts: dict[float, int], *, confidence: float = 0.95,
                        n_resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED,
                        ) -> tuple[float, float] | None:
    """Percentile bootstrap confidence interval of the mean of values given as ``{value:
    count}``: each resample draws the counts of the distinct values from a multinomial (the
    same distribution as drawing ``n`` rows with replacement), so time and memory grow with
    the distinct values, not the rows.  The same estimator as :func:`bootstrap_ci`, not the
    same random draws (its intervals differ from it within the bootstrap's own noise)."""
    import numpy as np

    n = sum(counts.values())
    if n == 0:
        return None
    values = np.array(sorted(counts), dtype=np.float64)
    if values.size == 1:
        return (float(values[0]), float(values[0]))
    p = np.array([counts[v] for v in values.tolist()], dtype=np.float64) / n
    rng = np.random.default_rng(seed)
    means = np.empty(n_resamples)
    chunk = max(1, min(n_resamples, 4_000_000 // values.size))
    for start in range(0, n_resamples, chunk):
        stop = min(n_resamples, start + chunk)
        drawn = rng.multinomial(n, p, size=stop - start)
        means[start:stop] = drawn @ values / n
    return percentile_interval(means, confidence)


@dataclass(frozen=True)
class PairedTest:
    """Result of a paired comparison of system A against system B on the same items."""

    method: str
    n: int
    mean_diff: float  # mean(A - B)
    ci_low: float
    ci_high: float
    p_value: float


def paired_bootstrap(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray, *,
                     n_resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED,
                     confidence: float = 0.95) -> PairedTest:
    """Paired bootstrap of the mean difference A - B.

    The two-sided p-value is the share of resampled differences on the other side of zero,
    doubled (Koehn 2004 style, as sacrebleu's paired bootstrap).
    """
    import numpy as np

    x, y = _arr(a), _arr(b)
    if x.size != y.size or x.size == 0:
        raise ValueError("paired_bootstrap needs two non-empty sequences of equal length")
    d = x - y
    obs = float(d.mean())
    if np.all(d == d[0]):
        return PairedTest("paired_bootstrap", int(d.size), obs, obs, obs,
                          1.0 if obs == 0 else 0.0)
    means = _resample_means(d, n_resamples, np.random.default_rng(seed))
    lo, hi = percentile_interval(means, confidence)
    if obs >= 0:
        tail = float(np.mean(means <= 0.0))
    else:
        tail = float(np.mean(means >= 0.0))
    p = min(1.0, 2.0 * tail)
    return PairedTest("paired_bootstrap", int(d.size), obs, lo, hi, p)


def paired_permutation(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray, *,
                       n_resamples: int = 10_000, seed: int = DEFAULT_SEED,
                       confidence: float = 0.95) -> PairedTest:
    """Paired sign-flip permutation test of mean(A - B) = 0 (two-sided).

    p = (1 + #{|mean of flipped d| >= |observed|}) / (1 + n_resamples), so never 0.
    The CI reported is the paired bootstrap percentile interval at ``confidence``.
    """
    import numpy as np

    x, y = _arr(a), _arr(b)
    if x.size != y.size or x.size == 0:
        raise ValueError("paired_permutation needs two non-empty sequences of equal length")
    d = x - y
    obs = float(d.mean())
    rng = np.random.default_rng(seed)
    n = d.size
    extreme = 0
    chunk = max(1, min(n_resamples, 4_000_000 // n))
    for start in range(0, n_resamples, chunk):
        k = min(chunk, n_resamples - start)
        signs = rng.integers(0, 2, size=(k, n)) * 2 - 1
        perm = (signs * d).mean(axis=1)
        extreme += int(np.sum(np.abs(perm) >= abs(obs) - 1e-12))
    p = (1 + extreme) / (1 + n_resamples)
    boot = paired_bootstrap(x, y, seed=seed, confidence=confidence)
    return PairedTest("paired_permutation", int(n), obs, boot.ci_low, boot.ci_high, float(p))


def rmse(pred: Sequence[float] | np.ndarray, true: Sequence[float] | np.ndarray,
         ) -> float | None:
    """Root mean squared error; None for no pairs."""
    p, t = _arr(pred), _arr(true)
    if p.size != t.size:
        raise ValueError("rmse needs sequences of equal length")
    if p.size == 0:
        return None
    return float(math.sqrt(math.fsum(((p - t) ** 2).tolist()) / p.size))


def auroc(scores: Sequence[float] | np.ndarray, labels: Sequence[int | bool] | np.ndarray,
          ) -> float | None:
    """Area under the ROC curve by the rank statistic (Mann-Whitney U, ties count 1/2).

    ``labels`` are 1 for the positive class.  None when either class is absent.
    """
    import numpy as np

    s = _arr(scores)
    y = np.asarray(labels, dtype=bool)
    if s.size != y.size:
        raise ValueError("auroc needs scores and labels of equal length")
    n_pos = int(y.sum())
    n_neg = int(y.size - n_pos)
    if n_pos == 0 or n_neg == 0:
        return None
    ranks = rankdata(s)  # average ranks for ties
    u = float(ranks[y].sum()) - n_pos * (n_pos + 1) / 2.0
    return u / (n_pos * n_neg)


def rankdata(values: Sequence[float] | np.ndarray, axis: int = -1) -> np.ndarray:
    """Ranks from 1, ties given their average rank, along ``axis`` (``scipy.stats.rankdata``
    with ``method="average"``, written in numpy so the core needs no scipy)."""
    import numpy as np

    a = np.moveaxis(np.asarray(values, dtype=np.float64), axis, -1)
    shape = a.shape
    n = shape[-1] if shape else 1
    flat = a.reshape(-1, n)
    order = np.argsort(flat, axis=1, kind="mergesort")
    ordered = np.take_along_axis(flat, order, axis=1)
    starts = np.ones_like(ordered, dtype=bool)
    starts[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
    ends = np.ones_like(starts)
    ends[:, :-1] = starts[:, 1:]
    idx = np.broadcast_to(np.arange(n), ordered.shape)
    first = np.maximum.accumulate(np.where(starts, idx, 0), axis=1)
    last = np.minimum.accumulate(np.where(ends, idx, n - 1)[:, ::-1], axis=1)[:, ::-1]
    ranks = np.empty_like(ordered)
    np.put_along_axis(ranks, order, (first + last) / 2.0 + 1.0, axis=1)
    return np.moveaxis(ranks.reshape(shape), -1, axis)


def normal_cdf(x: float) -> float:
    """Standard normal distribution function, from ``math.erfc`` (exact to float rounding)."""
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


def normal_ppf(p: float) -> float:
    """Inverse of :func:`normal_cdf` (``scipy.stats.norm.ppf``) for 0 < p < 1.

    Acklam's rational approximation (relative error 1.15e-9), then one Halley step on
    ``normal_cdf`` that brings it to float precision (|error| < 1e-14 on the tested points).
    """
    if not 0.0 < p < 1.0:
        if p in (0.0, 1.0):
            return -math.inf if p == 0.0 else math.inf
        raise ValueError(f"normal_ppf needs 0 <= p <= 1, got {p}")
    if p > 0.5:  # 1 - p is exact here; the lower tail keeps full relative precision
        return -normal_ppf(1.0 - p)
    a = (-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
         1.383577518672690e+02, -3.066479806614716e+01, 2.506628277459239e+00)
    b = (-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
         6.680131188771972e+01, -1.328068155288572e+01)
    c = (-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
         -2.549732539343734e+00, 4.374664141464968e+00, 2.938163982698783e+00)
    d = (7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
         3.754408661907416e+00)
    low = 0.02425
    if p < low or p > 1 - low:
        q = math.sqrt(-2 * math.log(p if p < low else 1 - p))
        x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) / \
            ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1)
        x = x if p < low else -x
    else:
        q = p - 0.5
        r = q * q
        x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q / \
            (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1)
    e = normal_cdf(x) - p  # Halley refinement
    u = e * math.sqrt(2 * math.pi) * math.exp(x * x / 2)
    return x - u / (1 + x * u / 2)


def wilson_interval(successes: int, trials: int, confidence: float = 0.95,
                    ) -> tuple[float, float] | None:
    """Wilson score interval for a binomial proportion (Wilson 1927); None for 0 trials."""
    if trials <= 0:
        return None
    z = normal_ppf(1 - (1 - confidence) / 2)
    phat = successes / trials
    denom = 1 + z * z / trials
    centre = (phat + z * z / (2 * trials)) / denom
    half = z * math.sqrt(phat * (1 - phat) / trials + z * z / (4 * trials * trials)) / denom
    lo = 0.0 if successes == 0 else max(0.0, centre - half)
    hi = 1.0 if successes == trials else min(1.0, centre + half)
    return (lo, hi)


def cohen_kappa(a: Sequence[str], b: Sequence[str]) -> float | None:
    """Cohen's kappa of two raters on the same items (Cohen 1960).

    None for no items; 1.0 when both raters use a single identical category throughout
    (observed and chance agreement are both 1).
    """
    if len(a) != len(b):
        raise ValueError("cohen_kappa needs two label sequences of equal length")
    n = len(a)
    if n == 0:
        return None
    cats = sorted(set(a) | set(b))
    po = sum(1 for x, y in zip(a, b, strict=True) if x == y) / n
    pe = sum((list(a).count(c) / n) * (list(b).count(c) / n) for c in cats)
    if pe >= 1.0:
        return 1.0 if po >= 1.0 else 0.0
    return (po - pe) / (1 - pe)


def cohen_kappa_ci(a: Sequence[str], b: Sequence[str], *, confidence: float = 0.95,
                   n_resamples: int = 2000, seed: int = DEFAULT_SEED,
                   ) -> tuple[float, float] | None:
    """Percentile bootstrap interval of Cohen's kappa, resampling items (pairs) with
    replacement; None for no items."""
    import numpy as np

    if len(a) != len(b):
        raise ValueError("cohen_kappa_ci needs two label sequences of equal length")
    n = len(a)
    if n == 0:
        return None
    rng = np.random.default_rng(seed)
    values = []
    for _ in range(n_resamples):
        idx = rng.integers(0, n, size=n)
        k = cohen_kappa([a[i] for i in idx], [b[i] for i in idx])
        if k is not None:
            values.append(k)
    return percentile_interval(values, confidence)
