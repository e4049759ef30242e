"""Retrieval runs in the run records, the HTML report (the family's section, a comparison of
two runs paired on queries) and the web app's run list."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

import ragmeter
from ragmeter.io._samples import sample_path
from ragmeter.retrieval._report import paired_units, section

RUN = sample_path("retrieval_run.jsonl")
DENSE = sample_path("retrieval_run_dense.trec")
QRELS = sample_path("retrieval_qrels.txt")


@pytest.fixture(scope="module")
def records(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Any]]:
    runs = tmp_path_factory.mktemp("runs")
    made = [ragmeter.retrieval.score(RUN, qrels=QRELS, ci=True).save(str(runs)),
            ragmeter.retrieval.score(DENSE, qrels=QRELS, ci=True).save(str(runs)),
            ragmeter.retrieval.compare(RUN, DENSE, qrels=QRELS).save(str(runs))]
    return runs, made


def test_a_retrieval_run_renders_in_the_report(records: Any, run_cli: Any,
                                               tmp_path: Path) -> None:
    runs, made = records
    out = tmp_path / "report.html"
    code, _, err = run_cli("report", made[0].run_id, "--runs-dir", runs, "--out", out)
    assert code == 0, err
    page = out.read_text(encoding="utf-8")
    for text in ("Mean over 12 scored queries (95% bootstrap CI under a value)", "nDCG",
                 "Recall", "MRR", "MAP", "trec_eval", "exact", "P@k: relevant documents in "
                 "the top k", "source: trec_eval 9.0", "family:retrieval", "q01"):
        assert text in page, text
    ndcg10 = made[0].result["metrics"]["ndcg@10"]
    assert f"{ndcg10:.4f}" in page
    assert "<script" not in page.lower() and "could not read this result" not in page


def test_two_runs_pair_on_queries_in_the_report(records: Any, run_cli: Any,
                                                tmp_path: Path) -> None:
    runs, made = records
    out = tmp_path / "compare.html"
    code, _, err = run_cli("report", made[0].run_id, made[1].run_id, "--runs-dir", runs,
                           "--out", out)
    assert code == 0, err
    text = " ".join(re.sub(r"<[^>]+>", " ", out.read_text(encoding="utf-8")).split())
    a, b = (m.result["metrics"]["ndcg@10"] for m in made[:2])
    # the generic paired comparison (reports/compare.py) pairs the 12 queries of the two runs
    assert re.search(rf"all ndcg@10 {a:.4f} {b:.4f} \+{b - a:.4f} .{{0,12}}\d\.\d{{4}} 12 ",
                     text), text[:2000]
    units = paired_units(made[0].items)
    assert set(units[("all", "ndcg@10")]) == {f"q{i:02d}" for i in range(1, 13)}


def test_the_compare_verb_renders_differences_and_p_values(records: Any) -> None:
    _, made = records
    doc = made[2].result
    html = str(section(doc))
    assert "dense − retrieval_run [95% CI]" in html and "12 paired queries" in html
    assert "paired randomization (sign flip), two-sided, 10000 resamples" in html
    c = doc["comparison"]["ndcg@10"]
    single = {r["label"]: r["metrics"]["ndcg@10"] for r in doc["runs"]}
    assert (c["a"], c["b"]) == (single["retrieval_run"], single["dense"])
    assert c["difference"] == pytest.approx(c["b"] - c["a"], abs=1e-15)
    assert c["ci95"][0] <= c["difference"] <= c["ci95"][1] and 0 < c["p_value"] <= 1
    head = {(r["group"], r["metric"]): r for r in doc["headline"]}
    assert head[("difference", "ndcg@10")]["value"] == c["difference"]
    assert head[("difference", "ndcg@10")]["n"] == 12
    assert head[("dense", "mrr")]["value"] == doc["comparison"]["mrr"]["b"]


def test_the_run_list_shows_retrieval_headlines(records: Any) -> None:
    from ragmeter.view.listing import headlines

    _, made = records
    (score,) = headlines(made[0])  # the family's main metric, nDCG@10, with CI and n
    assert score.label == "nDCG@10"
    assert score.value == made[0].result["metrics"]["ndcg@10"]
    assert score.ci is not None and score.n == made[0].result["coverage"]["scored"]
    compare = [h.label for h in headlines(made[2])]
    assert compare[-1] == "difference nDCG@10"


def test_a_section_never_shows_unescaped_data() -> None:
    result = ragmeter.retrieval.score(
        [{"query_id": "<b>q</b>", "retrieved_ids": ["<i>"], "relevant_ids": ["<i>"]}])
    doc = dict(result.summary, run="<script>alert(1)</script>")
    html = str(section(doc))
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert re.search(r"MRR", html)
