"""The retrieval metrics are trec_eval's, per query, bit for bit.

Golden values below come from trec_eval 9.0.x through pytrec_eval-terrier 0.5.11
(``pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)``), run once and pasted.  The
property tests then compare every query of generated runs (graded judgments, score ties,
duplicate documents, empty queries, queries missing on either side, cutoffs beyond the ranking)
with pytrec_eval itself; they skip with a reason when it is not installed, and fail under CI.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ragmeter
from ragmeter.errors import InputError
from ragmeter.retrieval._metrics import (
    average_precision,
    judge_ranking,
    ndcg_at,
    precision_at,
    rank_documents,
    recall_at,
    reciprocal_rank,
)
from ragmeter.retrieval._types import Doc


def _pytrec() -> Any:
    try:
        import pytrec_eval
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail("pytrec_eval is missing under CI: pip install 'ragmeter[test]' "
                        "(pytrec-eval-terrier)")
        pytest.skip("pytrec_eval (pytrec-eval-terrier, in the test extra) is not installed: "
                    "the per-query comparison with trec_eval cannot run")
    return pytrec_eval


# trec_eval's measure of each ragmeter metric
TREC = {"precision": "P", "recall": "recall", "ndcg": "ndcg_cut", "hit_rate": "success"}


def trec_name(metric: str) -> str:
    if metric == "mrr":
        return "recip_rank"
    if metric == "map":
        return "map"
    stem, _, k = metric.partition("@")
    return f"{TREC[stem]}_{k}"


def measures(k: tuple[int, ...]) -> set[str]:
    cuts = ",".join(map(str, k))
    return {f"P.{cuts}", f"recall.{cuts}", f"ndcg_cut.{cuts}", f"success.{cuts}", "recip_rank",
            "map"}


# ------------------------------------------------------------------ golden values

# q1: a, b, c tie at 1.0 (trec_eval ranks c, b, a: docid descending), z at 0.5;
# grades a=1, b=2, c=0, z=1.  q5: a document judged -1 ranked first.
RUN = {"q1": {"a": 1.0, "b": 1.0, "c": 1.0, "z": 0.5}, "q2": {"x": 1.0},
       "q4": {"k": 1.0}, "q5": {"n": 2.0, "m": 1.0}}
QRELS = {"q1": {"a": 1, "b": 2, "c": 0, "z": 1}, "q2": {"x": 0}, "q3": {"y": 1},
         "q5": {"n": -1, "m": 1}}


@pytest.mark.parametrize(("query", "metric", "expected"), [
    # from pytrec_eval-terrier 0.5.11 (trec_eval 9.0.x) on RUN and QRELS above
    ("q1", "precision@1", 0.0),
    ("q1", "precision@3", 0.6666666666666666),
    ("q1", "precision@10", 0.3),
    ("q1", "recall@3", 0.6666666666666666),
    ("q1", "recall@10", 1.0),
    ("q1", "ndcg@1", 0.0),
    ("q1", "ndcg@3", 0.5627272554209044),
    ("q1", "ndcg@10", 0.7002827395649097),
    ("q1", "hit_rate@1", 0.0),
    ("q1", "hit_rate@3", 1.0),
    ("q1", "mrr", 0.5),
    ("q1", "map", 0.6388888888888888),
    ("q2", "ndcg@10", 0.0),  # judged, nothing relevant: scored 0 and counted
    ("q2", "map", 0.0),
    ("q5", "ndcg@3", 0.6309297535714575),  # a negative grade gains nothing
    ("q5", "map", 0.5),
    ("q5", "precision@10", 0.1),
])
def test_golden_values_from_trec_eval(query: str, metric: str, expected: float) -> None:
    result = ragmeter.retrieval.score(RUN, qrels=QRELS, k=(1, 3, 10))
    item = next(it for it in result.items if it["query_id"] == query)
    assert item["status"] == "ok"
    assert item[metric] == expected


def test_which_queries_count_follows_trec_eval() -> None:
    result = ragmeter.retrieval.score(RUN, qrels=QRELS, k=(1, 3, 10))
    status = {it["query_id"]: (it["status"], it.get("reason")) for it in result.items}
    # trec_eval evaluates q1, q2, q5 (run and qrels); q4 has no judgments, q3 no results
    assert status == {"q1": ("ok", None), "q2": ("ok", None), "q5": ("ok", None),
                      "q4": ("unscored", "not in qrels"), "q3": ("unscored", "not in run")}
    # the mean is over the three (trec_eval's "all" line: recip_rank (0.5 + 0 + 0.5) / 3)
    assert result.summary["metrics"]["mrr"] == pytest.approx(1 / 3, abs=1e-15)
    assert result.summary["n"]["mrr"] == 3
    # trec_eval -c: every judged query, q3 (not in the run) scoring 0: (0.5 + 0 + 0 + 0.5) / 4
    complete = ragmeter.retrieval.score(RUN, qrels=QRELS, k=(1, 3, 10), all_queries=True)
    assert complete.summary["metrics"]["mrr"] == 0.25
    assert complete.summary["n"]["mrr"] == 4


def test_relevance_level_counts_for_precision_but_not_for_ndcg_gains() -> None:
    # from pytrec_eval-terrier 0.5.11 with relevance_level=2: run a 3.0, b 2.0, c 1.0;
    # grades a=1, b=2, c=0 -> P_3 0.3333333333333333, ndcg_cut_3 0.8597186998521972
    result = ragmeter.retrieval.score({"q": {"a": 3.0, "b": 2.0, "c": 1.0}},
                                      qrels={"q": {"a": 1, "b": 2, "c": 0}}, k=3,
                                      relevance_level=2)
    (item,) = result.items
    assert item["precision@3"] == 0.3333333333333333
    assert item["ndcg@3"] == 0.8597186998521972


@pytest.mark.parametrize(("docs", "expected"), [
    # trec_eval: score descending, ties by docid in reverse strcmp order (UTF-8 bytes);
    # checked with pytrec_eval: recip_rank of "a" among a, b, c tied is 1/3, "a" above "B"
    ([("a", 1.0), ("b", 1.0), ("c", 1.0)], ["c", "b", "a"]),
    ([("a", 1.0), ("B", 1.0)], ["a", "B"]),
    ([("é", 1.0), ("z", 1.0)], ["é", "z"]),
    ([("é", 1.0), ("\U0001F600", 1.0)], ["\U0001F600", "é"]),
    ([("d2", 0.5), ("d10", 0.5), ("d1", 2.0)], ["d1", "d2", "d10"]),
    ([("x", -0.0), ("y", 0.0)], ["y", "x"]),
])
def test_ties_break_by_docid_descending(docs: list[tuple[str, float]],
                                        expected: list[str]) -> None:
    ranked = rank_documents([Doc(d, s, None, i) for i, (d, s) in enumerate(docs)])
    assert ranked == expected


def test_given_order_keeps_the_rank_column_or_the_list() -> None:
    docs = [Doc("a", 1.0, 2, 0), Doc("b", 1.0, 1, 1), Doc("c", 5.0, 3, 2)]
    assert rank_documents(docs, "score") == ["c", "b", "a"]
    assert rank_documents(docs, "given") == ["b", "a", "c"]
    unranked = [Doc("a", 1.0, None, 0), Doc("c", 5.0, None, 1)]
    assert rank_documents(unranked, "given") == ["a", "c"]


def test_metric_functions_by_hand() -> None:
    # ranking r1 (2), x (unjudged), r2 (1), n (0); a third relevant document never retrieved
    q = judge_ranking(["r1", "x", "r2", "n"], {"r1": 2, "r2": 1, "r3": 1, "n": 0})
    assert precision_at(q, 2) == 0.5
    assert precision_at(q, 10) == 0.2  # padded with non-relevant documents
    assert recall_at(q, 3) == 2 / 3
    assert reciprocal_rank(q) == 1.0
    assert average_precision(q) == (1 / 1 + 2 / 3) / 3
    ideal = 2 + 1 / math.log2(3) + 1 / math.log2(4)
    assert ndcg_at(q, 10) == (2 + 1 / math.log2(4)) / ideal
    exp = judge_ranking(["r1", "x", "r2", "n"], {"r1": 2, "r2": 1, "r3": 1, "n": 0},
                        gain="exponential")
    assert ndcg_at(exp, 10) == (3 + 1 / math.log2(4)) / (3 + 1 / math.log2(3) + 1 / 2)


def test_duplicates_are_refused_like_trec_eval_or_counted_once_at_their_best_rank() -> None:
    rows = [{"query_id": "q", "retrieved_ids": ["a", "b", "a"], "scores": [1.0, 2.0, 3.0],
             "relevant_ids": ["a"]}]
    with pytest.raises(InputError, match=r'index 0 of <list of dicts>: field "retrieved_ids": '
                                         r"document 'a' is retrieved twice for query 'q'"):
        ragmeter.retrieval.score(rows)
    (item,) = ragmeter.retrieval.score(rows, duplicates="first").items
    assert item["mrr"] == 1.0 and item["retrieved"] == 2  # a at 3.0 ranks first
    (given,) = ragmeter.retrieval.score(rows, duplicates="first", order="given").items
    assert given["mrr"] == 1.0  # given order: a's first place


# ------------------------------------------------------------------ against pytrec_eval

DOC_IDS = ["a", "b", "B", "c", "d1", "d10", "d2", "z", "é", "\U0001F600", "x-1", "X_2"]
SCORES = [-1.0, 0.0, 0.5, 1.0, 1.5, 2.0, 3.25]  # few values: many ties
CUTS = [(1,), (1, 3, 5, 10), (2, 7), (4, 100), (3, 1000)]


@st.composite
def collections(draw: Any) -> tuple[dict[str, list[tuple[str, float]]],
                                    dict[str, dict[str, int]]]:
    """A run (with repeated documents, empty queries) and graded judgments (with negative and
    zero grades, queries without relevant documents), over partly shared query ids."""
    qids = [f"q{i}" for i in range(draw(st.integers(1, 7)))]
    run: dict[str, list[tuple[str, float]]] = {}
    qrels: dict[str, dict[str, int]] = {}
    for qid in qids:
        side = draw(st.sampled_from(["both", "both", "both", "run", "qrels"]))
        if side in ("both", "run"):
            run[qid] = draw(st.lists(st.tuples(st.sampled_from(DOC_IDS),
                                               st.sampled_from(SCORES)), max_size=12))
        if side in ("both", "qrels"):
            qrels[qid] = draw(st.dictionaries(st.sampled_from(DOC_IDS), st.integers(-1, 3),
                                              min_size=1, max_size=8))
    if not any(q in qrels and run[q] for q in run):  # at least one query trec_eval evaluates
        run["qz"] = [("a", 1.0)]
        qrels["qz"] = {"a": 1}
    return run, qrels


def _best(docs: list[tuple[str, float]]) -> dict[str, float]:
    """A run's documents with a repeated one at its highest score (duplicates='first')."""
    out: dict[str, float] = {}
    for d, s in docs:
        out[d] = max(s, out.get(d, s))
    return out


def _check(run: dict[str, list[tuple[str, float]]], qrels: dict[str, dict[str, int]],
           k: tuple[int, ...], level: int, all_queries: bool) -> None:
    pytrec_eval = _pytrec()
    rows = [{"query_id": q, "retrieved_ids": [d for d, _ in docs],
             "scores": [s for _, s in docs]} for q, docs in run.items()]
    result = ragmeter.retrieval.score(rows, qrels=qrels, k=k, duplicates="first",
                                      relevance_level=level, all_queries=all_queries)
    # a TREC run file cannot hold a query without documents: give trec_eval the others
    trec_run = {q: _best(docs) for q, docs in run.items() if docs}
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, measures(k), relevance_level=level)
    expected = evaluator.evaluate(trec_run)
    items = {it["query_id"]: it for it in result.items}
    scored = {q for q, it in items.items() if it["status"] == "ok"}
    if all_queries:
        assert scored == set(qrels)
    else:
        assert scored == set(expected)
    for qid, values in expected.items():
        for metric in (m for m in items[qid] if m in ragmeter.retrieval._metrics.METRICS):
            assert items[qid][metric] == values[trec_name(metric)], (qid, metric)
    for qid in scored - set(expected):  # trec_eval -c: a judged query without results is 0
        assert all(items[qid][m] == 0.0 for m in result.summary["metrics"])
    denominator = len(qrels) if all_queries else len(expected)
    for metric, mean in result.summary["metrics"].items():
        total = math.fsum(v[trec_name(metric)] for v in expected.values())
        assert mean == pytest.approx(total / denominator, rel=1e-12, abs=1e-15), metric


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(collections(), st.sampled_from(CUTS), st.sampled_from([1, 1, 2]), st.booleans())
def test_every_query_equals_trec_eval(collection: Any, k: tuple[int, ...], level: int,
                                      all_queries: bool) -> None:
    run, qrels = collection
    _check(run, qrels, k, level, all_queries)


@pytest.mark.parametrize("seed", range(3))
def test_a_trec_run_file_equals_trec_eval(seed: int, tmp_path: Path) -> None:
    """Seeded runs written as TREC files (the reader's path), 40 queries of up to 60 docs."""
    import random

    pytrec_eval = _pytrec()
    rnd = random.Random(seed)
    ids = [f"D{n}" for n in range(80)]
    run = {f"{q:03d}": {d: float(rnd.choice(range(12)))
                        for d in rnd.sample(ids, rnd.randint(1, 60))} for q in range(40)}
    qrels = {f"{q:03d}": {d: rnd.choice([0, 0, 1, 1, 2, 3]) for d in rnd.sample(ids, 15)}
             for q in range(5, 45)}
    run_file = tmp_path / "run.trec"
    run_file.write_text("".join(f"{q} Q0 {d} {r} {s} tag\n" for q, docs in run.items()
                                for r, (d, s) in enumerate(docs.items(), 1)), encoding="utf-8")
    qrels_file = tmp_path / "qrels.txt"
    qrels_file.write_text("".join(f"{q} 0 {d} {g}\n" for q, judged in qrels.items()
                                  for d, g in judged.items()), encoding="utf-8")
    k = (1, 5, 10, 20, 100)
    result = ragmeter.retrieval.score(run_file, qrels=qrels_file, k=k)
    expected = pytrec_eval.RelevanceEvaluator(qrels, measures(k)).evaluate(run)
    items = {it["query_id"]: it for it in result.items if it["status"] == "ok"}
    assert set(items) == set(expected) and len(items) == 35
    for qid, values in expected.items():
        for name, value in values.items():
            metric = next(m for m in result.summary["metrics"] if trec_name(m) == name)
            assert items[qid][metric] == value, (qid, name)
