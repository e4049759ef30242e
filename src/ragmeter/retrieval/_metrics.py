"""Retrieval metrics of one query, exact to trec_eval, and the family's METRICS table.

trec_eval (usnistgov/trec_eval, version 9.0.x, the code pytrec_eval binds) defines every number
here; the comments name its file.  For one query:

* the ranking: documents sorted by score descending, ties broken by docid in *reverse*
  lexicographic (byte) order (``form_res_rels.c: comp_sim_docno``); the rank column of a run
  file is ignored;
* relevant: a judged grade ``>= relevance_level`` (``-l``, default 1); ``num_rel`` counts the
  query's relevant judgments, retrieved or not; an unjudged document is not relevant;
* ``P_k`` = relevant in the top k / k (a ranking shorter than k is padded with non-relevant
  documents: ``m_P.c``); ``recall_k`` = relevant in the top k / num_rel, 0 when num_rel is 0
  (``m_recall.c``); ``success_k`` = 1 when a relevant document is in the top k
  (``m_success.c``); ``recip_rank`` = 1 / rank of the first relevant document, 0 when none
  (``m_recip_rank.c``); ``map`` = the sum of the precision at each relevant retrieved document
  / num_rel (uninterpolated, over the whole ranking: ``m_map.c``);
* ``ndcg_cut_k``: DCG@k = sum over the top k of gain / log2(rank + 1), the gain being the
  judged grade when it is positive (``m_ndcg_cut.c``: the grade itself, so graded judgments
  count linearly, and whatever ``-l`` is), divided by the DCG@k of the ideal ranking of the
  query's positive judgments; 0 when the query has none.

Per query these functions give trec_eval's numbers bit for bit (same operations in the same
order; tests/metrics/test_retrieval_trec.py checks them against pytrec_eval on generated runs).

Pure: a ranking and its judgments in, numbers out.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ragmeter.retrieval._types import Doc
from ragmeter.stats._metric import ALL_GROUP, Headline, Metric, MetricTable

__all__ = [
    "METRIC_VERSION",
    "METRICS",
    "ANSWER_METRIC",
    "Judged",
    "judge_ranking",
    "rank_documents",
    "precision_at",
    "recall_at",
    "ndcg_at",
    "hit_at",
    "reciprocal_rank",
    "average_precision",
    "answer_in_context",
    "ranking_values",
    "headline",
]

METRIC_VERSION = "trec-1"


@dataclass(frozen=True)
class Judged:
    """One query's ranking read against its judgments: what every ranking metric reads.

    ``grades[i]`` is the judged grade of the document at rank ``i + 1`` (None: not judged);
    ``judged`` holds every grade of the query's judgments (each judged document once, retrieved
    or not).  ``relevance_level`` is the least relevant grade; ``gain`` the nDCG gain of a
    grade (``linear``: the grade, trec_eval's; ``exponential``: ``2**grade - 1``).
    """

    grades: tuple[int | None, ...]
    judged: tuple[int, ...]
    relevance_level: int = 1
    gain: str = "linear"

    def relevant(self, grade: int | None) -> bool:
        return grade is not None and grade >= self.relevance_level

    @property
    def num_rel(self) -> int:
        return sum(1 for g in self.judged if g >= self.relevance_level)

    def gain_of(self, grade: int) -> float:
        return float(2 ** grade - 1) if self.gain == "exponential" else float(grade)


def judge_ranking(ranking: Sequence[str], judgments: Mapping[str, int], *,
                  relevance_level: int = 1, gain: str = "linear") -> Judged:
    """The ranked document ids read against the judgments (document id -> grade)."""
    return Judged(tuple(judgments.get(d) for d in ranking), tuple(judgments.values()),
                  relevance_level, gain)


def _docid_key(doc_id: str) -> bytes:
    # trec_eval compares docids with strcmp: UTF-8 byte order (code point order for text)
    return doc_id.encode("utf-8", "surrogatepass")


def rank_documents(docs: Sequence[Doc], order: str = "score") -> list[str]:
    """The document ids of one query in rank order.

    ``score`` (trec_eval): by score descending, ties by docid descending
    (``form_res_rels.c: comp_sim_docno``).  Documents without scores, and ``given``: by the
    rank given (ties by position), else by position (the order of the list or of the lines).
    """
    if order == "score" and docs and all(d.score is not None for d in docs):
        ranked = sorted(docs, key=lambda d: (d.score, _docid_key(d.doc_id)), reverse=True)
    elif docs and all(d.rank is not None for d in docs):
        ranked = sorted(docs, key=lambda d: (d.rank, d.position))
    else:
        ranked = sorted(docs, key=lambda d: d.position)
    return [d.doc_id for d in ranked]


def _relevant_in_top(q: Judged, k: int) -> int:
    return sum(1 for g in q.grades[:k] if q.relevant(g))


def precision_at(q: Judged, k: int) -> float:
    """trec_eval ``P_k``: relevant documents in the top k / k (``m_P.c``)."""
    return _relevant_in_top(q, k) / k


def recall_at(q: Judged, k: int) -> float:
    """trec_eval ``recall_k``: relevant documents in the top k / all relevant judgments; 0 for a
    query without relevant judgments (``m_recall.c``)."""
    num_rel = q.num_rel
    return _relevant_in_top(q, k) / num_rel if num_rel else 0.0


def hit_at(q: Judged, k: int) -> float:
    """trec_eval ``success_k``: 1 when a relevant document is in the top k (``m_success.c``)."""
    return 1.0 if _relevant_in_top(q, k) else 0.0


def reciprocal_rank(q: Judged) -> float:
    """trec_eval ``recip_rank``: 1 / rank of the first relevant document, 0 when none is
    retrieved (``m_recip_rank.c``)."""
    for i, g in enumerate(q.grades):
        if q.relevant(g):
            return 1.0 / (i + 1)
    return 0.0


def average_precision(q: Judged) -> float:
    """trec_eval ``map`` of one query: the precision after each relevant retrieved document,
    summed, / all relevant judgments (uninterpolated, whole ranking: ``m_map.c``)."""
    found = 0
    total = 0.0
    for i, g in enumerate(q.grades):
        if q.relevant(g):
            found += 1
            total += found / (i + 1)
    return total / q.num_rel if found else 0.0


def ndcg_at(q: Judged, k: int) -> float:
    """trec_eval ``ndcg_cut_k``: DCG@k / ideal DCG@k with gain = the grade (positive grades
    only) and discount log2(rank + 1); 0 for a query without positive judgments
    (``m_ndcg_cut.c``).  ``gain="exponential"`` uses ``2**grade - 1`` (not trec_eval's)."""
    dcg = 0.0
    for i, g in enumerate(q.grades[:k]):
        if g is not None and g > 0:
            dcg += q.gain_of(g) / math.log2(i + 2)
    ideal = 0.0
    for i, g in enumerate(sorted((g for g in q.judged if g > 0), reverse=True)[:k]):
        ideal += q.gain_of(g) / math.log2(i + 2)
    return dcg / ideal if ideal > 0.0 else dcg


def answer_in_context(contexts: Sequence[str], answer: str, k: int) -> float:
    """1 when the reference answer occurs in one of the top-k retrieved contexts.

    Both are normalized first (:func:`ragmeter.text.normalize_text`: lower case, characters of
    the letter scripts and digits kept, everything else one space); "occurs" means the answer's
    words appear in the context as a run of whole words (``" paris "`` in ``" in paris france
    "``, not ``"par"`` in ``"paris"``).  Takes normalized texts."""
    needle = f" {answer} "
    return 1.0 if any(needle in f" {c} " for c in contexts[:k]) else 0.0


# ------------------------------------------------------------------ the table

_TREC = "trec_eval 9.0 (usnistgov/trec_eval), measure {}"

ANSWER_METRIC = "answer_in_context@k"

METRICS = MetricTable("retrieval", METRIC_VERSION, [
    Metric("precision@k", "P@k",
           "relevant documents in the top k, divided by k (a ranking shorter than k counts "
           "the missing places as not relevant)", _TREC.format("P_k"), fn=precision_at),
    Metric("recall@k", "Recall@k",
           "relevant documents in the top k, divided by the query's relevant judgments",
           _TREC.format("recall_k"), fn=recall_at),
    Metric("ndcg@k", "nDCG@k",
           "discounted cumulative gain of the top k (gain = graded relevance, discount "
           "log2(rank+1)) divided by that of the ideal ranking", _TREC.format("ndcg_cut_k"),
           fn=ndcg_at, constants={"discount": "log2(rank+1)"}),
    Metric("hit_rate@k", "Hit@k", "1 when a relevant document is in the top k, else 0",
           _TREC.format("success_k"), fn=hit_at),
    Metric("mrr", "MRR", "1 / the rank of the first relevant document (0 when none is "
           "retrieved)", _TREC.format("recip_rank"), fn=reciprocal_rank),
    Metric("map", "MAP", "average precision: the precision at each relevant retrieved "
           "document, summed and divided by the query's relevant judgments (uninterpolated)",
           _TREC.format("map"), fn=average_precision),
    Metric(ANSWER_METRIC, "Answer@k",
           "1 when the reference answer (normalized) occurs as whole words in one of the top "
           "k retrieved contexts (normalized)", "ragmeter (answer recall of retrieval, as "
           "DPR's top-k retrieval accuracy)", fn=answer_in_context,
           constants={"normalization": "lbrag", "occurs": "whole words"}),
])


def ranking_values(q: Judged, k: Sequence[int]) -> dict[str, float]:
    """Every ranking metric of ``METRICS`` for one query: the cutoff metrics at each k."""
    out: dict[str, float] = {}
    for m in METRICS:
        if m.name == ANSWER_METRIC or m.fn is None:
            continue
        if m.cutoff:
            for cut in k:
                out[m.at(cut).name] = m.fn(q, cut)
        else:
            out[m.name] = m.fn(q)
    return out


def headline(doc: Mapping[str, Any]) -> list[Headline]:
    """The headline of a retrieval result (its summary): every metric's mean over the scored
    queries (group ``all``), then per ``--by`` group, each with its 95% CI when computed, n
    and coverage.  A comparison's headline: each run's mean on the paired queries and the
    difference (second minus first) with its paired 95% CI."""
    if doc.get("verb") == "compare":
        return _compare_headline(doc)
    values = {ALL_GROUP: doc.get("metrics") or {}}
    ci = {ALL_GROUP: doc.get("ci95") or {}}
    n = {ALL_GROUP: doc.get("n") or {}}
    cov = doc.get("coverage") or {}
    coverage = {ALL_GROUP: cov["scored"] / cov["rows"] if cov.get("rows") else None}
    groups = (doc.get("groups") or {}).get("values") or {}
    for name, part in groups.items():
        values[name] = part.get("metrics") or {}
        ci[name] = part.get("ci95") or {}
        n[name] = part.get("n") or {}
        gcov = part.get("coverage") or {}
        coverage[name] = gcov["scored"] / gcov["rows"] if gcov.get("rows") else None
    return METRICS.headline(values, ci=ci, n=n, coverage=coverage)


def _compare_headline(doc: Mapping[str, Any]) -> list[Headline]:
    runs = doc.get("runs") or []
    comparison: Mapping[str, Mapping[str, Any]] = doc.get("comparison") or {}
    paired = doc.get("paired_queries")
    values: dict[str, dict[str, Any]] = {str(r["label"]): {} for r in runs}
    values["difference"] = {}
    ci: dict[str, dict[str, Any]] = {"difference": {}}
    for name, c in comparison.items():
        for r, key in zip(runs, ("a", "b"), strict=False):
            values[str(r["label"])][name] = c.get(key)
        values["difference"][name] = c.get("difference")
        ci["difference"][name] = c.get("ci95")
    return METRICS.headline(values, ci=ci, n={g: paired for g in values})
