"""Translation cost and cost-normalized bridging efficiency (CNBE), as LBRAG defines them
(kanoes/LBRAG-NEW, ``experiments/scripts/experiment.py`` and ``memo2_指标.md``)."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["cnbe", "cnbe_many"]


def cnbe_many(f1: Any, baseline_f1: Any, cost: Any) -> np.ndarray:
    """CNBE of whole columns: ``(f1 - baseline_f1) / cost`` per row, 0.0 where the cost is 0
    (LBRAG's rule), NaN where the cost is NaN (absent).  The one definition of the formula:
    the multilingual scorer calls this on its columns, :func:`cnbe` on one row."""
    f1 = np.asarray(f1, dtype=np.float64)
    base = np.asarray(baseline_f1, dtype=np.float64)
    cost = np.asarray(cost, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(cost == 0, 0.0, (f1 - base) / np.where(cost == 0, 1.0, cost))


def cnbe(f1: float, baseline_f1: float, cost: float) -> float:
    """(F1 of the row - F1 of the baseline's row for the same sample) / cost; 0.0 when the
    cost is 0."""
    return float(cnbe_many([f1], [baseline_f1], [cost])[0])
