"""Translation cost and cost-normalized bridging efficiency (CNBE), as LBRAG defines them
(kanoes/LBRAG-NEW, ``experiments/scripts/experiment.py`` and ``memo2_指标.md``)."""

from __future__ import annotations

__all__ = ["cnbe"]


def cnbe(f1: float, baseline_f1: float, cost: float) -> float:
    """(F1 of the row - F1 of the baseline's row for the same sample) / cost; 0.0 when the
    cost is 0."""
    if cost == 0:
        return 0.0
    return (f1 - baseline_f1) / cost
