"""RGB robustness (Chen et al., AAAI 2024): noise robustness, negative rejection, information
integration, counterfactual robustness.

The façade: the verbs (``ragmeter.rgb.<verb>(data, **options)``) and RGB's option groups
(:class:`SettingOptions`, :class:`GenerationOptions`, :class:`JudgeOptions`), nothing else."""

from __future__ import annotations

from ragmeter.rgb._options import (
    GenerationOptions,
    JudgeOptions,
    SettingOptions,
)
from ragmeter.rgb._verbs import (
    ajudge,
    arun,
    build,
    judge,
    run,
    score,
)

__all__ = [
    "GenerationOptions",
    "JudgeOptions",
    "SettingOptions",
    "ajudge",
    "arun",
    "build",
    "judge",
    "run",
    "score",
]
