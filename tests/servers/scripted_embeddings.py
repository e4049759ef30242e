"""A scripted OpenAI-compatible ``/v1/embeddings`` server on 127.0.0.1 for tests (written for
ragmeter; standard library only).

Each text's embedding is a deterministic bag of words: 64 dimensions, one count per word
hashed into them (so texts sharing words have a high cosine).  ``POST /v1/embeddings``
``{"model", "input": [...]}`` answers ``{"data": [{"index", "embedding"}], "model"}`` with
the items in reverse order (clients must use ``index``); ``bad="count"`` answers one embedding
too few.  It counts calls and the texts embedded.

In tests, the ``embeddings_server`` fixture (a factory)::

    def test_x(embeddings_server):
        server = embeddings_server()
        ... server.url ("http://127.0.0.1:PORT/v1"), server.calls, server.texts
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

__all__ = ["EmbeddingsServer", "embeddings_server", "bag_of_words"]

DIM = 64


def bag_of_words(text: str) -> list[float]:
    """The server's embedding of ``text``: word counts hashed into :data:`DIM` buckets."""
    vec = [0.0] * DIM
    for word in re.findall(r"\w+", text.lower()):
        vec[int(hashlib.sha256(word.encode()).hexdigest(), 16) % DIM] += 1.0
    return vec


class EmbeddingsServer:
    def __init__(self, bad: str | None = None) -> None:
        self.bad = bad
        self.calls = 0
        self.texts: list[str] = []
        self.models: list[Any] = []
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        srv = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if self.path != "/v1/embeddings" or not isinstance(body.get("input"), list):
                    status, payload = 404, {"error": "not found"}
                else:
                    texts = body["input"]
                    with srv.lock:
                        srv.calls += 1
                        srv.texts.extend(texts)
                        srv.models.append(body.get("model"))
                    data = [{"object": "embedding", "index": i,
                             "embedding": bag_of_words(t)} for i, t in enumerate(texts)]
                    if srv.bad == "count":
                        data = data[1:]
                    status, payload = 200, {"object": "list", "model": body.get("model"),
                                            "data": data[::-1]}
                raw = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def log_message(self, *args: Any) -> None:
                return

        return Handler


@pytest.fixture
def embeddings_server() -> Iterator[Callable[..., EmbeddingsServer]]:
    started: list[EmbeddingsServer] = []

    def make(**kwargs: Any) -> EmbeddingsServer:
        server = EmbeddingsServer(**kwargs)
        started.append(server)
        return server

    yield make
    for server in started:
        server.stop()
