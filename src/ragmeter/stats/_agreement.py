"""Agreement of a judge's ordinal scores with reference scores on the same items: exact and
within-one agreement, quadratic-weighted kappa, mean absolute error and Spearman's rho, each
with a percentile bootstrap interval over items.

The scale is any ordered list of levels (RAGaliq's grades 0..5, a criterion's 1..5 or 0..2):
scores are compared by their *position* on it, so the kappa's weights are
``(i - j)^2 / (K - 1)^2`` for positions ``i``, ``j`` of ``K`` levels (Cohen 1968), and MAE and
"within one" count positions (equal to score differences on a scale of consecutive integers).

Pure: numbers in, numbers out.  Used by ``rubric validate`` (RAGaliq's 0..5) and by the
criteria judge's validation against human scores.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ragmeter.stats._core import percentile_interval, rankdata

if TYPE_CHECKING:  # numpy is imported by the functions that use it (import ragmeter stays light)
    import numpy as np

__all__ = ["Agreement", "ordinal_agreement", "quadratic_weighted_kappa", "spearman",
           "AGREEMENT_STATISTICS"]

AGREEMENT_STATISTICS = ("exact", "within_one", "qwk", "mae", "spearman")


@dataclass(frozen=True)
class Agreement:
    """Agreement of a judge's scores with reference scores on the same items.

    ``ci95`` maps each statistic to its percentile bootstrap interval (items resampled with
    replacement, the statistic recomputed on each resample), or None when undefined.
    """

    n: int
    exact: float | None  # share of items with the same score
    within_one: float | None  # share with |judge - reference| <= 1 level
    qwk: float | None  # quadratic-weighted Cohen's kappa over the scale's levels
    mae: float | None  # mean |judge - reference| in levels
    spearman: float | None  # Spearman rank correlation; None when either side is constant
    ci95: dict[str, list[float] | None]
    confusion: list[list[int]]  # rows: reference level, columns: judge level (scale order)

    def to_dict(self) -> dict[str, object]:
        return {"n": self.n, "exact": self.exact, "within_one": self.within_one,
                "qwk": self.qwk, "mae": self.mae, "spearman": self.spearman,
                "ci95": self.ci95, "confusion": self.confusion}


def confusions(ref: np.ndarray, pred: np.ndarray, k: int) -> np.ndarray:
    """Confusion matrices (…, k, k) of integer level arrays of shape (…, n)."""
    import numpy as np

    codes = ref * k + pred
    flat = codes.reshape(-1, codes.shape[-1])
    offsets = (np.arange(flat.shape[0]) * k * k)[:, None]
    counts = np.bincount((flat + offsets).ravel(), minlength=flat.shape[0] * k * k)
    return counts.reshape(*codes.shape[:-1], k, k).astype(np.float64)


def qwk_from_confusions(conf: np.ndarray) -> np.ndarray:
    """Quadratic-weighted kappa of each confusion matrix (Cohen 1968); NaN where undefined."""
    import numpy as np

    k = conf.shape[-1]
    idx = np.arange(k)
    w = (idx[:, None] - idx[None, :]) ** 2 / float((k - 1) ** 2)
    n = conf.sum(axis=(-2, -1))
    rows = conf.sum(axis=-1)
    cols = conf.sum(axis=-2)
    expected = rows[..., :, None] * cols[..., None, :] / n[..., None, None]
    num = (w * conf).sum(axis=(-2, -1))
    den = (w * expected).sum(axis=(-2, -1))
    with np.errstate(invalid="ignore", divide="ignore"):
        kappa = 1.0 - num / den
    # Both raters constant and equal: no disagreement is possible; agreement is perfect.
    return np.where((den == 0) & (num == 0), 1.0, kappa)


def _positions(values: Sequence[Hashable], levels: Sequence[Hashable], what: str) -> np.ndarray:
    import numpy as np

    pos = {v: i for i, v in enumerate(levels)}
    out = []
    for v in values:
        if v not in pos:
            raise ValueError(f"{what} score {v!r} is not one of the scale's levels "
                             f"{list(levels)!r}")
        out.append(pos[v])
    return np.asarray(out, dtype=np.int64)


def quadratic_weighted_kappa(judge: Sequence[Hashable], reference: Sequence[Hashable],
                             levels: Sequence[Hashable]) -> float | None:
    """Cohen's quadratic-weighted kappa, weights (i - j)^2 / (K - 1)^2 over ``levels``.

    kappa = 1 - sum(w * O) / sum(w * E), E the outer product of the marginals / n (Cohen 1968;
    the same as ``sklearn.metrics.cohen_kappa_score(weights="quadratic")``).  None for no
    items, or when undefined.
    """
    if len(judge) != len(reference):
        raise ValueError("quadratic_weighted_kappa needs two sequences of equal length")
    if not judge:
        return None
    conf = confusions(_positions(reference, levels, "reference"),
                      _positions(judge, levels, "judge"), len(levels))
    value = float(qwk_from_confusions(conf))
    return None if math.isnan(value) else value


def spearman_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Spearman's rho of each row pair (average ranks for ties); NaN for a constant row."""
    import numpy as np

    ra = rankdata(a, axis=-1)
    rb = rankdata(b, axis=-1)
    ra = ra - ra.mean(axis=-1, keepdims=True)
    rb = rb - rb.mean(axis=-1, keepdims=True)
    den = np.sqrt((ra * ra).sum(axis=-1) * (rb * rb).sum(axis=-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.asarray((ra * rb).sum(axis=-1) / den)


def _interval(values: np.ndarray, confidence: float) -> list[float] | None:
    """The percentile interval of the resamples where the statistic is defined."""
    import numpy as np

    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return None
    return list(percentile_interval(finite, confidence))


def ordinal_agreement(judge: Sequence[Hashable], reference: Sequence[Hashable],
                      levels: Sequence[Hashable], *, n_resamples: int = 1000,
                      seed: int = 12345, confidence: float = 0.95,
                      ci: bool = True) -> Agreement:
    """Exact agreement, within-one agreement, quadratic-weighted kappa, MAE and Spearman of
    ``judge`` against ``reference`` scores (same items in the same order, every score one of
    ``levels``, in scale order), each with a percentile bootstrap CI over items (statistics
    recomputed per resample; resamples where a statistic is undefined, e.g. a constant side
    for Spearman, are left out of its interval)."""
    import numpy as np

    if len(judge) != len(reference):
        raise ValueError("agreement needs two score sequences of equal length")
    j = _positions(judge, levels, "judge")
    r = _positions(reference, levels, "reference")
    n = len(j)
    k = len(levels)
    empty: dict[str, list[float] | None] = dict.fromkeys(AGREEMENT_STATISTICS)
    if n == 0:
        return Agreement(0, None, None, None, None, None, empty, [[0] * k for _ in range(k)])
    diff = np.abs(j - r)
    conf = confusions(r, j, k)
    qwk = float(qwk_from_confusions(conf))
    rho = float(spearman_rows(j.astype(float), r.astype(float)))
    intervals = dict(empty)
    if ci and n > 1:
        rng = np.random.default_rng(seed)
        idx = rng.integers(0, n, size=(n_resamples, n))
        jb, rb, db = j[idx], r[idx], diff[idx]
        intervals = {
            "exact": _interval((db == 0).mean(axis=1), confidence),
            "within_one": _interval((db <= 1).mean(axis=1), confidence),
            "qwk": _interval(qwk_from_confusions(confusions(rb, jb, k)), confidence),
            "mae": _interval(db.mean(axis=1).astype(np.float64), confidence),
            "spearman": _interval(spearman_rows(jb.astype(float), rb.astype(float)),
                                  confidence),
        }
    return Agreement(n=n, exact=float(np.mean(diff == 0)), within_one=float(np.mean(diff <= 1)),
                     qwk=None if math.isnan(qwk) else qwk, mae=float(np.mean(diff)),
                     spearman=None if math.isnan(rho) else rho, ci95=intervals,
                     confusion=conf.astype(int).tolist())


def spearman(a: Sequence[float], b: Sequence[float], *, n_resamples: int = 1000,
             seed: int = 12345, confidence: float = 0.95, ci: bool = True
             ) -> tuple[float | None, list[float] | None]:
    """Spearman's rho of two sequences of numbers (average ranks for ties) and its percentile
    bootstrap interval over items (resamples where it is undefined left out); ``(None, None)``
    when it is undefined (fewer than two items, or a constant side)."""
    import numpy as np

    if len(a) != len(b):
        raise ValueError("spearman needs two sequences of equal length")
    if len(a) < 2:
        return None, None
    x = np.asarray(a, dtype=np.float64)
    y = np.asarray(b, dtype=np.float64)
    rho = float(spearman_rows(x, y))
    if math.isnan(rho):
        return None, None
    if not ci:
        return rho, None
    idx = np.random.default_rng(seed).integers(0, len(x), size=(n_resamples, len(x)))
    return rho, _interval(spearman_rows(x[idx], y[idx]), confidence)
