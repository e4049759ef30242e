"""The retrieval METRICS table and the cutoff metrics it brought to every MetricTable
(``ndcg@k`` rows, ``ndcg@10`` values), and the headline of a score."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import ragmeter
from ragmeter.io._samples import sample_path
from ragmeter.retrieval._metrics import METRICS
from ragmeter.stats import ALL_GROUP, Metric, MetricTable


def _table() -> MetricTable:
    return MetricTable("fam", "1", [Metric("ndcg@k", "nDCG@k", "d", "s"),
                                    Metric("mrr", "MRR", "d", "s")])


def test_a_cutoff_row_is_found_from_a_value_name() -> None:
    table = _table()
    m = table.get("ndcg@10")
    assert (m.name, m.label, m.description) == ("ndcg@10", "nDCG@10", "d")
    assert "ndcg@10" in table and "ndcg@k" in table and "mrr" in table
    for wrong in ("ndcg@0", "ndcg@", "ndcg@x", "ndcg@²", "mrr@3", "ndcg"):
        assert wrong not in table
    with pytest.raises(KeyError, match="no metric 'mrr@3'"):
        table.get("mrr@3")


def test_headline_gives_a_row_per_cutoff_in_increasing_order() -> None:
    rows = _table().headline({"all": {"mrr": 0.5, "ndcg@10": 0.3, "ndcg@2": 0.2, "x@3": 1.0}},
                             ci={"all": {"ndcg@2": [0.1, 0.3]}}, n={"all": {"ndcg@10": 7}})
    assert [(h.metric, h.value) for h in rows] == [("ndcg@2", 0.2), ("ndcg@10", 0.3),
                                                   ("mrr", 0.5)]
    assert rows[0].ci == (0.1, 0.3) and rows[1].n == 7
    assert [h.metric for h in _table().headline({"g": {"ndcg@5": 1.0, "mrr": 1.0}},
                                                only=["ndcg@k"])] == ["ndcg@5"]


def test_every_metric_has_a_definition_and_a_source() -> None:
    assert METRICS.names == ("precision@k", "recall@k", "ndcg@k", "hit_rate@k", "mrr", "map",
                             "answer_in_context@k")
    for m in METRICS:
        assert m.fn is not None and m.description and m.source and m.higher_is_better
    assert "ndcg@k.discount=log2(rank+1)" in METRICS.signature_settings()


def test_the_headline_reaches_every_metric_by_name() -> None:
    from ragmeter.testing import check_metric

    result = ragmeter.retrieval.score(sample_path("retrieval_run.jsonl"),
                                      qrels=sample_path("retrieval_qrels.txt"), ci=True,
                                      by="topic")
    rows = {(h.group, h.metric): h for h in result.headline}
    doc = result.summary
    for name, value in doc["metrics"].items():
        h = rows[(ALL_GROUP, name)]
        assert (h.value, h.n, list(h.ci or ())) == (value, 12, doc["ci95"][name])
        assert h.coverage == 1.0
    assert rows[("brakes", "mrr")].value == doc["groups"]["values"]["brakes"]["metrics"]["mrr"]
    assert rows[("brakes", "mrr")].n == 2
    (check,) = check_metric(result, "ndcg@10", min=0.5)
    assert check.ok and check.value == doc["metrics"]["ndcg@10"]
    (check,) = check_metric(result, "mrr", group="workshop", min=0.5)
    assert not check.ok


def test_the_gate_takes_cutoff_metric_names(run_cli: Any, tmp_path: Path) -> None:
    out = tmp_path / "s.json"
    code, _, err = run_cli("retrieval", "score", sample_path("retrieval_run.jsonl"), "--qrels",
                           sample_path("retrieval_qrels.txt"), "--json", out, "--no-record")
    assert code == 0, err
    code, stdout, _ = run_cli("gate", out, "--require", "ndcg@10>=0.6", "--require",
                              "precision@1<=0.4")
    assert code == 1
    assert "ok   ndcg@10 holds: value 0.6963" in stdout  # the sample's nDCG@10 (docs/retrieval.md)
    assert "FAIL precision@1 FAILS: value 0.5000" in stdout
