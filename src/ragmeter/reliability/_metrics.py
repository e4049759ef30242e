"""Annotator reliability against a QC key for hierarchical win/tie/loss annotation.

Annotation is hierarchical: an annotator first decides whether an item can be rated at all
(``flagged`` = not ratable, e.g. NSFW) and only then chooses (``"A"``, ``"B"``, ``"Tie"``, ...).
A disagreement at the flag level is counted once, as a flag mismatch, and is not counted again
as a wrong choice: the choice is only compared on *applicable* items, where neither side
flagged the item.

Definitions (ragmeter issue 7), for one evaluator over the items that both the evaluator and
QC annotated (skipped items and items without QC consensus excluded, and counted):

* ``total_items``        number of such items;
* ``flag_mismatch_pct``  100 × items whose flag differs from QC's / ``total_items``;
* ``applicable_items``   items that neither side flagged; ``matches`` = applicable items whose
  choice equals QC's;
* ``reliability``        ``matches / applicable_items``; None when there are none.

Beyond the original: a Wilson 95% interval on each reliability (Wilson 1927, via
:func:`ragmeter.stats.wilson_interval`), Cohen's κ (Cohen 1960) of the choices on the
applicable items, and majority consensus of several QC annotators.

Everything here is pure: typed annotations in, numbers out.  Reading files is the suite's job.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from ragmeter import stats
from ragmeter.stats._metric import ALL_GROUP, Headline, Metric, MetricTable

__all__ = [
    "Annotation",
    "Consensus",
    "PairOutcome",
    "EvaluatorReliability",
    "qc_consensus",
    "compare_to_qc",
    "evaluator_reliability",
    "pooled_reliability",
    "percent",
    "METRIC_VERSION",
    "METRICS",
    "headline",
]

METRIC_VERSION = "qc-1"

FLAGGED = "<flagged>"  # the label of a flagged annotation when votes are counted


@dataclass(frozen=True)
class Annotation:
    """One annotator's verdict on one item.

    ``choice`` is ignored when ``flagged`` is true; a ``skipped`` annotation carries no verdict.
    """

    flagged: bool = False
    choice: str | None = None
    skipped: bool = False

    def label(self) -> str:
        """The verdict as one label: the choice, or :data:`FLAGGED`."""
        return FLAGGED if self.flagged else (self.choice or "")


@dataclass(frozen=True)
class Consensus:
    """The QC verdict of one item: an annotation, or why there is none."""

    status: Literal["ok", "skipped", "no_consensus"]
    annotation: Annotation | None = None
    votes: int = 0  # QC annotators who gave a verdict (did not skip)
    agreeing: int = 0  # of them, how many gave the consensus verdict


def qc_consensus(annotations: Sequence[Annotation]) -> Consensus:
    """The QC verdict of one item from one or more QC annotations.

    Skipped annotations do not vote; when every QC annotation is skipped the item is skipped.
    Otherwise the consensus is the verdict (a choice, or "flagged") given by a strict majority
    (more than half) of the voting QC annotators; without one the item has no consensus.
    With a single QC annotator its annotation is the consensus.
    """
    if not annotations:
        raise ValueError("qc_consensus needs at least one QC annotation")
    voting = [a for a in annotations if not a.skipped]
    if not voting:
        return Consensus("skipped")
    counts = Counter(a.label() for a in voting)
    label, top = counts.most_common(1)[0]
    if 2 * top <= len(voting):
        return Consensus("no_consensus", votes=len(voting), agreeing=top)
    winner = next(a for a in voting if a.label() == label)
    normalized = Annotation(flagged=True) if winner.flagged else Annotation(choice=winner.choice)
    return Consensus("ok", normalized, votes=len(voting), agreeing=top)


@dataclass(frozen=True)
class PairOutcome:
    """An evaluator's annotation of one item compared with QC's.

    ``status`` is ``"ok"`` when the item counts in ``total_items``; otherwise it is the reason
    it does not: ``"skipped"`` (either side skipped) or ``"qc_no_consensus"``.
    """

    status: Literal["ok", "skipped", "qc_no_consensus"]
    flag_mismatch: bool = False
    both_flagged: bool = False
    applicable: bool = False
    match: bool = False


def compare_to_qc(evaluator: Annotation, qc: Consensus) -> PairOutcome:
    """Compare one evaluator annotation with the QC verdict of the same item.

    A flag mismatch is never also counted as a wrong choice: choices are compared only when
    neither side flagged the item (issue 7's adjusted denominator).
    """
    if evaluator.skipped or qc.status == "skipped":
        return PairOutcome("skipped")
    if qc.status == "no_consensus" or qc.annotation is None:
        return PairOutcome("qc_no_consensus")
    key = qc.annotation
    if evaluator.flagged != key.flagged:
        return PairOutcome("ok", flag_mismatch=True)
    if evaluator.flagged:
        return PairOutcome("ok", both_flagged=True)
    return PairOutcome("ok", applicable=True, match=evaluator.choice == key.choice)


def percent(part: int, whole: int) -> float | None:
    """100 × part / whole; None when ``whole`` is 0 (never NaN)."""
    return None if whole == 0 else 100.0 * part / whole


@dataclass(frozen=True)
class EvaluatorReliability:
    """One evaluator's numbers against QC (see the module docstring for the definitions)."""

    total_items: int
    applicable_items: int
    matches: int
    reliability: float | None
    reliability_ci95: tuple[float, float] | None
    flag_mismatch_items: int
    flag_mismatch_pct: float | None
    both_flagged_items: int
    cohen_kappa: float | None
    skipped_items: int
    qc_no_consensus_items: int
    low_sample: bool


def evaluator_reliability(
    pairs: Sequence[tuple[Annotation, Consensus]], *, min_applicable: int = 30,
    confidence: float = 0.95,
) -> EvaluatorReliability:
    """Reliability of one evaluator from its (annotation, QC verdict) pairs.

    ``pairs`` holds only the items both sides annotated (items QC did not annotate are the
    caller's to count).  ``low_sample`` is true when ``applicable_items < min_applicable``.
    Cohen's κ is computed on the choices of the applicable items.
    """
    total = applicable = matches = mismatch = both_flagged = skipped = no_consensus = 0
    mine: list[str] = []
    theirs: list[str] = []
    for annotation, qc in pairs:
        outcome = compare_to_qc(annotation, qc)
        if outcome.status == "skipped":
            skipped += 1
            continue
        if outcome.status == "qc_no_consensus":
            no_consensus += 1
            continue
        total += 1
        mismatch += outcome.flag_mismatch
        both_flagged += outcome.both_flagged
        if outcome.applicable:
            applicable += 1
            matches += outcome.match
            mine.append(annotation.choice or "")
            theirs.append(qc.annotation.choice or "")  # type: ignore[union-attr]
    reliability = None if applicable == 0 else matches / applicable
    return EvaluatorReliability(
        total_items=total,
        applicable_items=applicable,
        matches=matches,
        reliability=reliability,
        reliability_ci95=_wilson(matches, applicable, confidence),
        flag_mismatch_items=mismatch,
        flag_mismatch_pct=percent(mismatch, total),
        both_flagged_items=both_flagged,
        cohen_kappa=stats.cohen_kappa(mine, theirs),
        skipped_items=skipped,
        qc_no_consensus_items=no_consensus,
        low_sample=applicable < min_applicable,
    )


def _wilson(successes: int, trials: int, confidence: float) -> tuple[float, float] | None:
    """:func:`stats.wilson_interval`, with the bounds that are exact in theory made exact in
    floating point: the lower bound is 0 at 0 successes, the upper bound 1 at ``trials``
    (the closed form leaves ~1e-17 there, which put 0.0 outside its own interval; found by
    the hypothesis test in tests/metrics/test_reliability.py)."""
    interval = stats.wilson_interval(successes, trials, confidence)
    if interval is None:
        return None
    lo, hi = interval
    return (0.0 if successes == 0 else lo, 1.0 if successes == trials else hi)


def pooled_reliability(per_evaluator: Sequence[EvaluatorReliability]) -> float | None:
    """Σ matches / Σ applicable_items over all evaluators (issue 7's overall_reliability)."""
    applicable = sum(e.applicable_items for e in per_evaluator)
    if applicable == 0:
        return None
    return sum(e.matches for e in per_evaluator) / applicable


# ------------------------------------------------------------------ the table

_SOURCE = "QC-key practice for win/tie/loss evaluation (ragmeter issue 7)"

METRICS = MetricTable("reliability", METRIC_VERSION, [
    Metric("reliability", "reliability",
           "share of the applicable items (neither side flagged) whose choice equals the QC "
           "key's; per evaluator, and pooled (sum of matches / sum of applicable items)",
           _SOURCE, aggregation="rate", ci="wilson", fn=compare_to_qc),
    Metric("mean_evaluator_reliability", "mean evaluator reliability",
           "unweighted mean of the evaluators' reliabilities", _SOURCE, aggregation="mean",
           ci="none"),
    Metric("cohen_kappa", "Cohen's κ",
           "chance-corrected agreement of an evaluator's choices with QC's on the applicable "
           "items", "Cohen 1960", aggregation="kappa", ci="none"),
    Metric("flag_mismatch_pct", "flag mismatch %",
           "percent of the items where exactly one of evaluator and QC flagged the item (a "
           "flag disagreement is not counted again as a wrong choice)", _SOURCE,
           higher_is_better=False, aggregation="rate", ci="none", fn=compare_to_qc, digits=1),
])


def headline(doc: Mapping[str, Any]) -> list[Headline]:
    """The headline of a reliability result (its ``to_json()`` document): each evaluator's
    reliability (Wilson 95% CI), κ and flag mismatch, then the pooled numbers as group
    ``all``.  A reliability from fewer than ``min_applicable`` items is flagged."""
    evaluators: Mapping[str, Mapping[str, Any]] = doc.get("evaluators") or {}
    values: dict[str, dict[str, Any]] = {}
    ci: dict[str, dict[str, Any]] = {}
    n: dict[str, dict[str, Any]] = {}
    coverage: dict[str, Any] = {}
    for name, e in evaluators.items():
        values[name] = {k: e.get(k) for k in ("reliability", "cohen_kappa", "flag_mismatch_pct")}
        ci[name] = {"reliability": e.get("reliability_ci95")}
        n[name] = {"reliability": e.get("applicable_items"),
                   "cohen_kappa": e.get("applicable_items"),
                   "flag_mismatch_pct": e.get("total_items")}
        annotated = e.get("annotated_items") or 0
        coverage[name] = (annotated - (e.get("not_in_qc_items") or 0)) / annotated \
            if annotated else None
    matches = sum(int(e.get("matches") or 0) for e in evaluators.values())
    applicable = sum(int(e.get("applicable_items") or 0) for e in evaluators.values())
    cov = doc.get("coverage") or {}
    values[ALL_GROUP] = {"reliability": doc.get("overall_reliability"),
                         "mean_evaluator_reliability": doc.get("mean_evaluator_reliability"),
                         "flag_mismatch_pct": doc.get("overall_flag_mismatch_pct")}
    ci[ALL_GROUP] = {"reliability": _wilson(matches, applicable, 0.95)}
    n[ALL_GROUP] = {"reliability": applicable,
                    "mean_evaluator_reliability": doc.get("mean_evaluator_reliability_n"),
                    "flag_mismatch_pct": sum(int(e.get("total_items") or 0)
                                             for e in evaluators.values())}
    coverage[ALL_GROUP] = (cov["scored"] / cov["total"]) if cov.get("total") else None
    rows = METRICS.headline(values, ci=ci, n=n, coverage=coverage)
    low = {name for name, e in evaluators.items() if e.get("low_sample")}
    floor = doc.get("min_applicable")
    return [replace(h, flag=f"fewer than {floor} applicable items")
            if h.group in low and h.metric in ("reliability", "cohen_kappa") else h
            for h in rows]
