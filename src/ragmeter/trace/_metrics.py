"""TRACe (RAGBench): relevance, utilization, completeness and adherence from sentence keys.

Source: Friel, Belyi, Sanyal, "RAGBench: Explainable Benchmark for Retrieval-Augmented
Generation Systems", arXiv:2407.11005, section 3.  The formulas below are the ones that
reproduce the released ``relevance_score``, ``utilization_score``, ``completeness_score`` and
``adherence_score`` on every row of the released test splits (issue 5; tests/suites/trace):

- relevance    = len(all_relevant_sentence_keys) / total number of document sentences
                 (the list length: duplicates and keys that name no sentence count)
- utilization  = len(all_utilized_sentence_keys) / total number of document sentences
                 (not utilized / relevant, as some write-ups claim)
- completeness = |set(relevant) & set(utilized)| / len(relevant list); 1.0 when it is empty
- adherence    = no response sentence is unsupported (``unsupported_response_sentence_keys``
                 is empty; a partially supported sentence is unsupported)

There is no averaged "TRACe score" in the original, and none here.

Validation statistics (RAGBench ``ragbench/evaluation.py``): hallucination AUROC with the
positive class "not adherent" scored by ``1 - predicted adherence``, and RMSE of the
continuous scores; ragmeter adds percentile-bootstrap 95% CIs over rows.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from ragmeter import stats

__all__ = [
    "METRIC_VERSION",
    "TraceLabels",
    "TraceScores",
    "relevance",
    "utilization",
    "completeness",
    "adherence",
    "unsupported_keys",
    "trace_scores",
    "WRITEUP_VERSION",
    "WriteupScores",
    "writeup_relevance",
    "writeup_utilization",
    "writeup_completeness",
    "writeup_adherence",
    "writeup_scores",
    "Estimate",
    "rmse_estimate",
    "auroc_estimate",
]

METRIC_VERSION = "ragbench-1"


@dataclass(frozen=True)
class TraceLabels:
    """Sentence-level labels of one (question, documents, response) row."""

    n_document_sentences: int
    relevant_keys: tuple[str, ...]
    utilized_keys: tuple[str, ...]
    unsupported_keys: tuple[str, ...]


@dataclass(frozen=True)
class TraceScores:
    relevance: float
    utilization: float
    completeness: float
    adherence: bool


def _check_n(n_document_sentences: int) -> None:
    if n_document_sentences <= 0:
        raise ValueError("TRACe needs at least one document sentence")


def relevance(relevant_keys: Sequence[str], n_document_sentences: int) -> float:
    """Share of document sentences judged relevant: ``len(relevant) / n`` (RAGBench)."""
    _check_n(n_document_sentences)
    return len(relevant_keys) / n_document_sentences


def utilization(utilized_keys: Sequence[str], n_document_sentences: int) -> float:
    """Share of document sentences used by the response: ``len(utilized) / n`` (RAGBench)."""
    _check_n(n_document_sentences)
    return len(utilized_keys) / n_document_sentences


def completeness(relevant_keys: Sequence[str], utilized_keys: Sequence[str]) -> float:
    """Share of relevant sentences that were utilized: ``|set(R) & set(U)| / len(R)``, 1.0 for
    an empty ``R`` (RAGBench)."""
    if not relevant_keys:
        return 1.0
    return len(set(relevant_keys) & set(utilized_keys)) / len(relevant_keys)


def adherence(unsupported_response_keys: Sequence[str]) -> bool:
    """True when no response sentence is unsupported (RAGBench ``adherence_score``)."""
    return len(unsupported_response_keys) == 0


def unsupported_keys(support: Iterable[tuple[str, bool | None]]) -> tuple[str, ...]:
    """Keys of response sentences not fully supported, from ``(key, fully_supported)`` pairs.

    ``False`` (unsupported or only partially supported, as the paper counts it) and ``None``
    (no verdict) are both not fully supported.  Use this for new labels; for RAGBench's
    released rows read ``unsupported_response_sentence_keys`` instead, since thousands of
    their ``fully_supported`` values are null.
    """
    return tuple(key for key, full in support if full is not True)


def trace_scores(labels: TraceLabels) -> TraceScores:
    """The four TRACe metrics of one row (raises ValueError for zero document sentences)."""
    n = labels.n_document_sentences
    return TraceScores(
        relevance=relevance(labels.relevant_keys, n),
        utilization=utilization(labels.utilized_keys, n),
        completeness=completeness(labels.relevant_keys, labels.utilized_keys),
        adherence=adherence(labels.unsupported_keys),
    )


# ------------------------------------------------------- the GPT-labelling write-up variant
# ``../shared/writeups/003_9c59e4f3d0cbdd28.txt`` ("GPT Labeling Approach - Main Metrics
# Calculation"), section "Code Implementation": its _compute_context_relevance,
# _compute_context_utilization, _compute_completeness and _compute_adherence, and its
# "Average Score" of the four.  Opt-in (``trace score --definitions writeup``); RAGBench's
# definitions above stay the default.

WRITEUP_VERSION = "writeup-003-1"
WRITEUP_RELEVANCE_DENOMINATOR = 20  # "normalized by 20 (arbitrary baseline)", the write-up


@dataclass(frozen=True)
class WriteupScores:
    relevance: float
    utilization: float
    completeness: float
    adherence: float
    average: float


def writeup_relevance(relevant_keys: Sequence[str]) -> float:
    """``min(1, len(R) / 20)``; 0.0 when ``R`` is empty (the document count is not used)."""
    if not relevant_keys:
        return 0.0
    return min(1.0, len(relevant_keys) / WRITEUP_RELEVANCE_DENOMINATOR)


def writeup_utilization(relevant_keys: Sequence[str], utilized_keys: Sequence[str]) -> float:
    """``min(1, len(U) / len(R))``; 0.0 when ``R`` is empty."""
    if not relevant_keys:
        return 0.0
    return min(1.0, len(utilized_keys) / len(relevant_keys))


def writeup_completeness(relevant_keys: Sequence[str], utilized_keys: Sequence[str]) -> float:
    """``|set(R) & set(U)| / |set(R)|`` (sets, not list lengths); when ``R`` is empty, 1.0 if
    ``U`` is empty too, else 0.0."""
    r, u = set(relevant_keys), set(utilized_keys)
    if not r:
        return 1.0 if not u else 0.0
    return len(r & u) / len(r)


def writeup_adherence(fully_supported: Sequence[bool | None]) -> float:
    """1.0 when every response sentence has ``fully_supported`` true (a null or missing
    verdict counts as not supported, ``s.get("fully_supported", False)``), else 0.0; 1.0 for
    no sentences."""
    if not fully_supported:
        return 1.0
    return 1.0 if all(v is True for v in fully_supported) else 0.0


def writeup_scores(relevant_keys: Sequence[str], utilized_keys: Sequence[str],
                   fully_supported: Sequence[bool | None]) -> WriteupScores:
    """The write-up's four metrics and their plain average."""
    rel = writeup_relevance(relevant_keys)
    util = writeup_utilization(relevant_keys, utilized_keys)
    comp = writeup_completeness(relevant_keys, utilized_keys)
    adh = writeup_adherence(fully_supported)
    return WriteupScores(rel, util, comp, adh, (rel + util + comp + adh) / 4)


# ------------------------------------------------------------------ validation statistics


@dataclass(frozen=True)
class Estimate:
    """A statistic with its percentile-bootstrap 95% CI and the number of rows it used."""

    value: float | None
    ci_low: float | None
    ci_high: float | None
    n: int

    def to_dict(self) -> dict[str, object]:
        ci = [self.ci_low, self.ci_high] if self.ci_low is not None else None
        return {"value": self.value, "ci95": ci, "n": self.n}


def rmse_estimate(pred: Sequence[float], true: Sequence[float], *,
                  n_resamples: int = stats.DEFAULT_RESAMPLES,
                  seed: int = stats.DEFAULT_SEED) -> Estimate:
    """RMSE with a bootstrap CI: the CI of the mean squared error, square-rooted (the square
    root is monotone, so this equals the percentile interval of the resampled RMSE)."""
    p = np.asarray(pred, dtype=np.float64)
    t = np.asarray(true, dtype=np.float64)
    if p.size != t.size:
        raise ValueError("rmse_estimate needs sequences of equal length")
    value = stats.rmse(p, t)
    if value is None:
        return Estimate(None, None, None, 0)
    interval = stats.bootstrap_ci((p - t) ** 2, n_resamples=n_resamples, seed=seed)
    assert interval is not None
    return Estimate(value, math.sqrt(interval[0]), math.sqrt(interval[1]), int(p.size))


def auroc_estimate(scores: Sequence[float], positives: Sequence[bool], *,
                   n_resamples: int = stats.DEFAULT_RESAMPLES,
                   seed: int = stats.DEFAULT_SEED) -> Estimate:
    """AUROC (rank statistic, ties 1/2) with a percentile-bootstrap CI over rows.

    Resamples that happen to hold one class only have no AUROC and are drawn again (at most
    ``10 * n_resamples`` draws).  The value is None when either class is absent.
    """
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(positives, dtype=bool)
    if s.size != y.size:
        raise ValueError("auroc_estimate needs scores and labels of equal length")
    value = stats.auroc(s, y)
    if value is None:
        return Estimate(None, None, None, int(s.size))
    rng = np.random.default_rng(seed)
    n = s.size
    found: list[float] = []
    draws = 0
    while len(found) < n_resamples and draws < 10 * n_resamples:
        k = min(n_resamples - len(found), 200)
        idx = rng.integers(0, n, size=(k, n))
        draws += k
        ys = y[idx]
        n_pos = ys.sum(axis=1)
        n_neg = n - n_pos
        ranks = stats.rankdata(s[idx], axis=1)
        u = (ranks * ys).sum(axis=1) - n_pos * (n_pos + 1) / 2.0
        ok = (n_pos > 0) & (n_neg > 0)
        found.extend((u[ok] / (n_pos[ok] * n_neg[ok])).tolist())
    if not found:
        return Estimate(value, None, None, int(n))
    lo, hi = np.quantile(np.asarray(found[:n_resamples]), [0.025, 0.975])
    return Estimate(value, float(lo), float(hi), int(n))
