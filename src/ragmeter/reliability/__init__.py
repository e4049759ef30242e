"""Annotator reliability against a QC key for win/tie/loss evaluation.

The façade: the verbs (``ragmeter.reliability.<verb>(data, **options)``), nothing else."""

from __future__ import annotations

from ragmeter.reliability._verbs import (
    score,
)

__all__ = [
    "score",
]
