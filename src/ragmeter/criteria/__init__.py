"""Judges on your own criteria: a criteria file (a question to the judge and a scale with an
anchor per point, per criterion) judged per row, per criterion or all criteria in one call;
probability-weighted scores, repeats, validation against human scores.

The façade: the verbs (``ragmeter.criteria.<verb>(data, **options)``), their option group and
the criteria types, nothing else."""

from __future__ import annotations

from ragmeter.criteria._file import (
    load_criteria,
    shipped_names,
)
from ragmeter.criteria._options import JudgeOptions
from ragmeter.criteria._types import (
    CriteriaSet,
    Criterion,
)
from ragmeter.criteria._verbs import (
    ajudge,
    judge,
)

__all__ = [
    "ajudge",
    "judge",
    "JudgeOptions",
    "CriteriaSet",
    "Criterion",
    "load_criteria",
    "shipped_names",
]
