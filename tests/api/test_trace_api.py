"""``ragmeter.trace`` (issue 13): the API on a list of dicts and on a DataFrame gives the same
summary as the CLI on the same file (40 rows of the shared RAGBench emanual split)."""

from __future__ import annotations

import json

import pytest

import ragmeter
from tests.conftest import shared

VOLATILE = {"source", "seconds", "rows_per_s"}


def _strip(obj):
    """The summary without what names the input or measures time."""
    if isinstance(obj, dict):
        return {k: _strip(v) for k, v in obj.items() if k not in VOLATILE}
    if isinstance(obj, list):
        return [_strip(v) for v in obj]
    return obj


@pytest.fixture(scope="module")
def emanual(tmp_path_factory):
    import pyarrow.parquet as pq

    path = shared("ragbench", "emanual", "test-00000-of-00001.parquet")
    cols = ["id", "question", "documents", "response", "documents_sentences",
            "response_sentences", "all_relevant_sentence_keys", "all_utilized_sentence_keys",
            "unsupported_response_sentence_keys", "gpt3_adherence", "gpt3_context_relevance",
            "gpt35_utilization", "ragas_faithfulness", "trulens_groundedness"]
    rows = pq.read_table(path, columns=cols).to_pylist()[:40]
    file = tmp_path_factory.mktemp("trace-api") / "emanual40.jsonl"
    file.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return file, rows


def _no_row(items):
    return [{k: v for k, v in i.items() if k != "row"} for i in items]


def _inputs(rows):
    pd = pytest.importorskip("pandas")
    return [("list", rows), ("DataFrame", pd.DataFrame(rows))]


def test_score_api_equals_cli(emanual, run_cli, tmp_path):
    file, rows = emanual
    out = tmp_path / "m.json"
    code, _, err = run_cli("trace", "score", file, "--json", out, "--no-record")
    assert code == 0, err
    cli = json.loads(out.read_text())
    for kind, data in _inputs(rows):
        result = ragmeter.trace.score(data)
        assert _strip(result.summary) == _strip(cli), kind
        assert result.coverage["rows"] == 40
        assert len(result.to_pandas()) == 40


def test_validate_api_equals_cli(emanual, run_cli, tmp_path):
    file, rows = emanual
    out = tmp_path / "v.json"
    code, _, err = run_cli("trace", "validate", file, "--pred-column", "adherence=gpt3_adherence",
                           "--json", out, "--no-record", "--resamples", "200")
    assert code == 0, err
    cli = json.loads(out.read_text())
    for kind, data in _inputs(rows):
        result = ragmeter.trace.validate(data, pred_columns={"adherence": "gpt3_adherence"},
                                         resamples=200)
        assert _strip(result.summary) == _strip(cli), kind
        assert "gpt-3.5 (released)" in result.summary["judges"]


def test_run_and_label_api_equal_cli(emanual, run_cli, tmp_path):
    file, rows = emanual
    labels, out = tmp_path / "labels.jsonl", tmp_path / "run.json"
    code, _, err = run_cli("trace", "run", file, "--out", labels, "--json", out, "--no-record")
    assert code == 0, err
    cli = json.loads(out.read_text())
    cli_labels = [json.loads(x) for x in labels.read_text().splitlines()]
    assert cli["label"]["strategy"] == "detector"
    assert cli["judges"]["ragmeter:trace-detector-v4 (detector)"]["hallucination_auroc"]["n"] \
        == 40
    for kind, data in _inputs(rows):
        result = ragmeter.trace.run(data)
        assert _strip(result.summary) == _strip(cli), kind
        # in-memory rows are numbered by their 0-based index, file rows from 1
        assert [r["row"] for r in result.items] == list(range(40))
        assert _no_row(result.items) == _no_row(cli_labels)
        assert result.judges[0]["validated"] is True
        labelled = ragmeter.trace.label(data)
        assert _no_row(labelled.items) == _no_row(cli_labels)
        # the labels score like a RAGBench split
        assert ragmeter.trace.score(labelled.items).coverage["scored"] == 40


def test_fit_api_on_rows_is_deterministic_and_writes_the_file(emanual, tmp_path):
    _, rows = emanual
    splits = {"first": rows[:20], "second": rows[20:]}
    out = tmp_path / "d.json"
    result = ragmeter.trace.fit(splits, out=out, name="mine")
    again = ragmeter.trace.fit(splits, name="mine")
    from ragmeter.trace._detector import detector_json, load_detector

    content = {k: v for k, v in again.summary.items()
               if k not in ("coverage", "signature", "headline")}
    assert out.read_text(encoding="utf-8") == detector_json(content)
    assert [i["split"] for i in result.items] == ["first", "second"]
    assert load_detector(out).name == "mine"
    labelled = ragmeter.trace.label(rows[:5], detector=str(out))
    assert {r["judge"] for r in labelled.items} == {"ragmeter:mine"}


def test_dry_run_makes_no_call(emanual):
    _, rows = emanual
    result = ragmeter.trace.label(rows, dry_run=True)
    assert result.summary["dry_run"] is True and result.items == []
