"""The output of ``app run`` is read as it is by ``retrieval score``, ``trace label``, ``rubric
judge`` and ``multilingual score``: each gives the numbers it gives on the same data written
under its own column names, and counts the row the application failed on as unscored."""

from __future__ import annotations

import json

import pytest
from examples.rag_app.app import answer as example_answer

import ragmeter
from ragmeter.io._samples import sample_path

SAMPLE = sample_path("retrieval_contexts.jsonl")
QUIET = ragmeter.RunOptions(progress=False)
FAILS = "Which fluid goes into hydraulic disc brakes?"  # q02: the application fails on it


def flaky_app(question: str) -> dict:
    if question == FAILS:
        raise RuntimeError("retriever down")
    return example_answer(question)


@pytest.fixture
def answers(tmp_path):
    out = tmp_path / "answers.jsonl"
    ragmeter.app.run(SAMPLE, flaky_app, run=QUIET, out=out)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["status"] for r in rows].count("unscored") == 1
    return out, rows


def _metrics(result) -> dict:
    return {h["metric"]: h["value"] for h in result.summary["headline"]}


def test_retrieval_score_reads_ids_texts_and_the_failed_row(answers, tmp_path):
    out, rows = answers
    result = ragmeter.retrieval.score(out)
    by_query = {it["query_id"]: it for it in result.items}
    assert by_query["q02"]["status"] == "unscored" and by_query["q02"]["reason"] == "app_error"
    assert sum(1 for it in result.items if it["status"] == "ok") == 11
    # the same data under retrieval's own names (the failed query left out of the run)
    native = tmp_path / "native.jsonl"
    native.write_text("".join(json.dumps({
        "query_id": r["id"], "retrieved_contexts": r["retrieved_contexts"],
        "reference_contexts": r["reference_contexts"], "reference": r["reference"]}) + "\n"
        for r in rows if r["status"] == "ok"))
    assert _metrics(result) == _metrics(ragmeter.retrieval.score(native))
    # ids judged by id (qrels from the gold texts' ids in the knowledge base): the ids rank,
    # and the texts still give the answer metric
    from examples.rag_app.app import passages

    id_of = {text: pid for pid, text in passages()}
    qrels = [{"query_id": r["id"], "relevant_ids": [id_of[t] for t in r["reference_contexts"]]}
             for r in rows]
    by_id = ragmeter.retrieval.score(out, qrels=qrels)
    text_ndcg = {h["metric"]: h["value"] for h in result.summary["headline"]}
    id_ndcg = {h["metric"]: h["value"] for h in by_id.summary["headline"]}
    for metric in ("ndcg@10", "recall@3", "mrr", "map"):
        assert id_ndcg[metric] == pytest.approx(text_ndcg[metric])   # one passage, one id
    assert "answer_in_context@3" not in id_ndcg  # qrels replace the run's own judgments


def test_trace_label_reads_retrieved_contexts_and_keeps_the_failure(answers, tmp_path):
    out, rows = answers
    labels = ragmeter.trace.label(out, strategy="detector")
    by_id = {r["id"]: r for r in labels.items}
    assert by_id["q02"]["status"] == "unscored" and by_id["q02"]["reason"] == "app_error"
    native = tmp_path / "native.jsonl"
    native.write_text("".join(json.dumps({
        "id": r["id"], "question": r["question"], "documents": r["retrieved_contexts"],
        "response": r["response"]}) + "\n" for r in rows if r["status"] == "ok"))
    same = {r["id"]: r for r in ragmeter.trace.label(native, strategy="detector").items}
    for rid, row in same.items():
        assert {k: v for k, v in by_id[rid].items() if k != "row"} == \
            {k: v for k, v in row.items() if k != "row"}


def test_rubric_judge_reads_question_reference_response(answers):
    out, _ = answers
    judged = ragmeter.rubric.judge(out, strategy="overlap")
    by_id = {r["id"]: r for r in judged.items}
    assert by_id["q02"]["status"] == "unscored"
    assert all(r["status"] == "ok" for k, r in by_id.items() if k != "q02")
    assert all(r["system"] == "tests.suites.app.test_app_output_readers:flaky_app"
               for r in judged.items)


def test_multilingual_score_reads_the_output_of_a_test_set_with_languages(tmp_path):
    data = tmp_path / "tests.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in [
        {"sample_id": "m1", "sample_lang": "en", "question": "What is the capital of Australia?",
         "gold_answer": "Canberra"},
        {"sample_id": "m2", "sample_lang": "de", "question": "Hauptstadt von Kanada?",
         "gold_answer": "Ottawa"},
        {"sample_id": "m3", "sample_lang": "fr", "question": "crash", "gold_answer": "x"}]))

    def app(question: str) -> str:
        if question == "crash":
            raise RuntimeError("down")
        return "Canberra" if "Australia" in question else "Toronto"

    out = tmp_path / "answers.jsonl"
    ragmeter.app.run(data, ragmeter.app.function(app, name="my-rag"), run=QUIET, out=out)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["id"], r["lang"], r["reference"]) for r in rows] == [
        ("m1", "en", "Canberra"), ("m2", "de", "Ottawa"), ("m3", "fr", "x")]
    result = ragmeter.multilingual.score(out)
    native = tmp_path / "native.jsonl"
    native.write_text("".join(json.dumps({
        "sample_id": r["id"], "sample_lang": r["lang"], "system": "my-rag",
        "gold_answer": r["reference"], "pred_answer": r["response"]}) + "\n" for r in rows))
    assert result.summary["metrics"] == ragmeter.multilingual.score(native).summary["metrics"]
    assert result.coverage["unscored"] == 1                  # the row the application failed on
    assert result.summary["metrics"]["my-rag"]["f1"] == 0.5  # Canberra right, Toronto wrong
