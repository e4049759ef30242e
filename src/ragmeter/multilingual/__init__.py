"""Multilingual QA (LBRAG): EM, language-aware F1, RLC, RLC_OK, cost, CNBE, semantic score.

The façade: the verbs (``ragmeter.multilingual.<verb>(data, **options)``) and the family's
option group, nothing else."""

from __future__ import annotations

from ragmeter.multilingual._fitting import fit
from ragmeter.multilingual._options import (
    JudgeOptions,
)
from ragmeter.multilingual._verbs import (
    ajudge,
    judge,
    score,
)

__all__ = [
    "JudgeOptions",
    "ajudge",
    "fit",
    "judge",
    "score",
]
