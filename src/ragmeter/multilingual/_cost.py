"""Translation cost and cost-normalized bridging efficiency (CNBE), as LBRAG defines them
(kanoes/LBRAG-NEW, ``experiments/scripts/experiment.py`` and ``memo2_指标.md``)."""

from __future__ import annotations

from typing import Any

__all__ = ["cnbe", "cnbe_many"]


def cnbe(f1: float, baseline_f1: float, cost: float) -> float:
    """(F1 of the row - F1 of the baseline's row for the same sample) / cost; 0.0 when the
    cost is 0 (LBRAG's rule), NaN when the cost is NaN (absent).  The definition of the
    formula; :func:`cnbe_many` is the same over whole columns."""
    if cost == 0:
        return 0.0
    return (f1 - baseline_f1) / cost


def cnbe_many(f1: Any, baseline_f1: Any, cost: Any) -> Any:
    """:func:`cnbe` of whole columns at once (numpy arrays, float64): the very same IEEE
    subtraction and division per row, so equal to ``[cnbe(a, b, c) ...]`` (tested)."""
    import numpy as np

    f1 = np.asarray(f1, dtype=np.float64)
    base = np.asarray(baseline_f1, dtype=np.float64)
    cost = np.asarray(cost, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return np.where(cost == 0, 0.0, (f1 - base) / np.where(cost == 0, 1.0, cost))
