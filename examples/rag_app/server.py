"""The example application behind HTTP (standard library only)::

    python examples/rag_app/server.py --port 8641

``POST /ask`` with ``{"query": "..."}`` answers ``{"answer": "...", "sources": [{"id", "text",
"score"}, ...]}``; ``GET /health`` answers ``ok``.  Measure it with::

    ragmeter app run TEST_SET --out answers.jsonl --url http://127.0.0.1:8641/ask \\
        --template '{"query": "{question}"}' --contexts-path 'sources[*].text' \\
        --ids-path 'sources[*].id'
"""

from __future__ import annotations

import argparse
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from app import answer, retrieve  # noqa: E402  (the application beside this file)


def reply(body: Any) -> tuple[int, dict[str, Any]]:
    """``(status, reply)`` for one ``/ask`` body."""
    if not isinstance(body, dict) or not isinstance(body.get("query"), str):
        return 400, {"error": 'send {"query": "your question"}'}
    question = body["query"]
    return 200, {"answer": answer(question)["answer"], "sources": retrieve(question)}


class Handler(BaseHTTPRequestHandler):
    def _send(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802  (http.server's name)
        if self.path == "/health":
            self._send(200, "ok")
        else:
            self._send(404, {"error": "not found"})

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"null")
        except json.JSONDecodeError:
            self._send(400, {"error": "the body is not JSON"})
            return
        if self.path != "/ask":
            self._send(404, {"error": "not found"})
            return
        self._send(*reply(body))

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        return


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8641)
    args = parser.parse_args()
    server = ThreadingHTTPServer((args.host, args.port), Handler)
    print(f"serving on http://{args.host}:{server.server_address[1]}/ask", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
