"""Judging through the runner with an in-test fake backend (canned replies), and the local
model end to end (marked local_model)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ragmeter.backends._types import BaseBackend, Capabilities, Request, Response
from ragmeter.multilingual._semantic import SemanticPrompt, semantic_requests, semantic_rows
from ragmeter.rubric._judge import Answer, JudgePrompt, build_requests, judged_rows
from ragmeter.rubric._scorer import RubricConfig, score_files
from ragmeter.runner._run import RunnerConfig, run_requests
from tests.conftest import shared

CONFIG = RunnerConfig(concurrency=2, max_retries=0, progress=False, record_run=False)


class FakeJudge(BaseBackend):
    """Replies from a function of the request; choice requests get fixed probabilities."""

    name = "fake"
    capabilities = Capabilities(choice_scoring=True)

    def __init__(self, reply: Any) -> None:
        self.reply = reply
        self.calls: list[Request] = []

    def identity(self) -> dict[str, Any]:
        return {"backend": "fake", "model": "fake-judge"}

    async def complete(self, request: Request) -> Response:
        self.calls.append(request)
        if request.choices is not None:
            if "yes" in request.choices:
                return Response("yes", choice_probs={"yes": 0.75, "no": 0.25},
                                choice_method="logits")
            return Response("5", choice_probs={"3": 0.25, "5": 0.75}, choice_method="logits")
        return Response(self.reply(request))

    async def aclose(self) -> None:
        return None


ANSWERS = [Answer("1", "Q1?", "R1", "A1", {"lang": "en"}),
           Answer("2", "Q2?", "R2", "A2", {"lang": "en"}),
           Answer("3", "Q3?", "R3", None, {"lang": "en"})]


def test_choices_records_probabilities_and_expected_grade(tmp_path):
    prompt = JudgePrompt.default()
    reqs = build_requests(ANSWERS, prompt, "choices")
    assert len(reqs) == 2 and reqs[0].choices == ("0", "1", "2", "3", "4", "5")
    outcomes = run_requests(reqs, FakeJudge(None), None, CONFIG)
    rows = judged_rows(ANSWERS, outcomes, prompt, "choices", 1, "fake-judge")
    assert rows[0]["score"] == 5 and rows[0]["expected_grade"] == pytest.approx(4.5)
    assert rows[0]["method"] == "choices:logits"
    assert rows[2]["status"] == "unscored" and rows[2]["reason"] == "missing_response"
    path = tmp_path / "j.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    g = score_files([path], RubricConfig(ci=False)).groups[0]
    assert g["n"] == 2 and g["coverage"]["reasons"] == {"missing_response": 1}
    assert g["expected_grade_mean"] == pytest.approx(4.5)


def test_ragaliq_prompt_file_strict_and_repeats(tmp_path):
    tpl = tmp_path / "p.txt"
    tpl.write_text("Q {instruction} R {response} REF {reference_answer} "
                   "format: {{feedback}} [RESULT] {{n}}", encoding="utf-8")
    prompt = JudgePrompt.from_file(tpl)
    assert prompt.parser == "strict" and prompt.params["temperature"] == 0.001
    replies = {0: "Feedback: good [RESULT] 5", 1: "Feedback: ok [RESULT] 4/5",
               2: "Feedback: meh [RESULT] 3"}
    judge = FakeJudge(lambda r: replies[r.repeat] if "A1" in r.messages[-1].content
                      else "no marker")
    reqs = build_requests(ANSWERS, prompt, "generate", repeats=3, seed=7)
    assert [r.params["seed"] for r in reqs[:3]] == [7, 8, 9]
    assert len({r.cache_key(judge.identity()) for r in reqs}) == 6  # repeat is in the key
    assert "Q Q1? R A1 REF R1 format: {feedback}" in reqs[0].messages[0].content
    outcomes = run_requests(reqs, judge, None, CONFIG)
    rows = judged_rows(ANSWERS, outcomes, prompt, "generate", 3, "fake-judge")
    first = [r for r in rows if r["id"] == "1"]
    assert [r["score"] for r in first] == [5, None, 3]
    assert first[1]["reason"] == "not_an_integer"
    assert {r["reason"] for r in rows if r["id"] == "2"} == {"no_result_marker"}
    path = tmp_path / "j.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    g = score_files([path], RubricConfig()).groups[0]
    assert g["stability"]["items"] == 1 and g["stability"]["changed_share"] == 1.0


def test_bad_template_is_input_error(tmp_path):
    from ragmeter.errors import InputError

    tpl = tmp_path / "p.txt"
    tpl.write_text("{unknown_field}", encoding="utf-8")
    with pytest.raises(InputError, match="unknown field"):
        JudgePrompt.from_file(tpl)


def test_ragaliq_judge_prompt_renders():
    prompt = JudgePrompt.from_file(shared("ragaliq", "judge_prompt.txt"))
    (msg,) = prompt.render("What?", "Ref", "Resp")
    assert "###The instruction to evaluate:\nWhat?" in msg.content
    assert '"Feedback: {write a feedback for criteria} [RESULT]' in msg.content


@pytest.mark.parametrize(("reply", "score", "reason"), [
    ('{"score": 0.9, "explanation": "same"}', 0.9, None),
    ('{"score": 3}', 1.0, None),
    ("I think it is right", None, "no_json_object"),
])
def test_semantic_generate(reply, score, reason):
    prompt = SemanticPrompt.default()
    answers = ANSWERS[:1]
    outcomes = run_requests(semantic_requests(answers, prompt, "generate"),
                            FakeJudge(lambda r: reply), None, CONFIG)
    (row,) = semantic_rows(answers, outcomes, "generate", prompt, "fake")
    assert row["semantic_score"] == score and row.get("semantic_reason") == reason


def test_semantic_choices_uses_p_yes():
    prompt = SemanticPrompt.default()
    outcomes = run_requests(semantic_requests(ANSWERS, prompt, "choices"), FakeJudge(None),
                            None, CONFIG)
    rows = semantic_rows(ANSWERS, outcomes, "choices", prompt, "fake")
    assert rows[0]["semantic_score"] == 0.75
    assert rows[2]["semantic_score"] is None and rows[2]["semantic_reason"] == "missing_response"


@pytest.mark.local_model
def test_local_model_judge_choices(tmp_path, run_cli):
    """Two items through the offline SmolLM2 with choice scoring."""
    f = tmp_path / "a.jsonl"
    f.write_text(json.dumps({"id": "1", "question": "What is 2+2?", "reference": "4",
                             "response": "4"}) + "\n" +
                 json.dumps({"id": "2", "question": "Capital of France?",
                             "reference": "Paris", "response": "Berlin"}) + "\n")
    out = tmp_path / "j.jsonl"
    code, stdout, err = run_cli("rubric", "judge", f, "--out", out)
    assert code == 0, err
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(rows) == 2
    for r in rows:
        assert r["status"] == "ok" and r["method"].startswith("choices:")
        assert sum(r["grade_probs"].values()) == pytest.approx(1.0)
        assert 0 <= r["expected_grade"] <= 5
