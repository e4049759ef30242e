"""A judge's agreement with reference numbers on the same items, each statistic with its
percentile-bootstrap 95% CI and the number of items it used (:class:`Estimate`):

- :func:`auroc_estimate`: AUROC of scores against a binary reference (ties count 1/2);
- :func:`rmse_estimate`, :func:`mae_estimate`: root mean squared and mean absolute error;
- :func:`spearman_estimate`: Spearman's rho (average ranks for ties);
- :func:`score_agreement`: the three numbers a 0-1 score is validated by (AUROC at a reference
  threshold, Spearman, MAE), as ``multilingual judge`` reports them.

Pure and deterministic for a given ``seed``.  Moved down from the TRACe family (its
validation's AUROC and RMSE) so that every family validates a judge the same way.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ragmeter.stats._agreement import spearman_rows
from ragmeter.stats._core import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    auroc,
    bootstrap_ci,
    rankdata,
    rmse,
)

__all__ = ["Estimate", "auroc_estimate", "rmse_estimate", "mae_estimate", "spearman_estimate",
           "spearman_rho", "score_agreement", "AGREEMENT_STATS"]

Numbers = Sequence[float] | np.ndarray

AGREEMENT_STATS = ("auroc", "spearman", "mae")
"""The statistics of :func:`score_agreement`, in the order tables show them."""


@dataclass(frozen=True)
class Estimate:
    """A statistic with its percentile-bootstrap 95% CI and the number of rows it used."""

    value: float | None
    ci_low: float | None
    ci_high: float | None
    n: int

    def to_dict(self) -> dict[str, object]:
        ci = [self.ci_low, self.ci_high] if self.ci_low is not None else None
        return {"value": self.value, "ci95": ci, "n": self.n}


def _pair(pred: Numbers, true: Numbers, what: str) -> tuple[np.ndarray, np.ndarray]:
    """Two sequences of numbers as float arrays of equal length (else a ValueError)."""
    p = np.asarray(pred, dtype=np.float64)
    t = np.asarray(true, dtype=np.float64)
    if p.size != t.size:
        raise ValueError(f"{what} needs sequences of equal length")
    return p, t


def rmse_estimate(pred: Numbers, true: Numbers, *,
                  n_resamples: int = DEFAULT_RESAMPLES,
                  seed: int = DEFAULT_SEED) -> Estimate:
    """RMSE with a bootstrap CI: the CI of the mean squared error, square-rooted (the square
    root is monotone, so this equals the percentile interval of the resampled RMSE)."""
    p, t = _pair(pred, true, "rmse_estimate")
    value = rmse(p, t)
    if value is None:
        return Estimate(None, None, None, 0)
    interval = bootstrap_ci((p - t) ** 2, n_resamples=n_resamples, seed=seed)
    assert interval is not None
    return Estimate(value, math.sqrt(interval[0]), math.sqrt(interval[1]), int(p.size))


def mae_estimate(pred: Numbers, true: Numbers, *,
                 n_resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED) -> Estimate:
    """Mean absolute error with the percentile-bootstrap CI of the mean of ``|pred - true|``."""
    p, t = _pair(pred, true, "mae_estimate")
    if p.size == 0:
        return Estimate(None, None, None, 0)
    errors = np.abs(p - t)
    interval = bootstrap_ci(errors, n_resamples=n_resamples, seed=seed)
    value = math.fsum(errors.tolist()) / p.size
    if interval is None:
        return Estimate(value, None, None, int(p.size))
    return Estimate(value, float(interval[0]), float(interval[1]), int(p.size))


def auroc_estimate(scores: Numbers, positives: Sequence[bool] | np.ndarray, *,
                   n_resamples: int = DEFAULT_RESAMPLES,
                   seed: int = DEFAULT_SEED) -> Estimate:
    """AUROC (rank statistic, ties 1/2) with a percentile-bootstrap CI over rows.

    Resamples that happen to hold one class only have no AUROC and are drawn again (at most
    ``10 * n_resamples`` draws).  The value is None when either class is absent.
    """
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(positives, dtype=bool)
    if s.size != y.size:
        raise ValueError("auroc_estimate needs scores and labels of equal length")
    value = auroc(s, y)
    if value is None:
        return Estimate(None, None, None, int(s.size))
    rng = np.random.default_rng(seed)
    n = s.size
    found: list[float] = []
    draws = 0
    while len(found) < n_resamples and draws < 10 * n_resamples:
        k = min(n_resamples - len(found), 200)
        idx = rng.integers(0, n, size=(k, n))
        draws += k
        ys = y[idx]
        n_pos = ys.sum(axis=1)
        n_neg = n - n_pos
        ranks = rankdata(s[idx], axis=1)
        u = (ranks * ys).sum(axis=1) - n_pos * (n_pos + 1) / 2.0
        ok = (n_pos > 0) & (n_neg > 0)
        found.extend((u[ok] / (n_pos[ok] * n_neg[ok])).tolist())
    if not found:
        return Estimate(value, None, None, int(n))
    lo, hi = np.quantile(np.asarray(found[:n_resamples]), [0.025, 0.975])
    return Estimate(value, float(lo), float(hi), int(n))


def spearman_rho(a: Numbers, b: Numbers) -> float | None:
    """Spearman's rho of two sequences (average ranks for ties); None for fewer than two
    items or a constant side."""
    x, y = _pair(a, b, "spearman_rho")
    if x.size < 2:
        return None
    rho = float(spearman_rows(x, y))
    return None if math.isnan(rho) else rho


def spearman_estimate(pred: Numbers, true: Numbers, *,
                      n_resamples: int = DEFAULT_RESAMPLES,
                      seed: int = DEFAULT_SEED) -> Estimate:
    """Spearman's rho (Pearson's r of the average ranks) with a percentile-bootstrap CI over
    rows; resamples where a side is constant have no rho and are left out.  The value is
    None for fewer than two rows or a constant side."""
    p, t = _pair(pred, true, "spearman_estimate")
    rho = spearman_rho(p, t)
    if rho is None:
        return Estimate(None, None, None, int(p.size))
    idx = np.random.default_rng(seed).integers(0, p.size, size=(n_resamples, p.size))
    found = spearman_rows(p[idx], t[idx])
    found = found[np.isfinite(found)]
    if found.size == 0:
        return Estimate(rho, None, None, int(p.size))
    lo, hi = np.quantile(found, [0.025, 0.975])
    return Estimate(rho, float(lo), float(hi), int(p.size))


def score_agreement(pred: Numbers, reference: Numbers, *,
                    threshold: float = 0.5, n_resamples: int = DEFAULT_RESAMPLES,
                    seed: int = DEFAULT_SEED) -> dict[str, Estimate]:
    """How well 0-1 scores ``pred`` stand in for ``reference`` scores of the same items:
    ``auroc`` (ranking the items whose reference is at least ``threshold`` above the others),
    ``spearman`` and ``mae``, each with its bootstrap 95% CI (:data:`AGREEMENT_STATS`)."""
    if len(pred) != len(reference):
        raise ValueError("score_agreement needs sequences of equal length")
    positives = [float(r) >= threshold for r in reference]
    return {"auroc": auroc_estimate(pred, positives, n_resamples=n_resamples, seed=seed),
            "spearman": spearman_estimate(pred, reference, n_resamples=n_resamples, seed=seed),
            "mae": mae_estimate(pred, reference, n_resamples=n_resamples, seed=seed)}
