"""Agreement of two raters on an ordinal scale (a critic or judge against reference ratings):
quadratic-weighted kappa, exact agreement, mean absolute error, each with a bootstrap CI.

Pure: integers in, numbers out.  The bootstrap resamples items (pairs of ratings) with
replacement and takes the percentile interval, as :mod:`ragmeter.metrics.stats` does for
means.

Quadratic-weighted kappa (Cohen 1968, "Weighted kappa"): with observed joint proportions
``O[i, j]``, the product of the marginals ``E[i, j]`` and weights ``w[i, j] = (i - j)**2 /
(k - 1)**2`` over the ``k`` categories of the scale, ``kappa = 1 - sum(w * O) / sum(w * E)``.
When ``sum(w * E)`` is 0 (both raters used one and the same category throughout) kappa is 1.0,
the convention of :func:`ragmeter.metrics.stats.cohen_kappa`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["quadratic_weighted_kappa", "exact_agreement", "mean_absolute_error",
           "Agreement", "agreement"]


def _pairs(a: Sequence[int], b: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    if len(a) != len(b):
        raise ValueError("agreement needs two rating sequences of equal length")
    return np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)


def _qwk(x: np.ndarray, y: np.ndarray, lo: int, k: int) -> float | None:
    n = x.size
    if n == 0:
        return None
    obs = np.zeros((k, k))
    np.add.at(obs, (x - lo, y - lo), 1.0)
    obs /= n
    exp = np.outer(obs.sum(axis=1), obs.sum(axis=0))
    idx = np.arange(k)
    w = (idx[:, None] - idx[None, :]) ** 2 / max(1, (k - 1) ** 2)
    denom = float((w * exp).sum())
    if denom <= 0.0:
        return 1.0
    return float(1.0 - (w * obs).sum() / denom)


def quadratic_weighted_kappa(a: Sequence[int], b: Sequence[int],
                             scale: Sequence[int] = (1, 2, 3, 4, 5)) -> float | None:
    """Quadratic-weighted kappa of two raters on the integer ``scale``; None for no items.

    Raises ValueError for a rating outside the scale."""
    x, y = _pairs(a, b)
    lo, hi = min(scale), max(scale)
    if x.size and (x.min() < lo or y.min() < lo or x.max() > hi or y.max() > hi):
        raise ValueError(f"ratings must lie in {lo}..{hi}")
    return _qwk(x, y, lo, hi - lo + 1)


def exact_agreement(a: Sequence[int], b: Sequence[int]) -> float | None:
    """Share of items given the same rating; None for no items."""
    x, y = _pairs(a, b)
    return float((x == y).mean()) if x.size else None


def mean_absolute_error(a: Sequence[int], b: Sequence[int]) -> float | None:
    """Mean of ``|a - b|``; None for no items."""
    x, y = _pairs(a, b)
    return float(np.abs(x - y).mean()) if x.size else None


@dataclass(frozen=True)
class Agreement:
    """Agreement of ``rater`` with ``reference`` on ``n`` items, with 95% (or other) CIs."""

    n: int
    qwk: float | None
    exact: float | None
    mae: float | None
    qwk_ci: tuple[float, float] | None
    exact_ci: tuple[float, float] | None
    mae_ci: tuple[float, float] | None
    mean_rater: float | None
    mean_reference: float | None

    def to_dict(self) -> dict[str, object]:
        return {"n": self.n, "qwk": self.qwk, "exact": self.exact, "mae": self.mae,
                "qwk_ci": list(self.qwk_ci) if self.qwk_ci else None,
                "exact_ci": list(self.exact_ci) if self.exact_ci else None,
                "mae_ci": list(self.mae_ci) if self.mae_ci else None,
                "mean_rater": self.mean_rater, "mean_reference": self.mean_reference}


def agreement(rater: Sequence[int], reference: Sequence[int], *,
              scale: Sequence[int] = (1, 2, 3, 4, 5), n_resamples: int = 1000,
              confidence: float = 0.95, seed: int = 12345) -> Agreement:
    """QWK, exact agreement and MAE of ``rater`` against ``reference`` with percentile
    bootstrap CIs over items (no CI for fewer than two items)."""
    x, y = _pairs(rater, reference)
    qwk = quadratic_weighted_kappa(rater, reference, scale)
    n = x.size
    lo = min(scale)
    k = max(scale) - lo + 1
    cis: list[tuple[float, float] | None] = [None, None, None]
    if n >= 2 and n_resamples > 0:
        rng = np.random.default_rng(seed)
        idx = rng.integers(0, n, size=(n_resamples, n))
        xs, ys = x[idx], y[idx]
        exact_s = (xs == ys).mean(axis=1)
        mae_s = np.abs(xs - ys).mean(axis=1)
        qwk_s = np.array([_qwk(xs[i], ys[i], lo, k) for i in range(n_resamples)],
                         dtype=np.float64)
        alpha = (1.0 - confidence) / 2.0
        for j, s in enumerate((qwk_s, exact_s, mae_s)):
            q = np.quantile(s, [alpha, 1.0 - alpha])
            cis[j] = (float(q[0]), float(q[1]))
    return Agreement(
        n=int(n), qwk=qwk, exact=exact_agreement(rater, reference),
        mae=mean_absolute_error(rater, reference), qwk_ci=cis[0], exact_ci=cis[1],
        mae_ci=cis[2], mean_rater=float(x.mean()) if n else None,
        mean_reference=float(y.mean()) if n else None)
