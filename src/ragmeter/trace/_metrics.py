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

``METRICS`` (below) is the table every door iterates over: the four metrics, then the
validation statistics of a judge; ``WRITEUP_METRICS`` the opt-in write-up variant's.

Validation statistics (RAGBench ``ragbench/evaluation.py``): hallucination AUROC with the
positive class "not adherent" scored by ``1 - predicted adherence``, and RMSE of the
continuous scores; ragmeter adds percentile-bootstrap 95% CIs over rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ragmeter.stats import ALL_GROUP, Headline, Metric, MetricTable

if TYPE_CHECKING:
    from ragmeter.stats._validation import Estimate, auroc_estimate, rmse_estimate

# Re-exported for trace validate; loaded on first use (numpy), so that a judged run reaches its
# first call without them (issue 26.5).
_VALIDATION = ("Estimate", "auroc_estimate", "rmse_estimate")


def __getattr__(name: str) -> Any:
    if name in _VALIDATION:
        from ragmeter.stats import _validation

        return getattr(_validation, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
    "METRICS",
    "WRITEUP_METRICS",
    "SCORE_METRICS",
    "VALIDATION_METRICS",
    "VALIDATES",
    "table_for",
    "constants_setting",
    "validation_settings",
    "writeup_denominator",
    "judge_group",
    "headline",
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


def writeup_relevance(relevant_keys: Sequence[str],
                      denominator: int = WRITEUP_RELEVANCE_DENOMINATOR) -> float:
    """``min(1, len(R) / 20)``; 0.0 when ``R`` is empty (the document count is not used).
    ``denominator``: the write-up's 20 (``WRITEUP_METRICS`` holds it, and the signature)."""
    if not relevant_keys:
        return 0.0
    return min(1.0, len(relevant_keys) / denominator)


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
                   fully_supported: Sequence[bool | None], *,
                   denominator: int = WRITEUP_RELEVANCE_DENOMINATOR) -> WriteupScores:
    """The write-up's four metrics and their plain average."""
    rel = writeup_relevance(relevant_keys, denominator)
    util = writeup_utilization(relevant_keys, utilized_keys)
    comp = writeup_completeness(relevant_keys, utilized_keys)
    adh = writeup_adherence(fully_supported)
    return WriteupScores(rel, util, comp, adh, (rel + util + comp + adh) / 4)


# ------------------------------------------------------------------ validation statistics


# ------------------------------------------------------------------ the tables

_RAGBENCH = ("RAGBench (Friel et al. 2024, arXiv:2407.11005) section 3; reproduces the "
             "released *_score columns")
_EVALUATION = ("RAGBench ragbench/evaluation.py (paper Table 3); 95% CI: percentile "
               "bootstrap over rows (ragmeter)")
_WRITEUP = "GPT-labelling write-up 003, Code Implementation (opt-in: --definitions writeup)"

_ROW_METRICS = (
    Metric("relevance", "relevance",
           "share of the document sentences labelled relevant to the question: "
           "len(all_relevant_sentence_keys) / document sentences, mean over rows", _RAGBENCH,
           fn=relevance),
    Metric("utilization", "utilization",
           "share of the document sentences the response uses: "
           "len(all_utilized_sentence_keys) / document sentences, mean over rows", _RAGBENCH,
           fn=utilization),
    Metric("completeness", "completeness",
           "share of the relevant sentences the response uses: |set(relevant) & "
           "set(utilized)| / len(relevant), 1 when none is relevant; mean over rows", _RAGBENCH,
           fn=completeness),
    Metric("adherence", "adherence (share adherent)",
           "share of the responses with no unsupported sentence (a partially supported "
           "sentence counts as unsupported)", _RAGBENCH, aggregation="rate", fn=adherence),
)
_VALIDATION_METRICS = (
    Metric("hallucination_auroc", "halluc. AUROC",
           "how well a judge's adherence finds the annotated hallucinations: AUROC of 1 - "
           "predicted adherence (its probability, else 0/1), positive class not adherent, "
           "ties counted 1/2", _EVALUATION, aggregation="auroc", judged=True,
           constants={"method": "rank", "positive": "not_adherent"}),
    Metric("relevance_rmse", "relevance RMSE",
           "root mean squared error of a judge's relevance against the annotated relevance",
           _EVALUATION, higher_is_better=False, aggregation="rmse", judged=True),
    Metric("utilization_rmse", "utilization RMSE",
           "root mean squared error of a judge's utilization against the annotated "
           "utilization (RAGBench's evaluation.py compares relevance here, by accident)",
           _EVALUATION, higher_is_better=False, aggregation="rmse", judged=True),
    Metric("completeness_rmse", "complete. RMSE",
           "root mean squared error of a judge's completeness against the annotated "
           "completeness", _EVALUATION, higher_is_better=False, aggregation="rmse",
           judged=True),
)

METRICS = MetricTable("trace", METRIC_VERSION, [*_ROW_METRICS, *_VALIDATION_METRICS])
SCORE_METRICS: tuple[str, ...] = tuple(m.name for m in _ROW_METRICS)
VALIDATION_METRICS: tuple[str, ...] = tuple(m.name for m in _VALIDATION_METRICS)
# The TRACe metric each validation statistic compares with the annotations.
VALIDATES: dict[str, str] = {"hallucination_auroc": "adherence", "relevance_rmse": "relevance",
                             "utilization_rmse": "utilization",
                             "completeness_rmse": "completeness"}

WRITEUP_METRICS = MetricTable("trace", WRITEUP_VERSION, [
    Metric("relevance", "relevance",
           "min(1, len(relevant) / 20): relevant sentences against a fixed baseline of 20, "
           "whatever the documents' length; 0 when none is relevant", _WRITEUP,
           fn=writeup_relevance, constants={"denominator": WRITEUP_RELEVANCE_DENOMINATOR}),
    Metric("utilization", "utilization",
           "min(1, len(utilized) / len(relevant)); 0 when none is relevant", _WRITEUP,
           fn=writeup_utilization),
    Metric("completeness", "completeness",
           "|set(relevant) & set(utilized)| / |set(relevant)|; with none relevant, 1 when none "
           "is used either, else 0", _WRITEUP, fn=writeup_completeness),
    Metric("adherence", "adherence (share adherent)",
           "share of the responses whose every sentence has fully_supported true (a null "
           "counts as unsupported)", _WRITEUP, aggregation="rate", fn=writeup_adherence),
    Metric("average", "average",
           "plain mean of a row's four write-up metrics (adherence as 1/0), mean over rows",
           _WRITEUP),
])


def table_for(definitions: str) -> MetricTable:
    """The table of ``trace score --definitions`` (``ragbench`` or ``writeup``)."""
    return WRITEUP_METRICS if definitions == "writeup" else METRICS


def writeup_denominator() -> int:
    """The write-up relevance's denominator, from its row in ``WRITEUP_METRICS``."""
    return int(WRITEUP_METRICS.get("relevance").constants["denominator"])


def constants_setting(table: MetricTable, names: Iterable[str]) -> str | None:
    """The constants of ``names`` in ``table`` as a signature field
    (``relevance.denominator=20``), None when they have none."""
    wanted = set(names)
    return MetricTable(table.family, table.version,
                       [m for m in table if m.name in wanted]).signature_settings() or None


def validation_settings() -> dict[str, str]:
    """The validation signature's fields for the AUROC, from ``METRICS``
    (``auroc:rank|positive:not_adherent``)."""
    constants = METRICS.get("hallucination_auroc").constants
    return {"auroc": str(constants["method"]), "positive": str(constants["positive"])}


def judge_group(judge: str, strategy: str) -> str:
    """The name a labelling judge has in a validation (``ragmeter:trace-detector-v4
    (detector)``): its group in ``trace run``'s headline."""
    return f"{judge} ({strategy})"


# ------------------------------------------------------------------ the headline


def _share(covered: Any, total: Any) -> float | None:
    ok = all(isinstance(v, int) and not isinstance(v, bool) for v in (covered, total))
    return covered / total if ok and total else None


def _coverage(cov: Any) -> float | None:
    if not isinstance(cov, Mapping):
        return None
    return _share(cov.get("scored"), cov.get("rows", cov.get("total")))


def _means(metrics: Any) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """``{metric: {"mean", "ci95", "n"}}`` as values, CIs and n; a metric no row has a label
    for (n 0: a task the judge was not asked) is left out."""
    values: dict[str, Any] = {}
    ci: dict[str, Any] = {}
    n: dict[str, Any] = {}
    for name, entry in (metrics or {}).items():
        if isinstance(entry, Mapping) and entry.get("n"):
            values[name], ci[name], n[name] = entry.get("mean"), entry.get("ci95"), entry["n"]
    return values, ci, n


def _estimates(ests: Mapping[str, Any], rows: Any
               ) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any], float | None]:
    """A judge's ``{stat: {"value", "ci95", "n"}}`` as values, CIs, n and its coverage (the
    share of the reference rows its numbers use)."""
    values: dict[str, Any] = {}
    ci: dict[str, Any] = {}
    n: dict[str, Any] = {}
    for stat, e in ests.items():
        if isinstance(e, Mapping):
            values[stat], ci[stat], n[stat] = e.get("value"), e.get("ci95"), e.get("n")
    used = max((v for v in n.values() if isinstance(v, int)), default=None)
    return values, ci, n, _share(used, rows)


def _validation(summary: Mapping[str, Any]) -> list[Headline]:
    values: dict[str, Any] = {}
    ci: dict[str, Any] = {}
    n: dict[str, Any] = {}
    coverage: dict[str, Any] = {}
    for judge, ests in summary["judges"].items():
        if isinstance(ests, Mapping):
            values[judge], ci[judge], n[judge], coverage[judge] = _estimates(
                ests, summary.get("rows"))
    groups = summary.get("groups")
    for key, part in ((groups or {}).get("values") or {}).items():
        per_judge: dict[str, dict[str, Any]] = {}
        for name, est in (part.get("metrics") or {}).items():
            judge, _, stat = str(name).rpartition(": ")
            per_judge.setdefault(judge, {})[stat] = est
        for judge, ests in per_judge.items():
            group = f"{judge} / {key}"
            values[group], ci[group], n[group], coverage[group] = _estimates(
                ests, part.get("rows"))
    return METRICS.headline(values, ci=ci, n=n, coverage=coverage, only=VALIDATION_METRICS)


def _held_out(summary: Mapping[str, Any]) -> list[Headline]:
    """``trace fit``: each split's leave-one-split-out scores (point values)."""
    loso = (summary.get("provenance") or {}).get("leave_one_split_out") or {}
    values = {split: dict(v) for split, v in loso.items() if isinstance(v, Mapping)}
    return METRICS.headline(values, only=VALIDATION_METRICS)


def _scores(summary: Mapping[str, Any]) -> list[Headline]:
    table = WRITEUP_METRICS if f"metrics:{WRITEUP_VERSION}" in str(summary.get("signature")) \
        else METRICS
    values: dict[str, Any] = {}
    ci: dict[str, Any] = {}
    n: dict[str, Any] = {}
    coverage: dict[str, Any] = {}
    values[ALL_GROUP], ci[ALL_GROUP], n[ALL_GROUP] = _means(summary.get("metrics"))
    coverage[ALL_GROUP] = _coverage(summary.get("coverage"))
    groups = summary.get("groups")
    for key, part in ((groups or {}).get("values") or {}).items():
        values[key], ci[key], n[key] = _means(part.get("metrics"))
        coverage[key] = _coverage(part.get("coverage"))
    return table.headline(values, ci=ci, n=n, coverage=coverage,
                          only=[m.name for m in table if not m.judged])


def headline(summary: Mapping[str, Any], *,
             alarms: Sequence[Mapping[str, Any]] | None = None) -> list[Headline]:
    """The headline of a trace result from its summary, for every verb:

    * ``score`` (and ``label``, whose verb gives the summary its labels' ``metrics``): the
      four metrics (RAGBench's, or the write-up's and their average) as group ``all``, then
      per ``--by`` group, with bootstrap CI, n (rows with that label) and coverage;
    * ``validate``/``run``: per judge (group: its name; the released baselines too) the
      hallucination AUROC and RMSEs, then per judge and ``--by`` group
      (``"<judge> / <value>"``); coverage is the share of the reference rows a judge's
      numbers use;
    * ``fit``: per split, its leave-one-split-out scores (point values).

    ``alarms`` (default: the summary's): a degenerate-judge alarm (or a validity alarm: the
    judge's known validation at or below chance) flags the judged numbers
    of its verdict kind (``adherence``, and the ``hallucination_auroc`` that validates it) of
    the judge that tripped it: every group of ``label``, the labelling judge's groups of
    ``run``.
    """
    if isinstance(summary.get("judges"), Mapping):
        rows = _validation(summary)
    elif isinstance(summary.get("provenance"), Mapping):
        rows = _held_out(summary)
    else:
        rows = _scores(summary)
    from ragmeter.judges._card import ALARM_KINDS, alarm_flag

    found = [a for a in (summary.get("alarms") if alarms is None else alarms) or ()
             if isinstance(a, Mapping) and a.get("kind") in ALARM_KINDS]
    if not found:
        return rows
    label = summary.get("label")
    subject = judge_group(str(label.get("judge")), str(label.get("strategy"))) \
        if isinstance(label, Mapping) else None
    out = []
    for h in rows:
        for alarm in found:
            what = alarm.get("what")
            mine = subject is None or h.group == subject or h.group.startswith(subject + " / ")
            if mine and what in (h.metric, VALIDATES.get(h.metric)):
                h = replace(h, flag=f"degenerate judge: {what} verdicts do not vary (see "
                                    "alarms)" if alarm.get("kind") == "degenerate_judge"
                            else alarm_flag(alarm))
        out.append(h)
    return out
