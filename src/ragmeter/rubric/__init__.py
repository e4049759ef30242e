"""Rubric judging (RAGaliq): 0-5 grades, weighted score per language, its reference RAG
pipeline and test-set builder.

The façade: the verbs (``ragmeter.rubric.<verb>(data, **options)``), their option groups and
the family's error, nothing else."""

from __future__ import annotations

from ragmeter.rubric._errors import BuildFailedError
from ragmeter.rubric._options import (
    ChunkOptions,
    CritiqueOptions,
    JudgeOptions,
    PipelineOptions,
    TranslationOptions,
)
from ragmeter.rubric._verbs import (
    abuild,
    ajudge,
    arun,
    build,
    judge,
    run,
    score,
    validate,
)

__all__ = [
    "abuild",
    "ajudge",
    "arun",
    "build",
    "judge",
    "run",
    "score",
    "validate",
    "JudgeOptions",
    "PipelineOptions",
    "ChunkOptions",
    "CritiqueOptions",
    "TranslationOptions",
    "BuildFailedError",
]
