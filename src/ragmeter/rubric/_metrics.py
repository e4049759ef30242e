"""0–5 rubric judging (RAGaliq) and the 0–1 semantic score (LBRAG): pure aggregation and
pure parsers of judge replies.

Aggregation reproduces RAGaliq's ``calculate_results.py`` and ``eval.py`` (chameleon-lizard/
Ragaliq @ 1c0006d7, MIT):

- weights ``{5: 1.0, 4: 0.8, 3: 0.6, 0: 0.4, 2: 0.2, 1: 0.0}`` (a 0, "nothing found in the
  documents", is deliberately worth more than a wrong answer);
- ``weighted_score = (mean weight over items) ** 2``;
- ``mean_grade``/``median_grade`` over the non-zero grades; ``percentage`` = mean non-zero
  grade / 5 * 100; ``percentage_with_zero`` = mean of all grades / 5 * 100; counts per grade.

Replies are parsed as the original does (``eval.py::judge``: ``reply.split("[RESULT]")`` must
give exactly two parts and ``int(part.strip())`` must succeed); the original then silently drops
the item, ragmeter returns an explicit failure reason instead.  A lenient parser (for ragmeter's
own prompt) also accepts "4/5", "Score: 4" and trailing text.

The semantic parser follows LBRAG (kanoes/LBRAG-NEW): the first ``{...}`` object of the reply,
its ``score`` clipped to [0, 1]; LBRAG turns every failure into 0.0, ragmeter into a reason.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ragmeter.stats._agreement import Agreement, ordinal_agreement
from ragmeter.stats._agreement import quadratic_weighted_kappa as stats_qwk
from ragmeter.stats._metric import ALL_GROUP, Headline, Metric, MetricTable

__all__ = [
    "GRADES",
    "WEIGHTS",
    "WEIGHT_EXPONENT",
    "RESULT_MARKER",
    "ragaliq_file_meta",
    "METRIC_VERSION",
    "AGREEMENT_VERSION",
    "BUILD_VERSION",
    "METRICS",
    "RESULTS_COLUMNS",
    "AGREEMENT_COLUMNS",
    "headline",
    "grade_weight",
    "expected_weight",
    "weighted_from_mean",
    "weights_setting",
    "RubricSummary",
    "GradeParse",
    "weighted_score",
    "summarize",
    "expected_grade",
    "grade_distribution",
    "parse_result_strict",
    "parse_grade_lenient",
    "repeat_stability",
    "RepeatStability",
    "Agreement",
    "agreement",
    "quadratic_weighted_kappa",
]

# The versions of the family's definitions, each part of the signatures it makes.
METRIC_VERSION = "ragaliq-1"  # RAGaliq's table: rubric score, judge, run
AGREEMENT_VERSION = "rubric-agreement-1"  # rubric validate (and build --critique-only)
BUILD_VERSION = "ragaliq-build-1"  # rubric build

GRADES = (0, 1, 2, 3, 4, 5)
# calculate_results.py::calculate_score
WEIGHTS: Mapping[int, float] = {5: 1.0, 4: 0.8, 3: 0.6, 0: 0.4, 2: 0.2, 1: 0.0}
# calculate_results.py::calculate_score: "Square the result to penalize low scores more heavily"
WEIGHT_EXPONENT = 2
RESULT_MARKER = "[RESULT]"
_RAGALIQ_NAME = re.compile(
    r"eval_res_questions_(?P<lang>[a-z]{2})_(?P<model_name>[^_]+)_(?P<embedder_name>[^_]+)_"
    r"(?P<reranker_name>[^_]+)_(?P=lang)\.json$")


def ragaliq_file_meta(path: str | Path) -> dict[str, str]:
    """Run metadata from a RAGaliq log file name (eval.py's ``save_filename``), else {}."""
    m = _RAGALIQ_NAME.search(Path(path).name)
    return dict(m.groupdict()) if m else {}


# ------------------------------------------------------------------ aggregation


def grade_weight(grade: int) -> float:
    """The weight of one grade in RAGaliq's score (:data:`WEIGHTS`)."""
    return WEIGHTS[grade]


def weighted_from_mean(mean_weight: float) -> float:
    """RAGaliq's score from a mean weight: ``mean ** 2`` (monotone on [0, 1], so an interval
    of the mean weight maps to an interval of the score)."""
    return mean_weight ** WEIGHT_EXPONENT


def expected_weight(distribution: Mapping[int, float]) -> float:
    """The expected weight ``sum_g WEIGHTS[g] * P(g)`` of a grade distribution."""
    return math.fsum(WEIGHTS[g] * p for g, p in distribution.items())


def weighted_score(grades: Sequence[int]) -> float | None:
    """RAGaliq's score: the square of the mean weight of the grades; None for no grades.

    Source: calculate_results.py::calculate_score ("Square the result to penalize low scores
    more heavily").
    """
    if not grades:
        return None
    return weighted_from_mean(math.fsum(WEIGHTS[g] for g in grades) / len(grades))


def _short(value: float) -> str:
    """``1.0`` -> ``1``, ``0.8`` -> ``.8``, ``0.0`` -> ``0`` (the signature's spelling)."""
    text = f"{value:g}"
    return text[1:] if text.startswith("0.") else text


def weights_setting(weights: Mapping[int, float]) -> str:
    """The weights as the signature writes them: ``5:1,4:.8,3:.6,0:.4,2:.2,1:0``."""
    return ",".join(f"{g}:{_short(w)}" for g, w in weights.items())


def _median(values: Sequence[int]) -> float | None:
    if not values:
        return None
    s = sorted(values)
    mid = len(s) // 2
    return float(s[mid]) if len(s) % 2 else (s[mid - 1] + s[mid]) / 2.0


@dataclass(frozen=True)
class RubricSummary:
    """RAGaliq's row of results.md for one set of grades (see module docstring)."""

    n: int
    weighted_score: float | None
    mean_grade: float | None  # over non-zero grades
    median_grade: float | None  # over non-zero grades
    percentage: float | None  # mean non-zero grade / 5 * 100
    percentage_with_zero: float | None  # mean grade / 5 * 100
    counts: dict[str, int]  # "5".."0" -> count

    def to_dict(self) -> dict[str, object]:
        return {"n": self.n, "weighted_score": self.weighted_score,
                "mean_grade": self.mean_grade, "median_grade": self.median_grade,
                "percentage": self.percentage,
                "percentage_with_zero": self.percentage_with_zero, "counts": self.counts}


def summarize(grades: Sequence[int]) -> RubricSummary:
    """Aggregate integer grades 0..5 as RAGaliq's eval.py / calculate_results.py do.

    Raises ValueError for a grade outside 0..5 (callers validate input first).
    """
    bad = [g for g in grades if g not in WEIGHTS]
    if bad:
        raise ValueError(f"grades must be integers 0..5, got {bad[0]!r}")
    nonzero = [g for g in grades if g != 0]
    mean_nz = math.fsum(nonzero) / len(nonzero) if nonzero else None
    mean_all = math.fsum(grades) / len(grades) if grades else None
    return RubricSummary(
        n=len(grades),
        weighted_score=weighted_score(grades),
        mean_grade=mean_nz,
        median_grade=_median(nonzero),
        percentage=None if mean_nz is None else mean_nz / 5 * 100,
        percentage_with_zero=None if mean_all is None else mean_all / 5 * 100,
        counts={str(g): sum(1 for x in grades if x == g) for g in (5, 4, 3, 2, 1, 0)},
    )


def grade_distribution(choice_probs: Mapping[str, float]) -> dict[int, float] | None:
    """Probabilities of grades 0..5 from a choice-scored reply (keys "0".."5"), renormalized;
    None when no grade has positive probability."""
    probs = {g: float(choice_probs.get(str(g), 0.0)) for g in GRADES}
    total = math.fsum(p for p in probs.values() if p > 0 and math.isfinite(p))
    if total <= 0:
        return None
    return {g: (p / total if p > 0 and math.isfinite(p) else 0.0) for g, p in probs.items()}


def expected_grade(choice_probs: Mapping[str, float]) -> float | None:
    """Expected grade sum_g g * P(g) over grades 0..5 (probabilities renormalized)."""
    dist = grade_distribution(choice_probs)
    if dist is None:
        return None
    return math.fsum(g * p for g, p in dist.items())


# ------------------------------------------------------------------ judge stability


@dataclass(frozen=True)
class RepeatStability:
    """How much a judge's grade moves when the same item is judged K times."""

    items: int  # items with at least two scored repeats
    repeats: int  # K
    changed_share: float | None  # share of those items whose grade is not the same every time
    mean_spread: float | None  # mean over items of (max grade - min grade)
    mean_item_std: float | None  # mean over items of the sample std of its grades
    per_item_spread: dict[str, int]  # item id -> max - min

    def to_dict(self) -> dict[str, object]:
        return {"items": self.items, "repeats": self.repeats,
                "changed_share": self.changed_share, "mean_spread": self.mean_spread,
                "mean_item_std": self.mean_item_std}


def repeat_stability(grades_by_item: Mapping[str, Sequence[int]], repeats: int,
                     ) -> RepeatStability:
    """Per-item spread and share of items whose grade changes across repeats.

    Items with fewer than two scored repeats are left out (their stability is unknown).
    """
    spreads: dict[str, int] = {}
    stds: list[float] = []
    for item, grades in grades_by_item.items():
        if len(grades) < 2:
            continue
        spreads[item] = max(grades) - min(grades)
        m = math.fsum(grades) / len(grades)
        stds.append(math.sqrt(math.fsum((g - m) ** 2 for g in grades) / (len(grades) - 1)))
    n = len(spreads)
    return RepeatStability(
        items=n, repeats=repeats,
        changed_share=(sum(1 for s in spreads.values() if s > 0) / n) if n else None,
        mean_spread=(math.fsum(spreads.values()) / n) if n else None,
        mean_item_std=(math.fsum(stds) / n) if n else None,
        per_item_spread=spreads,
    )


# ------------------------------------------------------------------ parsers


@dataclass(frozen=True)
class GradeParse:
    """A parsed judge reply: ``grade`` 0..5 with ``feedback``, or None with a ``reason``."""

    grade: int | None
    feedback: str
    reason: str | None = None  # empty_reply | no_result_marker | several_result_markers |
    #                            not_an_integer | out_of_range | no_grade_found
    detail: str | None = None

    @property
    def ok(self) -> bool:
        return self.grade is not None


def _strip_feedback(text: str) -> str:
    return text.strip()


def parse_result_strict(reply: str) -> GradeParse:
    """RAGaliq's parsing, exactly: two parts around ``[RESULT]``, the second an ``int``.

    Source: eval.py::judge, ``feedback, score = [i.strip() for i in eval.split("[RESULT]")]``
    then ``int(score)``; any exception drops the item.  Python's ``int`` accepts surrounding
    whitespace, a sign and digit underscores; a grade outside 0..5 would later crash
    calculate_results.py (KeyError), so it is reported as ``out_of_range``.
    """
    if reply is None or not reply.strip():
        return GradeParse(None, "", "empty_reply", "the judge returned no text")
    parts = [p.strip() for p in reply.split(RESULT_MARKER)]
    if len(parts) == 1:
        return GradeParse(None, parts[0], "no_result_marker",
                          f"no {RESULT_MARKER} in the reply")
    if len(parts) > 2:
        return GradeParse(None, parts[0], "several_result_markers",
                          f"{len(parts) - 1} {RESULT_MARKER} markers in the reply")
    feedback, score = parts
    try:
        grade = int(score)
    except ValueError:
        return GradeParse(None, feedback, "not_an_integer",
                          f"text after {RESULT_MARKER} is {_clip(score)!r}")
    if grade not in WEIGHTS:
        return GradeParse(None, feedback, "out_of_range", f"grade {grade} is not in 0..5")
    return GradeParse(grade, feedback)


_LABELLED = re.compile(r"(?:\[RESULT\]|score|grade|rating|оценка|note|punktzahl|puntuaci[oó]n)"
                       r"\s*[:=]?\s*\**\s*([0-9]+)(?:\s*(?:/|out of|из|sur|von|de)\s*5\b)?",
                       re.IGNORECASE)
_FIRST_INT = re.compile(r"(?<![0-9.])([0-9]+)(?![0-9]|\.[0-9])")


def parse_grade_lenient(reply: str) -> GradeParse:
    """A forgiving parser for ragmeter's own prompt (not RAGaliq's).

    In order: the strict parse; else the integer after the last ``[RESULT]`` (so "4/5" and
    "4. Because ..." work); else the last labelled integer ("Score: 4", "Grade 3/5"); else a
    reply that is only an integer.  Several *different* labelled grades are ambiguous.
    """
    strict = parse_result_strict(reply)
    if strict.ok or strict.reason in ("empty_reply", "out_of_range"):
        return strict
    text = reply.strip()
    if RESULT_MARKER in text:
        head, *tails = text.split(RESULT_MARKER)
        found = [int(m.group(1)) for t in tails if (m := _FIRST_INT.search(t))]
        if len(set(found)) > 1:
            return GradeParse(None, head.strip(), "ambiguous_grade",
                              f"different grades after {RESULT_MARKER} markers: {found}")
        if found:
            return _grade_or_range(found[-1], head.strip())
        return GradeParse(None, head.strip(), "not_an_integer",
                          f"no integer after {RESULT_MARKER}: {_clip(tails[-1].strip())!r}")
    labelled = [int(m.group(1)) for m in _LABELLED.finditer(text)]
    if labelled:
        if len(set(labelled)) > 1:
            return GradeParse(None, text, "ambiguous_grade",
                              f"several different grades in the reply: {labelled}")
        return _grade_or_range(labelled[-1], text)
    if re.fullmatch(r"\**\s*[0-9]+\s*\**\.?", text):
        return _grade_or_range(int(re.sub(r"[^0-9]", "", text)), "")
    return GradeParse(None, text, "no_grade_found", "no [RESULT] marker and no labelled grade")


def _grade_or_range(grade: int, feedback: str) -> GradeParse:
    if grade not in WEIGHTS:
        return GradeParse(None, feedback, "out_of_range", f"grade {grade} is not in 0..5")
    return GradeParse(grade, feedback)


def _clip(text: str, n: int = 60) -> str:
    return text if len(text) <= n else text[: n - 3] + "..."


# ------------------------------------------------------------------ agreement with reference
# The statistics are ragmeter.stats' ordinal agreement, on RAGaliq's grades 0..5 (ordered
# 0 < 1 < ... < 5, the 0 "nothing found" included).


def quadratic_weighted_kappa(judge: Sequence[int], reference: Sequence[int],
                             grades: Sequence[int] = GRADES) -> float | None:
    """Cohen's quadratic-weighted kappa, weights (i - j)^2 / (K - 1)^2 over ``grades``
    (:func:`ragmeter.stats.quadratic_weighted_kappa`).  None for no items."""
    return stats_qwk(judge, reference, grades)


def agreement(judge: Sequence[int], reference: Sequence[int], *, n_resamples: int = 1000,
              seed: int = 12345, confidence: float = 0.95, ci: bool = True) -> Agreement:
    """Exact agreement, within-one agreement, quadratic-weighted kappa, MAE and Spearman of
    ``judge`` against ``reference`` grades (0..5, same items in the same order), each with a
    percentile bootstrap CI over items (:func:`ragmeter.stats.ordinal_agreement`).
    """
    if len(judge) != len(reference):
        raise ValueError("agreement needs two grade sequences of equal length")
    bad = [g for g in (*judge, *reference) if g not in WEIGHTS]
    if bad:
        raise ValueError(f"grades must be integers 0..5, got {bad[0]!r}")
    return ordinal_agreement([int(g) for g in judge], [int(g) for g in reference], GRADES,
                             n_resamples=n_resamples, seed=seed, confidence=confidence, ci=ci)


# ------------------------------------------------------------------ the table

_RAGALIQ = "RAGaliq calculate_results.py / eval.py (chameleon-lizard/Ragaliq @ 1c0006d7)"
_STABILITY = "ragmeter: judge stability over --repeats (issue 15)"
_BUILD = "ragmeter rubric build (RAGaliq's question generation and critique)"

METRICS = MetricTable("rubric", METRIC_VERSION, [
    # RAGaliq's results.md columns, per group of graded answers (score, judge, run)
    Metric("weighted_score", "weighted score",
           "square of the mean grade weight (5→1, 4→0.8, 3→0.6, 0→0.4, 2→0.2, 1→0): a 0, "
           "\"nothing found in the documents\", is worth more than a wrong answer; the 95% CI "
           "is the bootstrap interval of the mean weight, squared",
           f"{_RAGALIQ}: calculate_score", aggregation="mean_squared", ci="bootstrap",
           version=METRIC_VERSION, fn=grade_weight,
           constants={"weights": WEIGHTS, "exponent": WEIGHT_EXPONENT}, digits=6, judged=True),
    Metric("mean_grade", "mean grade (≠0)", "mean of the non-zero grades 1..5",
           _RAGALIQ, aggregation="mean", ci="bootstrap", version=METRIC_VERSION, judged=True),
    Metric("median_grade", "median (≠0)", "median of the non-zero grades 1..5", _RAGALIQ,
           aggregation="median", ci="none", version=METRIC_VERSION, judged=True),
    Metric("percentage", "%", "mean non-zero grade / 5 × 100", _RAGALIQ, aggregation="mean",
           ci="none", version=METRIC_VERSION, judged=True),
    Metric("percentage_with_zero", "% with 0", "mean of all grades (0 included) / 5 × 100",
           _RAGALIQ, aggregation="mean", ci="bootstrap", version=METRIC_VERSION, judged=True),
    # beside RAGaliq's columns
    Metric("expected_grade_mean", "E[grade]",
           "mean over the graded answers of the expected grade Σ g·P(g), P the judge's "
           "probabilities of \"0\"..\"5\" (choice scoring)",
           "ragmeter: choice-scored rubric judge", aggregation="mean", ci="none",
           version=METRIC_VERSION, fn=expected_grade, judged=True),
    Metric("expected_weighted_score", "E[weighted score]",
           "the weighted score with each answer's expected weight Σ w(g)·P(g) in place of the "
           "weight of its most probable grade", "ragmeter: choice-scored rubric judge",
           aggregation="mean_squared", ci="none", version=METRIC_VERSION, fn=expected_weight,
           digits=6, judged=True),
    Metric("language_consistency_mean", "lang.cons.",
           "mean language_consistency_score over the answers that have one: RAGaliq's logged "
           "value, or (rubric run) lingua's confidence that the answer is in the question's "
           "language", "RAGaliq eval logs; ragmeter rubric run", aggregation="mean", ci="none",
           version=METRIC_VERSION, digits=3),
    # judge stability over repeats (rubric judge --repeats K; stored under "stability")
    Metric("changed_share", "grade changed",
           "share of the answers judged at least twice whose grade is not the same on every "
           "repeat", _STABILITY, higher_is_better=False, aggregation="rate", ci="none",
           version=METRIC_VERSION, digits=3, judged=True),
    Metric("mean_spread", "mean spread",
           "mean over answers of the largest minus the smallest grade across repeats",
           _STABILITY, higher_is_better=False, aggregation="mean", ci="none",
           version=METRIC_VERSION, digits=3, judged=True),
    Metric("flip_rate", "flip rate",
           "share of the answers judged at least twice whose verdicts are not all equal",
           _STABILITY, higher_is_better=False, aggregation="rate", ci="none",
           version=METRIC_VERSION, digits=3, judged=True),
    Metric("mean_agreement", "per-item agreement",
           "mean over answers of the share of repeat pairs that give the same grade",
           _STABILITY, aggregation="mean", ci="none", version=METRIC_VERSION, digits=3,
           judged=True),
    Metric("fleiss_kappa", "Fleiss' κ",
           "chance-corrected agreement of the repeats as raters, over the answers with every "
           "repeat graded", "Fleiss 1971", aggregation="kappa", ci="none",
           version=METRIC_VERSION, digits=3, judged=True),
    Metric("weighted_score_all_repeats", "weighted score (all repeats)",
           "the weighted score with each answer's weight averaged over its repeats; bootstrap "
           "CI over answers", _STABILITY, aggregation="mean_squared", ci="bootstrap",
           version=METRIC_VERSION, fn=grade_weight, digits=6, judged=True),
    # agreement of a judge with reference grades (rubric validate; build --critique-only)
    Metric("exact", "exact", "share of the paired items with the same grade on both sides",
           "ragmeter rubric validate", aggregation="rate", ci="bootstrap",
           version=AGREEMENT_VERSION, digits=3),
    Metric("within_one", "within one",
           "share of the paired items whose grades differ by at most 1",
           "ragmeter rubric validate", aggregation="rate", ci="bootstrap",
           version=AGREEMENT_VERSION, digits=3),
    Metric("qwk", "QWK",
           "quadratic-weighted Cohen's kappa over grades 0..5, weights (i − j)² / 25",
           "Cohen 1968", aggregation="kappa", ci="bootstrap", version=AGREEMENT_VERSION,
           constants={"weighting": "quadratic"}, digits=3),
    Metric("mae", "MAE", "mean absolute difference of the grades",
           "ragmeter rubric validate", higher_is_better=False, aggregation="mean",
           ci="bootstrap", version=AGREEMENT_VERSION, digits=3),
    Metric("spearman", "Spearman ρ",
           "rank correlation of the two sides' grades (average ranks for ties); none when a "
           "side is constant", "Spearman 1904", aggregation="correlation", ci="bootstrap",
           version=AGREEMENT_VERSION, digits=3),
    # rubric build
    Metric("questions_kept", "kept", "questions that passed every critique threshold and "
           "were written to the output", _BUILD, aggregation="count", ci="none",
           version=BUILD_VERSION, digits=0),
    Metric("critique_mean", "mean rating",
           "mean 1..5 rating the critic gave one criterion (groundedness, relevance, "
           "standalone) over the questions it rated", _BUILD, aggregation="mean", ci="none",
           version=BUILD_VERSION, digits=2, judged=True),
])

# RAGaliq's results.md columns, in its order (the tables of rubric score/judge/run)
RESULTS_COLUMNS = ("weighted_score", "mean_grade", "median_grade", "percentage",
                   "percentage_with_zero")
# judge stability (a group's "stability" block)
STABILITY_COLUMNS = ("changed_share", "mean_spread", "flip_rate", "mean_agreement",
                     "fleiss_kappa", "weighted_score_all_repeats")
# rubric validate's statistics, in its order
AGREEMENT_COLUMNS = ("exact", "within_one", "qwk", "mae", "spearman")
for _name in (*RESULTS_COLUMNS, *STABILITY_COLUMNS, *AGREEMENT_COLUMNS):
    METRICS.get(_name)  # a typo here fails at import, naming the valid metrics


def _share(part: Any, whole: Any) -> float | None:
    return part / whole if isinstance(part, int) and isinstance(whole, int) and whole else None


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _degenerate(summary: Mapping[str, Any]) -> str | None:
    """The flag of judged numbers when the judge tripped the degenerate-judge alarm, or its
    known validation is at or below chance (:func:`ragmeter.judges.check_validity`)."""
    from ragmeter.judges._card import alarm_flag

    found = [a for a in summary.get("alarms") or [] if isinstance(a, Mapping)]
    degenerate = [a for a in found if a.get("kind") == "degenerate_judge"]
    parts = ["degenerate judge: " + "; ".join(str(a.get("what") or "grades")
                                              for a in degenerate)] if degenerate else []
    parts += [alarm_flag(a) for a in found if a.get("kind") == "judge_at_chance"]
    return "; ".join(parts) or None


def _graded_headline(summary: Mapping[str, Any]) -> list[Headline]:
    """rubric score, judge and run: each group's RAGaliq row, its extras and its stability."""
    by = list(summary.get("by") or [])
    values: dict[str, dict[str, Any]] = {}
    ci: dict[str, dict[str, Any]] = {}
    n: dict[str, dict[str, Any]] = {}
    coverage: dict[str, Any] = {}
    for g in summary.get("groups") or []:
        label = " ".join(str(g[c]) for c in by) or ALL_GROUP
        graded = _count(g.get("n"))
        nonzero = None if graded is None else graded - int((g.get("counts") or {}).get("0", 0))
        st: Mapping[str, Any] = g.get("stability") or {}
        values[label] = {name: g[name] for name in METRICS.names if name in g}
        values[label].update({name: st[name] for name in STABILITY_COLUMNS if name in st})
        ci[label] = {**(g.get("ci95") or {}),
                     "weighted_score_all_repeats": st.get("weighted_score_all_repeats_ci95")}
        n[label] = {name: graded for name in values[label]}
        n[label].update({name: nonzero for name in ("mean_grade", "median_grade", "percentage")})
        n[label].update({name: st.get("items") for name in STABILITY_COLUMNS})
        n[label].update(language_consistency_mean=g.get("language_consistency_n"),
                        fleiss_kappa=st.get("fleiss_items"))
        cov = g.get("coverage") or {}
        coverage[label] = _share(cov.get("scored"), cov.get("total"))
    flag = _degenerate(summary)
    return METRICS.headline(values, ci=ci, n=n, coverage=coverage,
                            flags={m.name: flag for m in METRICS if m.judged and flag})


def _agreement_headline(summary: Mapping[str, Any]) -> list[Headline]:
    """rubric validate: agreement per ``by`` group, then overall as group ``all``."""
    by = list(summary.get("by") or [])
    rows = [(" ".join(str(g[c]) for c in by), g) for g in summary.get("groups") or []] \
        if by else []
    rows.append((ALL_GROUP, summary.get("overall") or {}))
    cov = summary.get("coverage") or {}
    return METRICS.headline(
        {label: {k: g.get(k) for k in AGREEMENT_COLUMNS} for label, g in rows},
        ci={label: g.get("ci95") or {} for label, g in rows},
        n={label: _count(g.get("n")) for label, g in rows},
        coverage={ALL_GROUP: _share(cov.get("scored"), cov.get("total"))})


def _build_headline(summary: Mapping[str, Any]) -> list[Headline]:
    """rubric build: the questions kept, then per criterion the critic's mean rating and (with
    ``critique_only``) its agreement with the original critic."""
    cov = summary.get("coverage") or {}
    values: dict[str, dict[str, Any]] = {ALL_GROUP: {"questions_kept": summary.get("kept")}}
    ci: dict[str, dict[str, Any]] = {}
    n: dict[str, Any] = {ALL_GROUP: _count(cov.get("total"))}
    coverage: dict[str, Any] = {ALL_GROUP: _share(cov.get("scored"), cov.get("total"))}
    criteria: Mapping[str, Any] = summary.get("criteria") or {}
    agreement: Mapping[str, Any] = summary.get("agreement") or {}
    degenerate = set()
    for name, c in criteria.items():
        ccov = c.get("coverage") or {}
        values[name] = {"critique_mean": c.get("mean")}
        n[name] = {"critique_mean": _count(ccov.get("scored"))}
        coverage[name] = _share(ccov.get("scored"), ccov.get("total"))
        a = agreement.get(name)
        if a:
            values[name].update({k: a.get(k) for k in AGREEMENT_COLUMNS})
            ci[name] = {k: a.get(f"{k}_ci") for k in AGREEMENT_COLUMNS}
            n[name].update({k: _count(a.get("n")) for k in AGREEMENT_COLUMNS})
        if c.get("degenerate"):
            degenerate.add(name)
    rows = METRICS.headline(values, ci=ci, n=n, coverage=coverage)
    return [replace(h, flag=f"degenerate critic: {h.group} critique") if h.group in degenerate
            else h for h in rows]


def headline(summary: Mapping[str, Any]) -> list[Headline]:
    """The headline of any rubric result (its summary): RAGaliq's numbers per group for
    score/judge/run (judged numbers flagged when the judge tripped the degenerate-judge alarm),
    the agreement statistics per group and overall for validate, the questions kept and each
    criterion's critique for build; none for a dry run."""
    if summary.get("dry_run"):
        return []
    if summary.get("verb") == "build":
        return _build_headline(summary)
    if summary.get("command") == "validate":
        return _agreement_headline(summary)
    return _graded_headline(summary)
