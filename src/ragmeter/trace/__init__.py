"""TRACe (RAGBench, Friel et al. 2024): relevance, utilization, completeness, adherence from
sentence labels, and judge validation.

The façade: the verbs (``ragmeter.trace.<verb>(data, **options)``) and the family's option
group (:class:`JudgeOptions`), nothing else."""

from __future__ import annotations

from ragmeter.trace._fitting import fit
from ragmeter.trace._options import JudgeOptions
from ragmeter.trace._verbs import (
    alabel,
    arun,
    label,
    run,
    score,
    validate,
)

__all__ = [
    "JudgeOptions",
    "alabel",
    "arun",
    "fit",
    "label",
    "run",
    "score",
    "validate",
]
