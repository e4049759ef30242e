"""The row-level share models of the TRACe detector: a row's relevance and utilization.

RMSE scores a row's share (relevant or utilized sentences over document sentences), so the
detector predicts that share with one least-squares model per task over row-level inputs
(:func:`share_features`), then labels that many sentences of highest probability.  The
inputs: the expected shares ``sum(p) / n`` of the sentence models; the share of the three
sentences most likely utilized (a response draws on few sentences, so the top of the ranking
says more than its sum); the share of document sentences picked by a greedy cover of the
response's words (:func:`~ragmeter.trace._features.greedy_cover`, a direct count of
the sentences the response was written from); and the row's sizes.  Measured in
docs/trace.md (the detector section).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

__all__ = ["SHARE_FEATURES", "SHARE_TASKS", "share_features", "fit_shares"]

SHARE_FEATURES = ("intercept", "relevance_sum_p", "utilization_sum_p", "response_sentences",
                  "log_doc_sentences", "response_words", "utilization_top3",
                  "greedy_cover_share")
SHARE_TASKS = ("relevance", "utilization")


def share_features(p_relevance: np.ndarray, p_utilization: np.ndarray, n_response: int,
                   response_tokens: int, greedy_share: float) -> np.ndarray:
    """The inputs of the relevance and utilization share models for one row, in
    :data:`SHARE_FEATURES` order (``greedy_share``: the share of document sentences the
    greedy cover picks)."""
    n = max(len(p_relevance), 1)
    top3 = float(np.sort(p_utilization)[::-1][:3].sum()) / n
    return np.array([1.0, float(p_relevance.sum()) / n, float(p_utilization.sum()) / n,
                     n_response / n, math.log1p(len(p_relevance)), response_tokens / n / 10,
                     top3, greedy_share])


def fit_shares(features: Sequence[np.ndarray], targets: Sequence[np.ndarray],
               rounding: Callable[[float], float]) -> dict[str, np.ndarray]:
    """Least-squares coefficients of each row's relevance and utilization share (``targets``:
    one ``(relevance, utilization)`` pair a row) on :func:`share_features` (a ridge of 1e-6
    keeps the solve defined), each rounded by ``rounding`` as stored."""
    f = np.vstack(features)
    y = np.vstack(targets)
    out = {}
    for j, task in enumerate(SHARE_TASKS):
        w = np.linalg.solve(f.T @ f + 1e-6 * np.eye(f.shape[1]), f.T @ y[:, j])
        out[task] = np.array([rounding(float(v)) for v in w])
    return out
