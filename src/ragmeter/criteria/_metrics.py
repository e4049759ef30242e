"""The criteria judge's numbers: pure per-row functions, the family's METRICS table, and the
headline.

The criteria are the user's, so the table cannot have one metric per criterion.  It holds
the generic numbers of *a* criterion (``criterion_score``, ``criterion_pass_rate``, ...) and
every number's ``group`` is the criterion it belongs to (``relevance``; with ``--by lang``
``relevance@en``); the group ``all`` holds what is computed across criteria.  So
``ragmeter gate --require 'criterion_pass_rate>=0.8' --group relevance`` reads like the
other families' gates, and adding a criterion to a file adds groups, never metrics.

Pure: no I/O, no model.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from ragmeter.stats._metric import ALL_GROUP, Headline, Metric, MetricTable

__all__ = ["METRIC_VERSION", "METRICS", "headline", "item_score", "normalized_score",
           "passes", "expected_score", "group_name", "AGREEMENT_METRICS",
           "STABILITY_METRICS", "SCORE_METRICS"]

METRIC_VERSION = "criteria-1"


def item_score(score: int) -> float:
    """A row's score on its criterion's scale."""
    return float(score)


def normalized_score(score: float, lowest: int, highest: int) -> float:
    """``score`` on [0, 1]: the scale's lowest point 0, its highest 1 (comparable across
    scales of different lengths)."""
    return (score - lowest) / (highest - lowest)


def passes(score: int, pass_at: int) -> bool:
    """Whether a score passes: at least the criterion's ``pass_at``."""
    return score >= pass_at


def expected_score(probs: Mapping[int, float]) -> float:
    """The probability-weighted score ``sum_p P(p) * p`` over the scale's points (G-Eval's
    score, Liu et al. 2023, eq. 1), the probabilities renormalized to sum to 1."""
    total = math.fsum(probs.values())
    return math.fsum(p * q for p, q in probs.items()) / total


def group_name(criterion: str, value: str | None = None) -> str:
    """A headline group: the criterion, or ``criterion@value`` for a ``--by`` group."""
    return criterion if value is None else f"{criterion}@{value or '(empty)'}"


_SOURCE = "ragmeter criteria judge (issue 28 item 2)"
_GEVAL = "Liu et al. 2023, G-Eval, eq. 1: the expected score over the scale's points"

SCORE_METRICS = ("criterion_score", "criterion_expected_score", "criterion_normalized",
                 "criterion_pass_rate")
AGREEMENT_METRICS = ("qwk", "spearman", "spearman_expected", "exact", "mae")
STABILITY_METRICS = ("flip_rate", "fleiss_kappa")

METRICS = MetricTable("criteria", METRIC_VERSION, [
    Metric("criterion_score", "mean score",
           "mean of the judge's scores on the criterion's own scale (repeat 0, scored rows)",
           _SOURCE, fn=item_score, judged=True),
    Metric("criterion_expected_score", "expected score",
           "mean of the probability-weighted scores sum P(point) x point (choice scoring "
           "only)", _GEVAL, fn=expected_score, judged=True),
    Metric("criterion_normalized", "normalized score",
           "mean of (score - lowest point) / (highest - lowest point): 0..1 on every scale; "
           "group all: the mean over rows of each row's mean across its criteria", _SOURCE,
           fn=normalized_score, judged=True),
    Metric("criterion_pass_rate", "pass rate",
           "share of the scored rows whose score is at least the criterion's pass_at; group "
           "all: share of the rows that pass every criterion", _SOURCE, aggregation="rate",
           ci="wilson", fn=passes, judged=True),
    Metric("qwk", "QWK",
           "quadratic-weighted kappa of the judge's scores with the reference scores "
           "(--reference-field), over the positions of the criterion's points",
           "Cohen 1968", aggregation="kappa", judged=True, digits=3),
    Metric("spearman", "Spearman",
           "Spearman rank correlation of the judge's scores with the reference scores",
           "Spearman 1904", aggregation="correlation", judged=True, digits=3),
    Metric("spearman_expected", "Spearman (expected)",
           "Spearman rank correlation of the probability-weighted scores (choice scoring) "
           "with the reference scores: G-Eval's finer-grained ranking", _GEVAL,
           aggregation="correlation", judged=True, digits=3),
    Metric("exact", "exact agreement",
           "share of rows where the judge's score equals the reference score", _SOURCE,
           aggregation="rate", judged=True, digits=3),
    Metric("mae", "MAE",
           "mean absolute difference of the judge's and the reference's positions on the "
           "scale (points, on a scale of consecutive whole numbers)", _SOURCE,
           higher_is_better=False, judged=True, digits=3),
    Metric("flip_rate", "flip rate",
           "share of rows whose score is not the same in every repeat (--repeats)",
           "ragmeter: judge stability over --repeats (issue 15)", higher_is_better=False,
           aggregation="stability", ci="none", judged=True, digits=3),
    Metric("fleiss_kappa", "Fleiss' κ",
           "agreement of the repeats as raters, over the rows with every repeat scored",
           "Fleiss 1971", aggregation="stability", ci="none", judged=True, digits=3),
])


def _share(cov: Mapping[str, Any] | None) -> float | None:
    if not cov or not cov.get("rows"):
        return None
    return float(cov["scored"]) / float(cov["rows"])


def _add(values: dict[str, dict[str, Any]], ci: dict[str, dict[str, Any]],
         n: dict[str, dict[str, Any]], coverage: dict[str, Any], group: str,
         part: Mapping[str, Any]) -> None:
    values[group] = dict(part.get("metrics") or {})
    ci[group] = dict(part.get("ci95") or {})
    n[group] = dict(part.get("n") or {})
    coverage[group] = _share(part.get("coverage"))


def headline(doc: Mapping[str, Any]) -> list[Headline]:
    """The headline of a criteria result (its summary): per criterion its scores, pass rate,
    agreement with the reference scores and stability, each with its 95% CI, n and coverage;
    the ``all`` group; then the ``--by`` groups.  The numbers of a criterion whose judge is
    degenerate or at or below chance (``doc["flags"]``) carry the flag."""
    values: dict[str, dict[str, Any]] = {}
    ci: dict[str, dict[str, Any]] = {}
    n: dict[str, dict[str, Any]] = {}
    coverage: dict[str, Any] = {}
    for name, part in (doc.get("criteria_results") or {}).items():
        _add(values, ci, n, coverage, group_name(name), part)
    if doc.get("overall"):
        _add(values, ci, n, coverage, ALL_GROUP, doc["overall"])
    for name, part in ((doc.get("groups") or {}).get("values") or {}).items():
        _add(values, ci, n, coverage, name, part)
    rows = METRICS.headline(values, ci=ci, n=n, coverage=coverage)
    flags: Mapping[str, str] = doc.get("flags") or {}
    if not flags:
        return rows
    return [replace(h, flag=flags[h.group.split("@", 1)[0]])
            if h.group.split("@", 1)[0] in flags else h for h in rows]
