"""TRACe (RAGBench, Friel et al. 2024): relevance, utilization, completeness, adherence from
sentence labels, and judge validation.

The façade: the verbs (``ragmeter.trace.<verb>(data, **options)``), nothing else."""

from __future__ import annotations

from ragmeter.trace._verbs import (
    alabel,
    arun,
    fit,
    label,
    run,
    score,
    validate,
)

__all__ = [
    "alabel",
    "arun",
    "fit",
    "label",
    "run",
    "score",
    "validate",
]
