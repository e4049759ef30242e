"""``ragmeter app run`` against a real HTTP application on 127.0.0.1 (tests/servers/rag_app.py)
and against Python functions: the output rows, the store (a re-run calls nothing), retries,
every failure unscored with its reason, clear errors before any call, and the Result contract.
The kill -9 proofs are in test_app_resume.py."""

from __future__ import annotations

import json
import sqlite3

import pytest
from examples.rag_app.app import answer, retrieve

import ragmeter
from ragmeter.app import AppFailedError
from ragmeter.errors import ConfigError, InputError
from ragmeter.io._samples import sample_path

SAMPLE = sample_path("retrieval_contexts.jsonl")  # 12 questions with references and gold texts
QUIET = ragmeter.RunOptions(progress=False)


def questions() -> list[str]:
    return [json.loads(line)["question"] for line in SAMPLE.read_text().splitlines()]


def ask(app, **kwargs):
    return ragmeter.app.http(app.url("/ask"), template={"query": "{question}"}, **kwargs)


def test_http_app_rows_carry_answers_contexts_ids_in_test_set_order(rag_app, tmp_path):
    app = rag_app()
    out = tmp_path / "answers.jsonl"
    result = ragmeter.app.run(SAMPLE, ask(app, contexts="sources[*].text",
                                          ids="sources[*].id"), run=QUIET, out=out)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert rows == result.items
    assert [r["id"] for r in rows] == [f"q{i:02d}" for i in range(1, 13)]  # query_id -> id
    for row, q in zip(rows, questions(), strict=True):
        assert row["question"] == q
        assert row["response"] == answer(q)["answer"]           # the application's own words
        assert row["retrieved_contexts"] == [s["text"] for s in retrieve(q)]
        assert row["retrieved_ids"] == [s["id"] for s in retrieve(q)]
        assert (row["status"], row["reason"], row["cached"]) == ("ok", None, False)
        assert row["latency_ms"] > 0
        assert row["system"] == app.url("/ask")
        # the test set's other columns are kept; its answer side is not
        assert row["topic"] and row["reference"] and row["reference_contexts"]
        assert "query_id" not in row
    assert app.total == 12 and set(app.calls.values()) == {1}


def test_a_second_run_is_answered_from_the_store_without_a_call(rag_app, tmp_path):
    app = rag_app()
    target = ask(app, contexts="sources[*].text")
    first = ragmeter.app.run(SAMPLE, target, run=QUIET)
    app.reset()
    again = ragmeter.app.run(SAMPLE, target, run=QUIET)
    assert app.total == 0                                    # counted at the application
    assert all(r["cached"] for r in again.items)
    strip = [{k: v for k, v in r.items() if k != "cached"} for r in first.items]
    assert [{k: v for k, v in r.items() if k != "cached"} for r in again.items] == strip
    assert again.summary["metrics"] == first.summary["metrics"]   # latency as first measured
    # a new version of the application is called afresh
    ragmeter.app.run(SAMPLE, ask(app, contexts="sources[*].text", version="v2"), run=QUIET)
    assert app.total == 12


def test_changing_a_path_rereads_stored_replies_without_calling(rag_app):
    app = rag_app()
    ragmeter.app.run(SAMPLE, ask(app), run=QUIET)
    app.reset()
    result = ragmeter.app.run(SAMPLE, ask(app, answer="sources[0].text"), run=QUIET)
    assert app.total == 0
    assert [r["response"] for r in result.items] == [retrieve(q)[0]["text"]
                                                       for q in questions()]


def test_usual_names_are_found_without_paths(rag_app):
    app = rag_app()
    result = ragmeter.app.run(SAMPLE, ask(app), run=QUIET, limit=3)
    q = questions()[0]
    row = result.items[0]
    assert len(result.items) == 3
    # "answer" found; "sources" are objects with text and id: contexts and their ids
    assert row["response"] == answer(q)["answer"]
    assert row["retrieved_contexts"] == [s["text"] for s in retrieve(q)]
    assert row["retrieved_ids"] == [s["id"] for s in retrieve(q)]


def test_openai_compatible_chat_endpoint(rag_app):
    app = rag_app()
    target = ragmeter.app.chat(app.url("/v1"), "my-rag", params={"temperature": 0},
                               system="Answer from the notes {strictly}.")
    result = ragmeter.app.run(SAMPLE, target, run=QUIET, limit=2)
    for row, q in zip(result.items, questions(), strict=False):
        assert row["response"] == answer(q)["answer"]          # choices[0].message.content
        assert row["retrieved_contexts"] == [s["text"] for s in retrieve(q)]  # "context"
        assert row["system"] == "my-rag"
    assert app.total == 2
    assert "model:my-rag" in result.signature and "target:chat:POST" in result.signature


def test_retries_recover_from_server_errors(rag_app):
    app = rag_app(fail_first=2)
    result = ragmeter.app.run(SAMPLE, ask(app), run=QUIET, limit=4,
                              calls=ragmeter.app.AppCalls(max_retries=3), concurrency=2)
    assert all(r["status"] == "ok" for r in result.items)
    assert set(app.calls.values()) == {3}                   # two 500s, then the answer


def test_rpm_paces_the_calls(rag_app):
    import time

    app = rag_app()
    t0 = time.monotonic()
    # rpm 30: a bucket of 5 calls (ten seconds' worth), then one every 2 s
    result = ragmeter.app.run(SAMPLE, ask(app), run=QUIET, limit=6, rpm=30, concurrency=6)
    assert result.coverage["scored"] == 6 and app.total == 6
    assert time.monotonic() - t0 >= 1.8


def _write(tmp_path, rows):
    path = tmp_path / "tests.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_every_failure_is_an_unscored_row_with_its_reason(rag_app, tmp_path):
    app = rag_app()
    data = _write(tmp_path, [
        {"id": "ok", "question": "How do I stop my disc brakes from squealing?"},
        {"id": "boom", "question": "BOOM"},
        {"id": "noanswer", "question": "NOANSWER brakes"},
        {"id": "plain", "question": "PLAIN brakes"}])
    result = ragmeter.app.run(data, ask(app), run=QUIET, max_retries=1)
    by_id = {r["id"]: r for r in result.items}
    assert by_id["ok"]["status"] == "ok"
    assert (by_id["boom"]["reason"], by_id["noanswer"]["reason"],
            by_id["plain"]["reason"]) == ("http_500", "no_answer", "not_json")
    assert "the index is rebuilding" in by_id["boom"]["detail"]
    assert "has none of answer" in by_id["noanswer"]["detail"]
    for r in result.items[1:]:
        assert r["status"] == "unscored" and r["response"] is None
        assert r["retrieved_contexts"] is None
    assert app.calls["BOOM"] == 2                             # 1 retry, then unscored
    assert result.coverage == {"rows": 4, "scored": 1, "unscored": 3, "reasons": {
        "http_500": 1, "no_answer": 1, "not_json": 1}}
    # a plain-text application is read with the answer path $
    plain = ragmeter.app.run(data, ask(app, answer="$"), run=QUIET, max_retries=0)
    assert {r["id"]: r["response"] for r in plain.items}["plain"] == "a plain answer"


def test_a_missing_answer_path_names_what_the_reply_holds(rag_app):
    app = rag_app()
    with pytest.raises(AppFailedError) as err:
        ragmeter.app.run(SAMPLE, ask(app, answer="data.answer"), run=QUIET, limit=2)
    assert err.value.exit_code == 1
    assert "no row of 2 was answered (no_answer 2)" in str(err.value)
    assert ("answer path 'data.answer': the reply has no 'data' (its keys: answer, sources)"
            in str(err.value))
    assert "(answer=)" in str(err.value)                      # Python speaks Python
    assert err.value.result.coverage["unscored"] == 2


def test_unreachable_application_fails_with_the_cause(tmp_path):
    target = ragmeter.app.http("http://127.0.0.1:9/ask")  # discard port: nothing listens
    out = tmp_path / "answers.jsonl"
    with pytest.raises(AppFailedError) as err:
        ragmeter.app.run(SAMPLE, target, run=QUIET, limit=2, max_retries=0, out=out)
    message = str(err.value)
    assert message.startswith("app run: no row of 2 was answered (connection 2)")
    assert "start the application, or check its address (http://127.0.0.1:9/ask)" in message
    assert not out.exists()


def test_a_placeholder_the_rows_lack_is_an_error_before_any_call(rag_app, tmp_path):
    app = rag_app()
    target = ragmeter.app.http(app.url("/ask"), template={"query": "{question}",
                                                          "user": "{user_id}"})
    with pytest.raises(InputError) as err:
        ragmeter.app.run(SAMPLE, target, run=QUIET)
    assert str(err.value).startswith(f'app: line 1 of {SAMPLE}: field "user_id": is missing, '
                                     "and the request template uses {user_id}.")
    assert "--field user_id=COLUMN" in str(err.value)
    assert app.total == 0
    with pytest.raises(ConfigError, match="has no placeholder"):
        ragmeter.app.http(app.url("/ask"), template={"query": "fixed"})
    with pytest.raises(ConfigError, match="is not JSON"):
        ragmeter.app.http(app.url("/ask"), template="{query: question}")


def test_template_fills_typed_values_and_any_column(rag_app, tmp_path):
    app = rag_app()
    data = _write(tmp_path, [{"id": 7, "prompt": "Which fluid goes into hydraulic disc brakes?",
                              "k": 2, "tags": ["a", "b"]}])
    target = ragmeter.app.http(app.url("/ask"), template={
        "query": "{question}", "top_k": "{k}", "tags": "{tags}", "note": "id {id}: {{literal}}"})
    result = ragmeter.app.run(data, target, run=QUIET, fields={"question": "prompt"})
    store = result.summary["store"]
    with sqlite3.connect(store) as db:
        (request_json,) = db.execute("SELECT request_json FROM calls").fetchone()
    body = json.loads(json.loads(request_json)["messages"][0]["content"])["body"]
    assert body == {"query": "Which fluid goes into hydraulic disc brakes?", "top_k": 2,
                    "tags": ["a", "b"], "note": "id 7: {literal}"}
    assert result.items[0]["id"] == "7" and result.items[0]["k"] == 2


def test_python_function_sync_async_and_row(tmp_path):
    seen: list[str] = []

    def sync_app(question: str):
        seen.append(question)
        return answer(question)["answer"], [h["text"] for h in retrieve(question)]

    async def async_app(question: str, row: dict):
        return {"response": f"{row['topic']}: {question}", "documents": ["d"], "ids": [1]}

    first = ragmeter.app.run(SAMPLE, sync_app, run=QUIET, limit=3)
    assert len(seen) == 3 and first.items[0]["response"] == answer(questions()[0])["answer"]
    assert first.items[0]["retrieved_contexts"] == [h["text"] for h in retrieve(questions()[0])]
    assert "retrieved_ids" not in first.items[0]               # the function gives none
    ragmeter.app.run(SAMPLE, sync_app, run=QUIET, limit=3)
    assert len(seen) == 3                                      # answered from the store
    second = ragmeter.app.run(SAMPLE, async_app, run=QUIET, limit=1)
    row = second.items[0]
    assert row["response"] == f"brakes: {questions()[0]}"
    assert (row["retrieved_contexts"], row["retrieved_ids"]) == (["d"], ["1"])


def test_a_sync_function_runs_up_to_concurrency_at_once():
    import threading
    import time

    lock, running, most = threading.Lock(), [0], [0]

    def slow(question: str) -> str:
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.15)
        with lock:
            running[0] -= 1
        return "ok"

    result = ragmeter.app.run(SAMPLE, slow, run=QUIET, concurrency=8, limit=8)
    assert most[0] == 8 and result.coverage["scored"] == 8  # 8 threads, not the default 6


def test_an_edited_function_is_a_new_application_for_the_store():
    from ragmeter.app._backends import code_fingerprint

    first = ragmeter.app.run(SAMPLE, lambda q: "first", run=QUIET, limit=2)
    again = ragmeter.app.run(SAMPLE, lambda q: "second", run=QUIET, limit=2)
    assert [r["response"] for r in first.items] == ["first"] * 2
    assert [r["response"] for r in again.items] == ["second"] * 2   # not the stored "first"
    assert first.signature != again.signature and "|code:" in first.signature

    def f(q):
        return q

    assert code_fingerprint(f) == code_fingerprint(f) and len(code_fingerprint(f)) == 12


def test_the_awaitable_form_gives_the_same_rows():
    import asyncio

    async def main():
        return await ragmeter.app.arun(SAMPLE, lambda q: q.upper(), run=QUIET, limit=2)

    result = asyncio.run(main())
    assert [r["response"] for r in result.items] == [q.upper() for q in questions()[:2]]


def test_a_function_that_raises_is_unscored_with_the_error(tmp_path):
    def flaky(question: str) -> str:
        if "tyre" in question:
            raise ValueError("the index has no tyres")
        return "fine"

    result = ragmeter.app.run(SAMPLE, flaky, run=QUIET)
    failed = [r for r in result.items if r["status"] != "ok"]
    assert failed and {r["reason"] for r in failed} == {"app_error"}
    assert failed[0]["detail"] == "ValueError: the index has no tyres"


def test_module_function_names_are_checked(tmp_path, monkeypatch):
    (tmp_path / "myrag.py").write_text("def answer(question):\n    return 'x'\n")
    monkeypatch.chdir(tmp_path)
    result = ragmeter.app.run(SAMPLE, "myrag:answer", run=QUIET, limit=1)
    assert result.items[0]["response"] == "x" and result.items[0]["system"] == "myrag:answer"
    with pytest.raises(ConfigError, match="'myrag' has no 'answr'.*Did you mean: answer"):
        ragmeter.app.run(SAMPLE, "myrag:answr", run=QUIET)
    with pytest.raises(ConfigError, match="cannot import 'nomodule'"):
        ragmeter.app.run(SAMPLE, "nomodule:answer", run=QUIET)


def test_dry_run_counts_calls_and_calls_nothing(rag_app):
    app = rag_app()
    ragmeter.app.run(SAMPLE, ask(app), run=QUIET, limit=5)
    app.reset()
    result = ragmeter.app.run(SAMPLE, ask(app), run=ragmeter.RunOptions(dry_run=True,
                                                                        progress=False))
    assert app.total == 0
    assert result.summary["from_store"] == 5 and result.summary["calls"] == 7
    assert "12 rows" in result.dry_run_text and "7 calls to make" in result.dry_run_text


def test_headers_read_secrets_from_the_environment_and_never_store_them(rag_app, monkeypatch):
    app = rag_app()
    monkeypatch.setenv("APP_TOKEN", "s3cret-token-value")
    target = ask(app, headers={"Authorization": "Bearer ${APP_TOKEN}"})
    result = ragmeter.app.run(SAMPLE, target, run=QUIET, limit=2)
    store_bytes = open(result.summary["store"], "rb").read()
    assert b"s3cret-token-value" not in store_bytes
    assert "s3cret" not in json.dumps(result.summary)
    assert result.summary["target"]["headers"] == ["Authorization"]
    monkeypatch.delenv("APP_TOKEN")
    with pytest.raises(ConfigError, match="needs the environment variable APP_TOKEN"):
        ragmeter.app.run(SAMPLE, target, run=QUIET, limit=2)


def test_result_contract_headline_signature_and_record(rag_app, tmp_path):
    app = rag_app()
    result = ragmeter.app.run(SAMPLE, ask(app, contexts="sources[*].text", name="bike-rag",
                                          version="1.2"), run=QUIET)
    heads = {h["metric"]: h for h in result.summary["headline"]}
    assert set(heads) == {"answered", "with_contexts", "contexts_per_answer", "latency_p50_ms",
                          "latency_p95_ms", "latency_mean_ms"}
    assert heads["answered"]["value"] == 1.0 and heads["answered"]["coverage"] == 1.0
    assert heads["answered"]["ci"][1] == 1.0 and heads["answered"]["n"] == 12
    assert heads["latency_p95_ms"]["higher_is_better"] is False
    assert heads["contexts_per_answer"]["value"] == 3.0
    sig = result.signature
    assert sig.startswith("family:app|metrics:app-1|")
    assert f"target:http:POST {app.url('/ask')}" in sig and "version:1.2" in sig
    assert "contexts:sources[*].text" in sig
    assert all(r["system"] == "bike-rag" for r in result.items)
    record = result.save(tmp_path / "runs")
    assert record.family == "app"
    from ragmeter.testing import assert_metric

    assert_metric(result, "answered", min=0.9)
    assert_metric(result, "latency_p95_ms", max=60_000)


def test_cli_app_run_and_its_exit_codes(rag_app, tmp_path, run_cli):
    app = rag_app()
    out = tmp_path / "answers.jsonl"
    code, _, err = run_cli("app", "run", SAMPLE, "--out", out, "--url", app.url("/ask"),
                           "--template", '{"query": "{question}"}', "--contexts-path",
                           "sources[*].text", "--ids-path", "sources[*].id", "--no-record",
                           "--json", tmp_path / "summary.json")
    assert code == 0, err
    assert f"wrote 12 rows to {out}" in err
    assert len(out.read_text().splitlines()) == 12
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["coverage"]["scored"] == 12
    # no application given, or two: usage error
    code, _, err = run_cli("app", "run", SAMPLE, "--out", out)
    assert code == 2 and "exactly one of --url" in err
    # a flag that does not apply to the target
    code, _, err = run_cli("app", "run", SAMPLE, "--out", out, "--function", "m:f",
                           "--template", "{}")
    assert code == 2 and "--template does not apply to --function" in err
    # nothing answered: exit 1, the cause, no traceback, no output written
    out2 = tmp_path / "none.jsonl"
    code, _, err = run_cli("app", "run", SAMPLE, "--out", out2, "--url",
                           "http://127.0.0.1:9/ask", "--max-retries", "0", "--no-record")
    assert code == 1 and "error: app run: no row of 12 was answered (connection 12)" in err
    assert "(http://127.0.0.1:9/ask)" in err
    assert "Traceback" not in err and not out2.exists()
    # a bad path is a one-line error with exit 2
    code, _, err = run_cli("app", "run", SAMPLE, "--out", out2, "--url", app.url("/ask"),
                           "--answer-path", "a..b", "--no-record")
    assert code == 2 and "answer path 'a..b' is not a field path" in err
    # no reply holds the answer: the fix names the flag (Python's error names answer=)
    code, _, err = run_cli("app", "run", SAMPLE, "--out", out2, "--url", app.url("/ask"),
                           "--template", '{"query": "{question}"}', "--answer-path",
                           "data.answer", "--no-record", "--limit", "2")
    assert code == 1 and "(--answer-path)" in err and not out2.exists()
