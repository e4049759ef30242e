"""The openai backend against the scripted server on 127.0.0.1, and its pure helpers."""

from __future__ import annotations

import asyncio
import math

import pytest

from ragmeter.backends._openai import (
    OpenAIBackend,
    _match_choice,
    choice_probs_from_top,
    parse_retry_after,
)
from ragmeter.backends._types import Request
from ragmeter.errors import BackendError, ConfigError
from ragmeter.runner._run import RunnerConfig, run_requests
from ragmeter.runner._store import Store

YES_NO = ("yes", "no")


def call(backend: OpenAIBackend, request: Request):
    async def go():
        try:
            return await backend.complete(request)
        finally:
            await backend.aclose()
    return asyncio.run(go())


def ask(content: str, **kw) -> Request:
    return Request.chat("r", [{"role": "user", "content": content}], **kw)


@pytest.mark.parametrize("headers, expected", [
    ({"retry-after": "2"}, 2.0),
    ({"retry-after": "0.5"}, 0.5),
    ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),
    ({"retry-after": "Wed, 21 Oct 2015 07:28:10 GMT"}, 10.0),  # RFC 9110 HTTP-date form
    ({"retry-after": "soon"}, None),
    ({}, None),
])
def test_parse_retry_after(headers, expected):
    now = 1445412480.0  # 2015-10-21 07:28:00 GMT
    assert parse_retry_after(headers, now=now) == expected


@pytest.mark.parametrize("top, expected", [
    ([("yes", math.log(0.6)), ("no", math.log(0.2)), ("maybe", math.log(0.2))],
     {"yes": 0.75, "no": 0.25}),
    ([(" Yes", math.log(0.3)), ("yes", math.log(0.3)), ("No", math.log(0.2))],
     {"yes": 0.75, "no": 0.25}),  # leading space and case are folded
    ([("maybe", 0.0)], None),
])
def test_choice_probs_from_top(top, expected):
    got = choice_probs_from_top(top, YES_NO)
    if expected is None:
        assert got is None
    else:
        assert got == pytest.approx(expected)


@pytest.mark.parametrize("text, expected", [
    ("Yes.", "yes"), ("no", "no"), ("  NO, because...", "no"),
    ("I think yes", "yes"), ("perhaps", None), ("3", None),
])
def test_match_choice(text, expected):
    assert _match_choice(text, YES_NO) == expected


def test_text_and_usage(scripted_server):
    server = scripted_server(reply=lambda body: "Paris")
    backend = OpenAIBackend(model="scripted", base_url=server.url)
    resp = call(backend, ask("capital of France?", params={"temperature": 0, "max_tokens": 5}))
    assert resp.text == "Paris"
    assert resp.usage.prompt_tokens == 3 and resp.usage.completion_tokens == 1
    assert resp.latency_ms > 0
    body = server.bodies[0]
    assert body["model"] == "scripted" and body["temperature"] == 0 and body["max_tokens"] == 5


def test_choices_by_logprobs(scripted_server):
    server = scripted_server(logprobs=lambda body: {"yes": math.log(0.6), "no": math.log(0.3),
                                                    "x": math.log(0.1)})
    backend = OpenAIBackend(model="scripted", base_url=server.url)
    resp = call(backend, ask("supported?", choices=YES_NO))
    assert resp.choice_method == "logprobs"
    assert resp.choice_probs == pytest.approx({"yes": 2 / 3, "no": 1 / 3})
    assert server.bodies[0]["logprobs"] is True and server.bodies[0]["max_tokens"] == 1


def test_choices_fall_back_to_constrained_text(scripted_server):
    server = scripted_server(supports_logprobs=False, reply=lambda body: "No.")
    backend = OpenAIBackend(model="scripted", base_url=server.url)
    resp = call(backend, ask("supported?", choices=YES_NO))
    assert resp.choice_method == "constrained_text"
    assert resp.choice_probs == {"yes": 0.0, "no": 1.0}
    assert backend.logprobs_supported is False
    assert "Answer with exactly one of: yes, no." in server.bodies[-1]["messages"][-1]["content"]
    call(backend, ask("again?", choices=YES_NO))  # remembered: no second logprobs attempt
    assert sum(1 for b in server.bodies if b.get("logprobs")) == 1


def test_no_choice_is_returned_unscorable_not_a_guess(scripted_server):
    # Issue 16: the paid reply comes back (to be stored), with no probabilities: never a guess.
    server = scripted_server(supports_logprobs=False, reply=lambda body: "perhaps")
    backend = OpenAIBackend(model="scripted", base_url=server.url)
    resp = call(backend, ask("supported?", choices=YES_NO))
    assert resp.text == "perhaps" and resp.choice_probs is None
    assert resp.choice_method == "constrained_text"


def test_reply_without_logprobs_is_returned_marked(scripted_server):
    server = scripted_server(ignores_logprobs=True, reply=lambda body: "yes")
    backend = OpenAIBackend(model="scripted", base_url=server.url)
    resp = call(backend, ask("supported?", choices=YES_NO))
    assert (resp.text, resp.choice_probs, resp.choice_method) == ("yes", None, "no_logprobs")
    assert backend.logprobs_supported is False and len(server.bodies) == 1


def test_http_errors_map_to_reasons(scripted_server):
    from tests.servers.scripted_openai import Faults

    backend = OpenAIBackend(model="scripted",
                            base_url=scripted_server(faults=Faults(rate_429=1.0)).url)
    with pytest.raises(BackendError) as info:
        call(backend, ask("x"))
    assert (info.value.reason, info.value.retryable, info.value.retry_after) == (
        "http_429", True, 0.05)
    backend = OpenAIBackend(model="scripted", base_url="http://127.0.0.1:9/v1")
    with pytest.raises(BackendError) as info:
        call(backend, ask("x"))
    assert info.value.reason == "connection" and info.value.retryable
    backend = OpenAIBackend(model="scripted",
                            base_url=scripted_server().url.replace("/v1", "/nowhere"))
    with pytest.raises(BackendError) as info:
        call(backend, ask("x"))
    assert info.value.reason == "http_404" and not info.value.retryable


def test_model_is_required():
    with pytest.raises(ConfigError, match="never picks a paid model"):
        OpenAIBackend(model=None)


def test_api_key_never_leaves_the_header(scripted_server, tmp_path, monkeypatch):
    secret = "sk-test-SECRET-123456"
    monkeypatch.setenv("RAGMETER_API_KEY", secret)
    server = scripted_server()
    backend = OpenAIBackend(model="scripted", base_url=server.url)
    store = Store(tmp_path / "s.sqlite")
    out = run_requests([ask("hello")], backend, store, RunnerConfig(progress=False))
    assert out[0].ok
    assert secret not in repr(backend) and secret not in str(backend.identity())
    store.close()
    for f in tmp_path.iterdir():
        assert secret.encode() not in f.read_bytes()


def test_key_env_precedence(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "from-openai")
    assert OpenAIBackend(model="m")._api_key == "from-openai"
    monkeypatch.setenv("RAGMETER_API_KEY", "from-ragmeter")
    assert OpenAIBackend(model="m")._api_key == "from-ragmeter"


def test_one_pooled_client_reused_across_runs(scripted_server):
    server = scripted_server(latency=0.01)
    backend = OpenAIBackend(model="scripted", base_url=server.url, max_connections=4)
    requests = [Request.chat(f"q{i}", [{"role": "user", "content": f"q{i}"}]) for i in range(40)]
    config = RunnerConfig(concurrency=4, progress=False)
    assert all(o.ok for o in run_requests(requests, backend, None, config))
    assert server.stats()["connections"] <= 4
    # A second run (a new event loop) opens a new pool and works.
    more = [Request.chat(f"m{i}", [{"role": "user", "content": f"m{i}"}]) for i in range(8)]
    assert all(o.ok for o in run_requests(more, backend, None, config))
