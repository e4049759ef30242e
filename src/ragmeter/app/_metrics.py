"""What an application run measures about the application itself: how many rows it answered,
whether it returned contexts, and how long it took.  Pure functions over the output rows, the
:data:`METRICS` table, and :func:`headline` (what every door reads).

Latency is the application's own time for the answered rows: from sending a call to its reply
(the attempt that succeeded; waiting for retries and rate limits is not counted), measured when
the row was called and stored with its reply, so a resumed run reports the same numbers.
Percentiles interpolate linearly between order statistics (numpy's default; Hyndman and Fan's
type 7).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ragmeter.stats import ALL_GROUP, Headline, Metric, MetricTable

__all__ = ["METRICS", "METRIC_VERSION", "answered_rate", "with_contexts_rate",
           "contexts_per_answer", "latency_percentile", "latency_mean", "measure", "headline"]

METRIC_VERSION = "app-1"
_SOURCE = "ragmeter app run"
LATENCY_QUANTILES = {"latency_p50_ms": 50.0, "latency_p95_ms": 95.0}


def _ok(rows: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [r for r in rows if r.get("status") == "ok"]


def answered_rate(rows: Sequence[Mapping[str, Any]]) -> float | None:
    """Share of the rows the application answered (``status`` ok)."""
    return len(_ok(rows)) / len(rows) if rows else None


def with_contexts_rate(rows: Sequence[Mapping[str, Any]]) -> float | None:
    """Share of the answered rows that came with at least one retrieved context."""
    ok = _ok(rows)
    return sum(1 for r in ok if r.get("retrieved_contexts")) / len(ok) if ok else None


def contexts_per_answer(rows: Sequence[Mapping[str, Any]]) -> float | None:
    """Mean number of retrieved contexts per answered row."""
    ok = _ok(rows)
    return sum(len(r.get("retrieved_contexts") or ()) for r in ok) / len(ok) if ok else None


def _latencies(rows: Sequence[Mapping[str, Any]]) -> list[float]:
    return [float(r["latency_ms"]) for r in _ok(rows)
            if isinstance(r.get("latency_ms"), (int, float))]


def latency_percentile(rows: Sequence[Mapping[str, Any]], q: float) -> float | None:
    """The ``q``-th percentile (0..100) of the answered rows' latency in ms (linear
    interpolation, numpy's default)."""
    import numpy as np

    values = _latencies(rows)
    return float(np.percentile(values, q)) if values else None


def latency_mean(rows: Sequence[Mapping[str, Any]]) -> float | None:
    """Mean latency of the answered rows, in ms."""
    values = _latencies(rows)
    return sum(values) / len(values) if values else None


METRICS = MetricTable("app", METRIC_VERSION, [
    Metric("answered", "answered",
           "share of the test set's rows the application answered (a failed call, or a reply "
           "without the answer, is not)", _SOURCE, aggregation="rate", ci="wilson",
           fn=answered_rate),
    Metric("with_contexts", "with contexts",
           "share of the answered rows that came with at least one retrieved context",
           _SOURCE, aggregation="rate", ci="wilson", fn=with_contexts_rate),
    Metric("contexts_per_answer", "contexts / answer",
           "mean number of retrieved contexts per answered row", _SOURCE, ci="none",
           fn=contexts_per_answer, digits=2),
    Metric("latency_p50_ms", "latency p50 (ms)",
           "median time from sending a call to its reply, over the answered rows", _SOURCE,
           higher_is_better=False, aggregation="percentile", ci="none",
           fn=latency_percentile, constants={"q": 50}, digits=1),
    Metric("latency_p95_ms", "latency p95 (ms)",
           "95th percentile of the time from sending a call to its reply (linear "
           "interpolation)", _SOURCE, higher_is_better=False, aggregation="percentile",
           ci="none", fn=latency_percentile, constants={"q": 95}, digits=1),
    Metric("latency_mean_ms", "latency mean (ms)",
           "mean time from sending a call to its reply, over the answered rows", _SOURCE,
           higher_is_better=False, ci="none", fn=latency_mean, digits=1),
])


def measure(rows: Sequence[Mapping[str, Any]], contexts: bool) -> dict[str, Any]:
    """Every metric over ``rows`` (those about contexts only when the application returns
    them), with ``n`` per metric and the Wilson 95% interval of each rate."""
    from ragmeter.stats import wilson_interval

    ok = _ok(rows)
    values: dict[str, float | None] = {"answered": answered_rate(rows)}
    n: dict[str, int] = {"answered": len(rows)}
    ci: dict[str, list[float] | None] = {}
    if rows:
        ci["answered"] = _interval(wilson_interval(len(ok), len(rows)))
    if contexts:
        values["with_contexts"] = with_contexts_rate(rows)
        values["contexts_per_answer"] = contexts_per_answer(rows)
        n["with_contexts"] = n["contexts_per_answer"] = len(ok)
        if ok:
            ci["with_contexts"] = _interval(wilson_interval(
                sum(1 for r in ok if r.get("retrieved_contexts")), len(ok)))
    for name, q in LATENCY_QUANTILES.items():
        values[name] = latency_percentile(rows, q)
    values["latency_mean_ms"] = latency_mean(rows)
    latencies = len(_latencies(rows))
    for name in (*LATENCY_QUANTILES, "latency_mean_ms"):
        n[name] = latencies
    return {"metrics": values, "n": n, "ci95": ci}


def _interval(pair: tuple[float, float] | None) -> list[float] | None:
    return list(pair) if pair is not None else None


def headline(summary: Mapping[str, Any]) -> list[Headline]:
    """The headline of an application run: each metric of ``summary["metrics"]`` as group
    ``all``, with its n and the share of rows answered as coverage."""
    metrics = summary.get("metrics") or {}
    cov = summary.get("coverage") or {}
    coverage = cov["scored"] / cov["rows"] if cov.get("rows") else None
    return METRICS.headline({ALL_GROUP: {k: v for k, v in metrics.items() if v is not None}},
                            ci={ALL_GROUP: summary.get("ci95") or {}},
                            n={ALL_GROUP: summary.get("n") or {}},
                            coverage={ALL_GROUP: coverage})
