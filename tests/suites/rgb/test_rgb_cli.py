"""``ragmeter rgb build`` / ``rgb score`` through the CLI, and bad input (exit 2, one line)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragmeter.io._samples import sample_path
from tests.conftest import shared


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def test_build_then_score_on_rgb_data(run_cli, tmp_path: Path):
    data = shared("rgb", "en_fact.json")
    out = tmp_path / "built.jsonl"
    code, _, err = run_cli("rgb", "build", "--data", data, "--noise-rate", "0.2",
                           "--correct-rate", "0.2",
                           "--prompts", shared("rgb", "config", "instruction.yaml"), "--out", out)
    assert code == 0, err
    rows = _jsonl(out)
    assert len(rows) == 100
    assert set(rows[0]) >= {"id", "query", "answer", "docs", "messages"}
    # predictions: the answer for even ids with the factual-error marker, nothing for id 99
    preds = tmp_path / "preds.jsonl"
    with preds.open("w", encoding="utf-8") as fh:
        for r in rows[:99]:
            text = (f"There are factual errors in the provided documents. {r['answer']}"
                    if r["id"] % 2 == 0 else "No idea.")
            fh.write(json.dumps({"id": r["id"], "prediction": text}) + "\n")
    res, items = tmp_path / "res.json", tmp_path / "items.jsonl"
    code, out_text, err = run_cli("rgb", "score", preds, "--data", data, "--noise-rate", "0.2",
                                  "--correct-rate", "0.2", "--json", res, "--items", items)
    assert code == 0, err
    doc = json.loads(res.read_text(encoding="utf-8"))
    # 50 even ids among 0..98 answered with the answer string -> 50/99
    assert doc["n"] == 99 and doc["tt"] == 50
    assert doc["accuracy"] == pytest.approx(50 / 99)
    assert doc["fact_check_rate"] == pytest.approx(50 / 99)
    assert doc["correct_rate"] == 1.0
    assert doc["coverage"] == {"total": 100, "scored": 99, "unscored": 1,
                               "reasons": {"missing_prediction": 1}}
    assert doc["signature"].startswith("family:rgb|metrics:rgb-evalue@65ec39e|")
    it = _jsonl(items)
    assert len(it) == 100 and it[0]["labels"] == [1] and it[0]["factlabel"] == 1
    assert it[-1]["status"] == "unscored"
    assert "coverage: 99/100" in out_text


def test_score_lenient_reports_flips(run_cli, tmp_path: Path):
    preds = tmp_path / "p.jsonl"
    preds.write_text("\n".join(json.dumps(r) for r in [
        {"id": 0, "prediction": "canberra"},
        {"id": 1, "prediction": "Austen"},          # strict 0, lenient 1 (1/2 tokens)
        {"id": 2, "prediction": "I don't know."},   # strict 0, lenient -1 (not noise 1)
        {"id": 3, "prediction": None},
    ]) + "\n", encoding="utf-8")
    res = tmp_path / "r.json"
    code, out, err = run_cli("rgb", "score", preds, "--data", sample_path("rgb_en.jsonl"),
                             "--noise-rate", "0", "--mode", "lenient", "--json", res)
    assert code == 0, err
    doc = json.loads(res.read_text(encoding="utf-8"))
    assert doc["accuracy"] == pytest.approx(1 / 3)
    assert doc["lenient"]["accuracy"] == pytest.approx(2 / 3)
    assert doc["lenient"]["flips"] == {"wrong_to_right": 1, "right_to_wrong": 0}
    assert doc["lenient"]["comparable_with_paper"] is False
    assert doc["coverage"]["reasons"] == {"missing_prediction": 1, "null_prediction": 1}
    assert "NOT paper" in out


@pytest.mark.parametrize(("content", "message"), [
    ('{"id": 0}\n', 'field "prediction": is missing'),
    ('{"id": 0, "prediction": "a"}\n{"id": 0, "prediction": "b"}\n', "duplicate prediction"),
    ('{"id": 0, "prediction": ["a"]}\n', "expected text"),
    ("not json\n", "is not valid JSON"),
])
def test_bad_predictions_exit_2(run_cli, tmp_path: Path, content: str, message: str):
    preds = tmp_path / "preds.jsonl"
    preds.write_text(content, encoding="utf-8")
    code, _, err = run_cli("rgb", "score", preds, "--data", sample_path("rgb_en.jsonl"),
                           "--noise-rate", "0")
    assert code == 2
    assert message in err and "Traceback" not in err
    assert err.startswith("error: rgb: ")


@pytest.mark.parametrize(("row", "message"), [
    ({"id": 0, "query": "q", "answer": [], "positive": [], "negative": []}, 'field "answer"'),
    ({"id": 0, "query": "q", "answer": "a", "positive": "x", "negative": []}, 'field "positive"'),
    ({"id": 0, "answer": "a", "positive": [], "negative": []}, 'field "query"'),
])
def test_bad_data_exit_2(run_cli, tmp_path: Path, row: dict, message: str):
    data = tmp_path / "en.json"
    data.write_text(json.dumps(row) + "\n", encoding="utf-8")
    code, _, err = run_cli("rgb", "build", "--data", data, "--noise-rate", "0", "--out",
                           tmp_path / "o.jsonl")
    assert code == 2 and message in err and "row 1 of" in err


def test_fact_data_without_positive_wrong_and_bad_prompts(run_cli, tmp_path: Path):
    data = tmp_path / "x_fact.json"
    data.write_text(json.dumps({"id": 0, "query": "q", "answer": "a", "positive": ["p"],
                                "negative": []}) + "\n", encoding="utf-8")
    code, _, err = run_cli("rgb", "build", "--data", data, "--noise-rate", "0", "--out",
                           tmp_path / "o.jsonl")
    assert code == 2 and 'field "positive_wrong"' in err
    prompts = tmp_path / "p.yaml"
    prompts.write_text("en:\n  system: s\n  instruction: '{DOCS} {QUERY} {OOPS}'\n",
                       encoding="utf-8")
    code, _, err = run_cli("rgb", "build", "--data", sample_path("rgb_en.jsonl"),
                           "--noise-rate", "0", "--prompts", prompts, "--out", tmp_path / "o")
    assert code == 2 and "en.instruction" in err
