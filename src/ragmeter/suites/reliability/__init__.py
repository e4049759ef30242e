"""Annotator reliability against a QC key for win/tie/loss human evaluation (issue 7)."""

from ragmeter.suites.reliability.scorer import (
    DEFAULT_FLAG_NO,
    DEFAULT_FLAG_YES,
    ReliabilityConfig,
    ReliabilityResult,
    score_annotations,
    score_file,
)

__all__ = [
    "DEFAULT_FLAG_NO",
    "DEFAULT_FLAG_YES",
    "ReliabilityConfig",
    "ReliabilityResult",
    "score_annotations",
    "score_file",
]
