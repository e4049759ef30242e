"""A small RAG application served over real HTTP on 127.0.0.1, for the tests of ``ragmeter app
run`` (written for ragmeter; standard library only).  Its answers come from the example
application (``examples/rag_app/app.py``); it counts every call per question and can misbehave
on demand.

* ``POST /ask`` ``{"query": "..."}`` -> ``{"answer", "sources": [{"id", "text", "score"}]}``;
  a question containing ``NOANSWER`` gets a reply without ``answer``, one containing ``PLAIN``
  a plain-text body, one containing ``BOOM`` a 500 every time;
* ``POST /v1/chat/completions`` -> an OpenAI chat completion whose message content is the
  answer, with the sources under a top-level ``context``;
* ``fail_first=N``: every question's first N calls get a 500 (retries must recover);
* ``latency``: seconds to wait before answering.

In tests, the ``rag_app`` fixture (a factory) starts one and stops it afterwards::

    def test_x(rag_app):
        app = rag_app(latency=0.01)
        ... app.url("/ask"), app.calls["How do I ...?"], app.total
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from examples.rag_app.app import answer, retrieve

__all__ = ["RagApp", "rag_app"]


class RagApp:
    """The server, its counters and its settings."""

    def __init__(self, latency: float = 0.0, fail_first: int = 0) -> None:
        self.latency = latency
        self.fail_first = fail_first
        self.calls: Counter[str] = Counter()  # question -> calls received (any outcome)
        self.answered: list[str] = []  # questions answered with a 200, in order
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    def url(self, path: str = "/ask") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    @property
    def total(self) -> int:
        with self.lock:
            return sum(self.calls.values())

    def reset(self) -> None:
        with self.lock:
            self.calls.clear()
            self.answered.clear()

    def start(self) -> RagApp:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def respond(self, path: str, body: Any) -> tuple[int, str, str]:
        """``(status, content type, body)`` of one call."""
        if path.startswith("/v1/chat/completions"):
            messages = body.get("messages") or [{}] if isinstance(body, dict) else [{}]
            question = str(messages[-1].get("content", ""))
        elif isinstance(body, dict) and isinstance(body.get("query"), str):
            question = body["query"]
        else:
            return 400, "application/json", json.dumps({"error": 'send {"query": "..."}'})
        with self.lock:
            self.calls[question] += 1
            seen = self.calls[question]
        if self.latency:
            time.sleep(self.latency)
        if "BOOM" in question or seen <= self.fail_first:
            return 500, "application/json", json.dumps({"error": "the index is rebuilding"})
        with self.lock:
            self.answered.append(question)
        if "PLAIN" in question:
            return 200, "text/plain", "a plain answer"
        result = answer(question)
        sources = retrieve(question)
        if path.startswith("/v1/chat/completions"):
            return 200, "application/json", json.dumps({
                "id": "chatcmpl-1", "object": "chat.completion", "model": body.get("model"),
                "choices": [{"index": 0, "finish_reason": "stop", "message": {
                    "role": "assistant", "content": result["answer"]}}],
                "context": sources})
        reply: dict[str, Any] = {"answer": result["answer"], "sources": sources}
        if "NOANSWER" in question:
            reply = {"sources": sources, "note": "no answer key"}
        return 200, "application/json", json.dumps(reply)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        app = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw or b"null")
                except json.JSONDecodeError:
                    body = None
                status, ctype, text = app.respond(self.path, body)
                data = text.encode("utf-8")
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802
                data = json.dumps({"calls": app.total}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                return

        return Handler


@pytest.fixture
def rag_app() -> Iterator[Callable[..., RagApp]]:
    started: list[RagApp] = []

    def make(**kwargs: Any) -> RagApp:
        app = RagApp(**kwargs).start()
        started.append(app)
        return app

    yield make
    for app in started:
        app.stop()
