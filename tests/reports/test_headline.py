"""The report leads with results (issue 25.6): the headline table every section opens with
(reports/html_headline.py), its legend and flags, the main metric of the first table, data
names, the order of a run's article, and a comparison of runs without a common item."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ragmeter.reports.html import render_report
from ragmeter.reports.html_headline import (
    data_label,
    headline_table,
    legend,
    main_rows,
    metrics_of,
    rows_of,
)
from ragmeter.runs._records import record_run
from ragmeter.stats import Headline
from tests.reports import cases


def _rows(*specs: tuple[str, str, float, int]) -> list[Headline]:
    return [Headline(metric=m, group=g, value=v, ci=(v - 0.1, v + 0.1), n=n)
            for g, m, v, n in specs]


def test_a_filled_grid_is_groups_by_metrics() -> None:
    rows = _rows(("a", "relevance", 0.5, 10), ("a", "adherence", 0.9, 10),
                 ("b", "relevance", 0.4, 8), ("b", "adherence", 0.8, 8))
    html = str(headline_table(rows, metrics_of("trace")))
    heads = re.findall(r'<th class="num"><span class="metric" title="([^"]+)">([^<]+)</span>',
                       html)
    metrics = metrics_of("trace")
    assert metrics is not None
    assert [label for _, label in heads] == ["relevance", "adherence (share adherent)"]
    assert heads[0][0] == metrics.get("relevance").glossary_line()  # the tooltip
    assert re.findall(r"<tr><th>(\w)</th>", html) == ["a", "b"]  # one row per group
    assert html.count("n=10") == 2 and "[0.400, 0.600]" in html


def test_a_sparse_or_single_group_headline_is_one_row_per_number() -> None:
    rgb = metrics_of("rgb")
    rows = _rows(("en@0.0", "accuracy", 0.9, 10), ("en@1.0", "reject_rate", 0.2, 10),
                 ("en_int@0.0", "integration_accuracy", 0.5, 5))
    html = str(headline_table(rows, rgb))
    assert "<th>group</th><th>metric</th>" in html and html.count("<tr>") == 4  # head + 3
    # two metrics labelled Acc: the name beside the label tells them apart
    assert "Acc (accuracy)" in html and "Acc (integration_accuracy)" in html
    single = str(headline_table(_rows(("all", "relevance", 0.5, 10)), metrics_of("trace")))
    assert "<th>group</th>" not in single and "0.5000" in single


def test_a_flagged_number_is_marked_and_explained_not_mixed_in() -> None:
    rows = [Headline("reject_rate", "en@1.0", 0.2, (0.0, 0.5), 5),
            Headline("reject_rate_judged", "en@1.0", 0.0, (0.0, 0.4), 5,
                     flag="degenerate judge: treat as unmeasured")]
    html = str(headline_table(rows, metrics_of("rgb")))
    assert html.count("⚑ flagged") == 2  # in its cell, and as the heading of the reasons
    assert 'class=flagged-row' in html
    assert "Rej*" in html and "(en@1.0): degenerate judge: treat as unmeasured" in html


def test_a_number_over_no_item_is_a_dash() -> None:
    html = str(headline_table([Headline("cr", "x@0.0", 0.0, None, 0)], metrics_of("rgb")))
    assert "0.000" not in html and "—" in html


def test_everything_in_the_headline_is_escaped() -> None:
    evil = cases.XSS_IMG
    html = str(headline_table([Headline(evil, evil, 0.5, None, 3, flag=evil)], None)
               + legend([Headline(evil, "all", 0.5)], None))
    assert "<img" not in html and "&lt;img src=x" in html


def test_the_legend_defines_every_metric_shown_and_folds_when_long() -> None:
    rgb = metrics_of("rgb")
    assert rgb is not None
    names = ["accuracy", "reject_rate", "reject_rate_judged", "ed", "ed_judged", "cr",
             "cr_judged"]
    html = str(legend([Headline(n, "all", 0.5) for n in names], rgb))
    assert html.startswith('<details class="legend">') and "What these 7 metrics mean" in html
    for n in names:
        assert rgb.get(n).description.replace("'", "&#x27;") in html
    short = str(legend([Headline("accuracy", "all", 0.5)], rgb))
    assert short.startswith('<ul class="legend">') and "higher is better" in short


@pytest.mark.parametrize(("family", "metrics", "expected"), [
    ("trace", ["relevance", "adherence"], "adherence"),  # the family's main metric
    ("trace", ["hallucination_auroc", "relevance_rmse"], "hallucination_auroc"),  # validate
    ("retrieval", ["ndcg@5", "ndcg@20", "mrr"], "ndcg@20"),  # main ndcg@10 absent: largest k
    ("retrieval", ["ndcg@10", "ndcg@20"], "ndcg@10"),
    ("future", ["x", "y"], "x"),  # a family ragmeter does not know: its first metric
])
def test_main_rows(family: str, metrics: list[str], expected: str) -> None:
    rows = [Headline(m, g, 0.5) for g in ("a", "b") for m in metrics]
    assert {h.metric for h in main_rows(family, rows)} == {expected}
    assert [h.group for h in main_rows(family, rows)] == ["a", "b"]


@pytest.mark.parametrize(("path", "label"), [
    ("/d/ragbench/hotpotqa/test-00000-of-00001.parquet", "hotpotqa/test"),
    ("ragbench/emanual/validation-00000-of-00001.parquet", "emanual/validation"),
    ("x/train-00001-of-00004.parquet", "x/train 2/4"),
    ("test-00000-of-00001.parquet", "test"),
    ("/tmp/answers.jsonl", "answers.jsonl"),
])
def test_data_label(path: str, label: str) -> None:
    assert data_label(path) == label


def test_rows_of_reads_old_records_through_the_family() -> None:
    stored = rows_of("trace", {**cases.TRACE_SCORE, "headline": [
        {"metric": "adherence", "group": "all", "value": 0.5}]})
    assert [(h.metric, h.value) for h in stored] == [("adherence", 0.5)]  # the stored rows
    built = rows_of("trace", cases.TRACE_SCORE)  # none stored: the family's headline()
    assert [h.metric for h in built] == ["relevance", "utilization", "completeness",
                                         "adherence"]
    assert rows_of("rubric", {"groups": "not a list"}) == []  # a shape it cannot read


def test_a_run_leads_with_results_and_ends_with_provenance(tmp_path: Path) -> None:
    rec = cases.reliability_record(tmp_path)
    page = render_report([rec])
    order = [page.index(x) for x in (
        "Results at a glance", "<h4>Results</h4>", "Headline (95% CI", "Annotators against QC",
        "<h4>Coverage</h4>", "<h4>Provenance</h4>", "item list (", "Runs and signatures",
        "Signatures of every number")]
    assert order == sorted(order)
    assert '<details class="drill-wrap">' in page  # folded although items went unscored
    glance = page[page.index("Results at a glance"):page.index("</table>")]
    flagged = sum(1 for h in rows_of("reliability", rec.result) if h.flag)  # too few items
    assert flagged and f"⚑ {flagged} flagged" in glance
    assert "reliability" in glance and "n=" in glance


def test_provenance_shows_the_recorded_backend(tmp_path: Path) -> None:
    rec = record_run("rgb", cases.RGB_RUN, cases.RGB_ITEMS, command=[],
                     backends=[{"backend": "local", "model": "SmolLM2-135M-Instruct.Q4_1",
                                "size": 98362432, "runtime": "numpy"}],
                     runs_dir_override=tmp_path)
    page = render_report([rec])
    assert "local: SmolLM2-135M-Instruct.Q4_1 (93.8 MiB, runtime numpy)" in page
    assert '{&quot;backend&quot;' not in page  # no raw JSON dict of the model anywhere


def _ml(tmp_path: Path, ids: list[str]) -> object:
    items = [{"sample_id": i, "system": "s", "status": "ok", "f1": 0.5, "em": 0.0} for i in ids]
    doc = {"signature": "family:multilingual|x", "baseline": None,
           "metrics": {"s": {"em": 0.0, "f1": 0.5, "n": len(ids)}},
           "coverage": {"rows": len(ids), "scored": len(ids), "unscored": 0, "reasons": {}}}
    return record_run("multilingual", doc, items, command=[], runs_dir_override=tmp_path)


def test_a_comparison_without_common_items_says_so(tmp_path: Path) -> None:
    from ragmeter.reports.compare import compare_runs

    a, b = _ml(tmp_path, ["q1", "q2", "q3"]), _ml(tmp_path, ["r1", "r2"])
    comp = compare_runs([a, b])
    assert comp.rows == [] and comp.no_common_items
    assert "no item in common (items scored per run: 3, 2" in comp.notes[0]
    page = render_report([a, b])
    assert "no item in common" in page and "Per-item paired comparison" not in page
    assert "Headline numbers side by side" in page
    shared = compare_runs([a, _ml(tmp_path, ["q1", "x"])])
    assert not shared.no_common_items and all(t is not None and t.n == 1
                                             for r in shared.rows for t in r.tests)
