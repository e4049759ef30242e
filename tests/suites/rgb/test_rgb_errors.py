"""The error detector (ED* offline, issue 27.3) on single cases and on the hand-labelled
answers of ERROR_LABELS.md: agreement with its CI, and the detector as ED*'s offline judge."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragmeter.rgb._errors import detect_error
from ragmeter.rgb._refusal import agreement

HERE = Path(__file__).parent


def _rows(name: str) -> list[dict]:
    return [json.loads(x) for x in (HERE / name).read_text(encoding="utf-8").splitlines() if x]


@pytest.mark.parametrize(("answer", "detects"), [
    # the instruction's own sentence and fact_evalue.py's demonstrations
    ("There are factual errors in the provided documents. The correct answer is 2023.", 1),
    ("文档信息有误，2008年的奥运会在北京举办。", 1),
    ("2014年澳网女单冠军是大阪直美。", 0),
    ("The director of the Silent Hill movie is Justin Kurzel.", 0),
    # error word and document word in either order, adverbs, "contrary to"
    ("The passages give an outdated figure; it is 8 billion.", 1),
    ("There is a mistake in the second document.", 1),
    ("The article wrongly attributes the novel to Dickens.", 1),
    ("Contrary to the documents, the capital is Canberra.", 1),
    ("提供的文档存在事实性错误。正确答案是阿根廷。", 1),
    ("文中的年份不正确，应为1969年。", 1),
    # denials, refusals, plain corrections and "however" are not detections
    ("There are no factual errors in the documents.", 0),
    ("The documents do not contain any errors; the answer is Paris.", 0),
    ("文档没有错误，答案是北京。", 0),
    ("I cannot answer the question because of insufficient information in documents.", 0),
    ("The capital is Canberra. However, Sydney is larger.", 0),
    ("Actually, the film was released in 2019.", 0),
])
def test_single_cases(answer: str, detects: int) -> None:
    assert int(detect_error(answer).detects) == detects


def test_agreement_with_development_labels() -> None:
    """In-sample (the patterns were written against this set): all 48 agree."""
    rows = _rows("error_labels.jsonl")
    assert len(rows) == 48 and sum(r["detects"] for r in rows) == 24
    a = agreement([bool(r["detects"]) for r in rows],
                  [detect_error(r["answer"]).detects for r in rows])
    assert a["accuracy"] == 1.0 and a["kappa"] == 1.0


def test_held_out_agreement() -> None:
    """The held-out set (labelled before error-patterns-1 was run on it) reproduces the judge
    card's numbers: 84 of 91 agree, kappa 0.780 [0.604, 0.922] (bootstrap seed 12345)."""
    from ragmeter.rgb._errors import ERROR_DETECTOR_VALIDATION

    rows = _rows("error_labels_heldout.jsonl")
    assert len(rows) == 91 and sum(r["detects"] for r in rows) == 22
    a = agreement([bool(r["detects"]) for r in rows],
                  [detect_error(r["answer"]).detects for r in rows])
    assert round(a["accuracy"] * a["n"]) == 84
    assert ERROR_DETECTOR_VALIDATION is not None
    assert round(a["kappa"], 3) == ERROR_DETECTOR_VALIDATION["value"]
    assert [round(x, 3) for x in a["kappa_ci95"]] == ERROR_DETECTOR_VALIDATION["ci"]
    local = [r for r in rows if r["source"].startswith("SmolLM2")]
    assert len(local) == 47 and not any(detect_error(r["answer"]).detects for r in local)


def test_verdict_names_what_decided() -> None:
    v = detect_error("The documents contain no errors, but the second passage is wrong.")
    assert v.detects and v.matched is not None and "wrong" in v.matched
    denied = detect_error("No factual errors in the passages.")
    assert not denied.detects and denied.reason == "error pattern denied"


def test_cli_judge_ed_by_the_error_detector_without_model(run_cli, tmp_path: Path) -> None:
    """ED* and CR* of _fact predictions by the error detector: no backend is called (the
    endpoint is unreachable); 2 of 4 answers say the documents are wrong, 1 of them with the
    right answer (the sample's first item's answer is Mars), so CR* is 1 of 2."""
    from ragmeter.io._samples import sample_path

    preds = tmp_path / "p.jsonl"
    preds.write_text("".join(json.dumps(r) + "\n" for r in [
        {"id": 0, "prediction": "There are factual errors in the provided documents. Mars."},
        {"id": 1, "prediction": "The documents are wrong about the year."},
        {"id": 2, "prediction": "Venus."},
        {"id": 3, "prediction": "The documents contain no errors."}]), encoding="utf-8")
    out_json = tmp_path / "r.json"
    code, out, err = run_cli("rgb", "judge", str(preds), "--data",
                             str(sample_path("rgb_en_fact.jsonl")), "--judge-method",
                             "detector", "--backend", "openai", "--model", "m", "--base-url",
                             "http://127.0.0.1:9/v1", "--store", str(tmp_path / "s.sqlite"),
                             "--json", str(out_json), "--no-record")
    assert code == 0, err
    doc = json.loads(out_json.read_text(encoding="utf-8"))
    assert doc["metrics"]["ed_judged"] == 0.5 and doc["metrics"]["detected"] == 2
    assert doc["metrics"]["cr_judged"] == 0.5
    assert doc["judge"]["model"] == "error-patterns-1"
    assert doc["judges"][0]["judge"] == "ragmeter:error-patterns-1"
