"""TRACe (RAGBench): relevance, utilization, completeness and adherence from sentence labels,
judge labelling (single JSON call or per-sentence choice scoring) and judge validation."""

from ragmeter.suites.trace.scorer import (
    TRACE_METRICS,
    ScoreConfig,
    ScoreResult,
    score_file,
    score_rows,
)

__all__ = ["TRACE_METRICS", "ScoreConfig", "ScoreResult", "score_file", "score_rows"]
