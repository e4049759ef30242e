"""Retrieval metrics exact to trec_eval: P@k, Recall@k, nDCG@k, Hit@k, MRR, MAP, and whether
the reference answer is in the retrieved contexts.

The façade: the verbs (``ragmeter.retrieval.<verb>(run, **options)``), nothing else."""

from __future__ import annotations

from ragmeter.retrieval._verbs import (
    compare,
    score,
)

__all__ = [
    "compare",
    "score",
]
