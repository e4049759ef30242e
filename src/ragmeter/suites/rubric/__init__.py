"""Rubric judging (RAGaliq): 0–5 grades, weighted score, judge stability, semantic score
(LBRAG), and an offline reference RAG pipeline."""

from ragmeter.suites.rubric.scorer import (
    GradedItem,
    RubricConfig,
    RubricResult,
    ragaliq_file_meta,
    score_files,
)

__all__ = ["GradedItem", "RubricConfig", "RubricResult", "ragaliq_file_meta", "score_files"]
