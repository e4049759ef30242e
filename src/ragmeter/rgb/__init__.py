"""RGB robustness (Chen et al., AAAI 2024): noise robustness, negative rejection, information
integration, counterfactual robustness.

The façade: the verbs (``ragmeter.rgb.<verb>(data, **options)``), nothing else."""

from __future__ import annotations

from ragmeter.rgb._verbs import (
    ajudge,
    arun,
    build,
    judge,
    run,
    score,
)

__all__ = [
    "ajudge",
    "arun",
    "build",
    "judge",
    "run",
    "score",
]
