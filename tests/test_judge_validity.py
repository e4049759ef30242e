"""The alarm checks validity too (issue 27.4): a judge whose known validation is at or below
chance (AUROC <= 0.55, kappa or rank correlation <= 0.2, or a 95% CI reaching chance) is
flagged like a degenerate one, in every door: console, ``--json``, the run record, the report,
the web app's run list and the headline row's flag."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import ragmeter
from ragmeter.judges import check_validity, judge_card, validation_statistic
from tests.servers.scripted_openai import last_user_text


@pytest.mark.parametrize(("validation", "fires"), [
    ({"metric": "hallucination AUROC", "value": 0.55}, True),        # at the limit
    ({"metric": "AUROC", "value": 0.70, "ci": [0.49, 0.85]}, True),   # CI reaches 0.5
    ({"metric": "AUROC", "value": 0.70, "ci": [0.56, 0.85]}, False),
    ({"metric": "quadratic kappa", "value": 0.038, "ci": [0.0, 0.11]}, True),
    ({"metric": "Cohen's κ", "value": 0.45, "ci": [0.01, 0.8]}, False),
    ({"metric": "Cohen's κ", "value": 0.45, "ci": [-0.02, 0.8]}, True),
    ({"metric": "Spearman", "value": 0.15}, True),
    ({"metric": "mean absolute error", "value": 3.0}, False),         # no chance level
    ({"metric": "score", "statistic": "auroc", "value": 0.3}, True),  # said explicitly
])
def test_validity_alarm(validation: dict, fires: bool) -> None:
    alarm = check_validity(judge_card("j", validation), what="x")
    assert (alarm is not None) is fires
    if alarm:
        assert alarm["kind"] == "judge_at_chance" and "at or below chance" in alarm["message"]


def test_an_unvalidated_judge_is_not_at_chance() -> None:
    assert check_validity(judge_card("never-measured:j"), what="x") is None
    assert validation_statistic({"metric": "hallucination AUROC (mean)"}) == "auroc"


def test_shipped_judges_known_to_be_at_chance_are_flagged() -> None:
    """validations.json: the small local model's rubric grades (κ 0.038) and its semantic
    score (measured on LBRAG's run) are at or below chance; the fitted semantic judge and the
    TRACe detector are not."""
    from ragmeter.judges import known_validations

    at_chance = {name for name, v in known_validations().items()
                 if check_validity(judge_card(name, v), what="x")}
    assert any(":choices:ragmeter-rubric-judge-1" in n for n in at_chance), at_chance
    assert any("semantic-choices" in n for n in at_chance), at_chance
    # the local model's TRACe labels (hallucination AUROC 0.385 on 30 hotpotqa rows) and its
    # RGB yes/no judge (Rej*: kappa 0.000 on 16 hand-labelled answers)
    assert "local:SmolLM2-135M-Instruct.Q4_1:choice:trace-prompts-1" in at_chance
    assert "local:SmolLM2-135M-Instruct.Q4_1:choice" in at_chance
    from ragmeter.rgb._refusal import DETECTOR_VALIDATION, DETECTOR_VERSION

    assert DETECTOR_VALIDATION is not None
    assert check_validity(judge_card(DETECTOR_VERSION, DETECTOR_VALIDATION), what="x") is None
    from ragmeter.multilingual._semantic_model import load_semantic_model

    fitted = load_semantic_model()
    assert check_validity(judge_card("f", fitted.validation()), what="x") is None


def _contrary(body: dict) -> str:
    """A judge that scores every right answer 0 and every wrong one 1."""
    text = last_user_text(body)
    right = "Answer to judge:\nParis" in text
    return json.dumps({"score": 0.0 if right else 1.0, "explanation": "contrary"})


def _rows() -> list[dict]:
    return [{"sample_id": str(i), "sample_lang": "fr", "system": "s", "question": f"q{i}",
             "gold_answer": "Paris", "pred_answer": "Paris" if i % 2 else f"Lyon {i}",
             "semantic_score": 1.0 if i % 2 else 0.0} for i in range(12)]


def test_a_judge_below_chance_is_flagged_in_every_door(scripted_server, run_cli,
                                                       tmp_path: Path) -> None:
    server = scripted_server(reply=_contrary)
    data = tmp_path / "answers.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in _rows()), encoding="utf-8")
    code, out, err = run_cli("multilingual", "judge", str(data), "--out",
                             str(tmp_path / "j.jsonl"), "--backend", "openai", "--base-url",
                             server.url, "--model", "contrary", "--scoring", "generate",
                             "--store", str(tmp_path / "s.sqlite"), "--json",
                             str(tmp_path / "j.json"), "--runs-dir", str(tmp_path / "runs"))
    assert code == 0, err
    # console: the agreement, and the alarm on stderr
    assert "AUROC (reference >= 0.5) 0.000" in out
    assert "WARNING:" in err and "at or below chance" in err
    # --json: the alarm and the flagged headline row
    doc = json.loads((tmp_path / "j.json").read_text(encoding="utf-8"))
    (alarm,) = doc["alarms"]
    assert alarm["kind"] == "judge_at_chance" and alarm["value"] == 0.0
    (score_row,) = [h for h in doc["headline"] if h["metric"] == "semantic_score"]
    assert score_row["flag"].startswith("judge at or below chance")
    # the agreement is a measurement of the judge: shown, not flagged
    (auroc_row,) = [h for h in doc["headline"] if h["metric"] == "semantic_auroc"]
    assert auroc_row["value"] == 0.0 and auroc_row["flag"] is None
    # the run record, the report and the web app's run list
    from ragmeter.reports.html import render_report
    from ragmeter.runs import list_runs
    from ragmeter.view.listing import flags

    (record,) = list_runs(runs_dir_override=tmp_path / "runs")
    assert record.result["alarms"] == doc["alarms"]
    html = render_report([record])
    assert "FLAGGED — judge at or below chance" in html
    assert "judge at chance" in flags(record)


def test_the_python_door_flags_it_too(scripted_server, tmp_path: Path) -> None:
    server = scripted_server(reply=_contrary)
    result = ragmeter.multilingual.judge(
        _rows(), scoring="generate", store=tmp_path / "s.sqlite", progress=False,
        backend=ragmeter.backends.openai("contrary", base_url=server.url))
    assert [a["kind"] for a in result.alarms] == ["judge_at_chance"]
    (row,) = [h for h in result.headline if h.metric == "semantic_score"]
    assert row.flag and "judge at or below chance" in row.flag


def test_a_known_validation_at_chance_flags_rubric_grades(monkeypatch) -> None:
    """A rubric judge whose card carries a validation at chance: its judged numbers are
    flagged although its grades vary."""
    from ragmeter.rubric import _metrics

    summary = {"alarms": [check_validity(judge_card(
        "m:choices:p", {"metric": "quadratic kappa", "value": 0.038, "ci": [0.0, 0.11]}),
        what="rubric grade")]}
    flag = _metrics._degenerate(summary)
    assert flag is not None and flag.startswith("judge at or below chance: quadratic kappa")



def test_rgb_judge_flags_a_judge_known_to_be_at_chance(monkeypatch, scripted_server, run_cli,
                                                        tmp_path: Path) -> None:
    """RGB's doors: a judge whose card carries a validation at chance (as the local model's
    yes/no judge does, kappa 0.000 on Rej*) flags Rej* although its verdicts vary."""
    from ragmeter.io._samples import sample_path
    from ragmeter.judges import _card

    monkeypatch.setattr(_card, "_KNOWN", {**_card.known_validations(), "openai:j:text": {
        "metric": "Cohen's kappa vs hand labels", "value": 0.0, "data": "a test"}})
    server = scripted_server(reply=lambda body: "not addressed" if "I cannot say" in
                             last_user_text(body) else "addressed")
    preds = tmp_path / "p.jsonl"
    preds.write_text("".join(json.dumps({"id": i, "prediction": "I cannot say." if i % 2
                                         else f"answer {i}"}) + "\n" for i in range(5)),
                     encoding="utf-8")
    code, out, err = run_cli("rgb", "judge", str(preds), "--data", sample_path("rgb_en.jsonl"),
                             "--backend", "openai", "--base-url", server.url, "--model", "j",
                             "--store", str(tmp_path / "s.sqlite"), "--json",
                             str(tmp_path / "j.json"), "--runs-dir", str(tmp_path / "runs"))
    assert code == 0, err
    assert "at or below chance" in out + err
    doc = json.loads((tmp_path / "j.json").read_text(encoding="utf-8"))
    assert [a["kind"] for a in doc["alarms"]] == ["judge_at_chance"]
    assert 0.0 < doc["metrics"]["reject_rate_judged"] < 1.0  # not degenerate
    (row,) = [h for h in doc["headline"] if h["metric"] == "reject_rate_judged"]
    assert row["flag"].startswith("judge at or below chance: Cohen's kappa")
    from ragmeter.reports.html import render_report
    from ragmeter.runs import list_runs
    from ragmeter.view.listing import flags

    (record,) = list_runs(runs_dir_override=tmp_path / "runs")
    assert "FLAGGED — judge at or below chance" in render_report([record])
    assert "judge at chance" in flags(record)


def test_trace_label_flags_a_judge_known_to_be_at_chance(monkeypatch, scripted_server,
                                                          tmp_path: Path) -> None:
    """TRACe's door: a choice judge whose card carries a validation at chance (as the local
    model's does, hallucination AUROC 0.385) flags adherence, not relevance."""
    import math

    from ragmeter.io._samples import sample_path
    from ragmeter.judges import _card

    monkeypatch.setattr(_card, "_KNOWN", {
        **_card.known_validations(), "openai:scripted:choice:trace-prompts-1": {
            "metric": "hallucination AUROC", "value": 0.385, "ci": [0.135, 0.714]}})

    def logprobs(body: dict) -> dict[str, float]:
        p = 0.8 if len(body["messages"][-1]["content"]) % 2 else 0.3
        return {"yes": math.log(p), "no": math.log(1 - p)}

    server = scripted_server(logprobs=logprobs)
    labels = ragmeter.trace.label(
        sample_path("trace_labelled.jsonl"), strategy="choice", progress=False,
        store=tmp_path / "s.sqlite",
        backend=ragmeter.backends.openai("scripted", base_url=server.url))
    assert "judge_at_chance" in [a["kind"] for a in labels.alarms]
    flags = {h.metric: h.flag for h in labels.headline}
    assert flags["adherence"] and flags["adherence"].startswith("judge at or below chance")
    assert flags["relevance"] is None
