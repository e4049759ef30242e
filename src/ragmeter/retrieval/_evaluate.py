"""Every query of a run scored: one item per query, in the order read (the run's queries,
then those only judged).  Which queries count follows trec_eval 9.0.x:

* a query in the run and the judgments is scored, also when none of its judgments is relevant
  (every number 0, as trec_eval counts it);
* a query in the run but not in the judgments is unscored (``not in qrels``);
* a query whose row says it failed (``status`` unscored, e.g. an application that did not
  answer) is unscored with that row's reason, also with ``all_queries``;
* a judged query with no retrieved document is unscored (``not in run``, or ``no retrieved
  documents`` for a row with an empty list: a TREC run cannot hold such a query), unless
  ``all_queries`` (trec_eval ``-c``) scores it 0 on every measure.

The answer metric (``answer_in_context@k``) needs the retrieved contexts and the reference
answer, and no judgments: it is computed for every query that has both.

Pure: queries in, items out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ragmeter.retrieval._match import match_contexts, normalize_all
from ragmeter.retrieval._metrics import (
    ANSWER_METRIC,
    METRICS,
    judge_ranking,
    rank_documents,
    ranking_values,
)
from ragmeter.retrieval._types import Query, Settings

__all__ = ["Evaluation", "evaluate", "NOT_IN_QRELS", "NOT_IN_RUN", "NOTHING_RETRIEVED"]

NOT_IN_QRELS = "not in qrels"
NOT_IN_RUN = "not in run"
NOTHING_RETRIEVED = "no retrieved documents"
NO_ANSWER = "no reference answer"


@dataclass
class Evaluation:
    """The items (one per query) and what a summary says about them."""

    items: list[dict[str, Any]]
    fields: dict[str, dict[str, Any]]  # query id -> the other columns of its rows
    ranking: bool  # the ranking metrics were computed (judgments were given)
    answers: bool  # the answer metric was computed for some query
    notes: list[str] = field(default_factory=list)


def _answer_values(q: Query, k: Iterable[int], contexts: list[str] | None
                   ) -> tuple[dict[str, float], bool]:
    """The answer metric at each k, and whether the answer was empty after normalization."""
    if contexts is None or q.answer is None:
        return {}, False
    (answer,) = normalize_all([q.answer])
    if not answer:
        return {}, True
    m = METRICS.get(ANSWER_METRIC)
    assert m.fn is not None
    return {m.at(cut).name: m.fn(contexts, answer, cut) for cut in k}, False


def _ranking(q: Query, contexts: list[str] | None, settings: Settings
             ) -> tuple[list[str], dict[str, int], int]:
    """The ranked ids and the judgments of a query (contexts matched to gold passages; a query
    with ids and texts ranks its ids when it is judged by id)."""
    if contexts is not None and not (q.docs is not None and q.judgments is not None):
        return match_contexts(contexts, normalize_all(q.gold or []), settings.match)
    return rank_documents(q.docs or [], settings.order), dict(q.judgments or {}), 0


def evaluate(queries: Mapping[str, Query], settings: Settings) -> Evaluation:
    """One item per query: ``query_id``, ``status`` (``ok`` or ``unscored`` with ``reason``),
    ``retrieved``, ``relevant`` and every metric of ``METRICS`` (cutoff metrics at each k)."""
    ranking = any(q.judged for q in queries.values())
    items: list[dict[str, Any]] = []
    empty_answers = dropped_gold = 0
    for q in queries.values():
        contexts = normalize_all(q.contexts) if q.contexts is not None else None
        answer, empty = _answer_values(q, settings.k, contexts)
        empty_answers += empty
        item: dict[str, Any] = {"query_id": q.query_id}
        retrieved = len(q.docs if q.docs is not None else q.contexts or [])
        reason = None
        if q.failed is not None:
            reason = q.failed
        elif not ranking:
            reason = None if answer else NO_ANSWER
        elif not q.judged:
            reason = NOT_IN_QRELS
        elif not retrieved and not settings.all_queries:
            reason = NOT_IN_RUN if not q.in_run else NOTHING_RETRIEVED
        item["status"] = "ok" if reason is None else "unscored"
        if reason is not None:
            item["reason"] = reason
        item["retrieved"] = retrieved
        if ranking and q.judged:
            ids, judgments, dropped = _ranking(q, contexts, settings)
            dropped_gold += dropped
            judged = judge_ranking(ids, judgments, relevance_level=settings.relevance_level,
                                   gain=settings.gain)
            item["relevant"] = judged.num_rel
            if reason is None:
                item.update(ranking_values(judged, settings.k))
        item.update(answer)
        items.append(item)
    notes = []
    if empty_answers:
        notes.append(f"{empty_answers} queries have a reference answer that is empty after "
                     f"normalization: {ANSWER_METRIC} is not computed for them")
    if dropped_gold:
        notes.append(f"{dropped_gold} gold passages are empty after normalization and were "
                     "left out")
    return Evaluation(items, {q.query_id: q.fields for q in queries.values()}, ranking,
                      any(ANSWER_METRIC.replace("@k", "@") in k for it in items for k in it),
                      notes)
