"""Multilingual QA (LBRAG): EM, language-aware F1, RLC, cost, CNBE, semantic score."""

from ragmeter.suites.multilingual.scorer import (
    METRIC_KEYS,
    MultilingualConfig,
    MultilingualResult,
    score_file,
    score_rows,
)

__all__ = ["METRIC_KEYS", "MultilingualConfig", "MultilingualResult", "score_file", "score_rows"]
