"""From judged rows to the numbers of each criterion: scores, pass rate, agreement with the
reference scores, stability over repeats, coverage.  Pure: rows in, dicts out.

Scores and agreement use repeat 0 (a single judge run); the stability figures use every
repeat.  Intervals: percentile bootstrap over rows (means, agreement), Wilson (pass rates).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ragmeter import stats
from ragmeter.criteria._metrics import AGREEMENT_METRICS, normalized_score, passes
from ragmeter.criteria._types import CriteriaSet, Criterion

__all__ = ["summarize_criterion", "summarize_overall", "Resampling"]

Rows = Sequence[Mapping[str, Any]]


class Resampling:
    """The intervals' settings: ``ci`` (compute them), ``resamples``, ``seed``."""

    def __init__(self, ci: bool = True, resamples: int = stats.DEFAULT_RESAMPLES,
                 seed: int = stats.DEFAULT_SEED) -> None:
        self.ci = ci
        self.resamples = resamples
        self.seed = seed

    def mean_ci(self, values: Sequence[float]) -> list[float] | None:
        if not self.ci or not values:
            return None
        interval = stats.bootstrap_ci(values, n_resamples=self.resamples, seed=self.seed)
        return list(interval) if interval else None

    def rate_ci(self, successes: int, trials: int) -> list[float] | None:
        if not self.ci:
            return None
        interval = stats.wilson_interval(successes, trials)
        return list(interval) if interval else None


def _coverage(rows: Rows) -> dict[str, Any]:
    reasons: dict[str, int] = {}
    for r in rows:
        if r.get("status") != "ok":
            key = str(r.get("reason") or "unscored")
            reasons[key] = reasons.get(key, 0) + 1
    unscored = sum(reasons.values())
    return {"rows": len(rows), "scored": len(rows) - unscored, "unscored": unscored,
            "reasons": dict(sorted(reasons.items()))}


def _validation(crit: Criterion, first: Rows, how: Resampling) -> dict[str, Any] | None:
    with_ref = [r for r in first if r.get("reference_score") is not None]
    if not with_ref:
        return None
    pairs = [(int(r["score"]), int(r["reference_score"])) for r in with_ref
             if r.get("status") == "ok"]
    agree = stats.ordinal_agreement([p[0] for p in pairs], [p[1] for p in pairs], crit.points,
                                    n_resamples=how.resamples, seed=how.seed, ci=how.ci)
    out = agree.to_dict()
    out["with_reference"] = len(with_ref)
    out["unpaired"] = len(with_ref) - len(pairs)
    expected = [(float(r["expected_score"]), float(r["reference_score"])) for r in with_ref
                if r.get("status") == "ok" and r.get("expected_score") is not None]
    if expected:
        rho, interval = stats.spearman([e[0] for e in expected], [e[1] for e in expected],
                                       n_resamples=how.resamples, seed=how.seed, ci=how.ci)
        out["spearman_expected"] = rho
        out["ci95"] = {**agree.ci95, "spearman_expected": interval}
        out["n_expected"] = len(expected)
    out["judge_mean"] = stats.mean([float(p[0]) for p in pairs]) if pairs else None
    out["reference_mean"] = stats.mean([float(p[1]) for p in pairs]) if pairs else None
    return out


def _stability(rows: Rows, repeats: int) -> dict[str, Any]:
    by_item: dict[str, list[int | None]] = {}
    for r in rows:
        by_item.setdefault(str(r["id"]), []).append(
            int(r["score"]) if r.get("status") == "ok" else None)
    return stats.repeat_agreement(by_item, repeats)


def summarize_criterion(crit: Criterion, rows: Rows, how: Resampling,
                        repeats: int = 1) -> dict[str, Any]:
    """The numbers of one criterion over its rows (all repeats given; see module docstring):
    ``metrics``, ``ci95``, ``n`` (named as METRICS), ``counts`` per point, ``coverage``,
    ``validation`` and ``stability`` when they apply."""
    first = [r for r in rows if int(r.get("repeat") or 0) == 0]
    scores = [int(r["score"]) for r in first if r.get("status") == "ok"]
    metrics: dict[str, Any] = {}
    ci: dict[str, Any] = {}
    n: dict[str, Any] = {}
    if scores:
        normalized = [normalized_score(s, crit.lowest, crit.highest) for s in scores]
        passed = sum(1 for s in scores if passes(s, crit.pass_at))
        metrics.update(criterion_score=stats.mean([float(s) for s in scores]),
                       criterion_normalized=stats.mean(normalized),
                       criterion_pass_rate=passed / len(scores))
        ci.update(criterion_score=how.mean_ci([float(s) for s in scores]),
                  criterion_normalized=how.mean_ci(normalized),
                  criterion_pass_rate=how.rate_ci(passed, len(scores)))
        n.update(dict.fromkeys(("criterion_score", "criterion_normalized",
                                "criterion_pass_rate"), len(scores)))
        expected = [float(r["expected_score"]) for r in first
                    if r.get("status") == "ok" and r.get("expected_score") is not None]
        if expected:
            metrics["criterion_expected_score"] = stats.mean(expected)
            ci["criterion_expected_score"] = how.mean_ci(expected)
            n["criterion_expected_score"] = len(expected)
    out: dict[str, Any] = {
        "metrics": metrics, "ci95": ci, "n": n,
        "counts": {str(p): sum(1 for s in scores if s == p) for p in crit.points},
        "coverage": _coverage(first)}
    validation = _validation(crit, first, how)
    if validation is not None:
        out["validation"] = validation
        for key in AGREEMENT_METRICS:
            if validation.get(key) is not None:
                metrics[key] = validation[key]
                ci[key] = validation["ci95"].get(key)
                n[key] = validation.get("n_expected" if key == "spearman_expected" else "n")
    if repeats > 1:
        st = _stability(rows, repeats)
        out["stability"] = st
        if st.get("flip_rate") is not None:
            metrics["flip_rate"] = st["flip_rate"]
            n["flip_rate"] = st["items"]
        if st.get("fleiss_kappa") is not None:
            metrics["fleiss_kappa"] = st["fleiss_kappa"]
            n["fleiss_kappa"] = st["fleiss_items"]
    return out


def summarize_overall(criteria: CriteriaSet, rows: Rows, how: Resampling) -> dict[str, Any]:
    """Group ``all``: over the rows (items) whose every criterion is scored (repeat 0), the
    mean of each row's mean normalized score, and the share of rows passing every
    criterion."""
    by_item: dict[str, dict[str, int | None]] = {}
    for r in rows:
        if int(r.get("repeat") or 0) == 0:
            by_item.setdefault(str(r["id"]), {})[str(r["criterion"])] = (
                int(r["score"]) if r.get("status") == "ok" else None)
    complete = {i: s for i, s in by_item.items()
                if all(s.get(c.name) is not None for c in criteria)}
    coverage = {"rows": len(by_item), "scored": len(complete),
                "unscored": len(by_item) - len(complete),
                "reasons": {"a criterion unscored": len(by_item) - len(complete)}
                if len(complete) < len(by_item) else {}}
    if not complete:
        return {"metrics": {}, "ci95": {}, "n": {}, "coverage": coverage}
    means = []
    passed = 0
    for scores in complete.values():
        per = [normalized_score(int(scores[c.name] or 0), c.lowest, c.highest)
               for c in criteria]
        means.append(sum(per) / len(per))
        passed += all(passes(int(scores[c.name] or 0), c.pass_at) for c in criteria)
    k = len(complete)
    return {"metrics": {"criterion_normalized": stats.mean(means),
                        "criterion_pass_rate": passed / k},
            "ci95": {"criterion_normalized": how.mean_ci(means),
                     "criterion_pass_rate": how.rate_ci(passed, k)},
            "n": {"criterion_normalized": k, "criterion_pass_rate": k},
            "coverage": coverage}
