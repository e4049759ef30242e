"""A scripted OpenAI-compatible server on 127.0.0.1 for tests and benchmarks (written for
ragmeter; stdlib asyncio only, HTTP/1.1 with keep-alive).

It answers ``POST /v1/chat/completions`` with a scripted reply, optional ``logprobs``, a chosen
latency, and injected faults at given rates: 429 with ``Retry-After``, 500, a timeout (the
answer comes after ``timeout_sleep`` seconds), a malformed body, a connection cut in the middle
of the body, and a slow first byte.  It counts calls, faults,
connections, which prompts got a good answer, and when the first and last call came since the
last reset.  ``GET /stats`` returns those counters, ``POST /reset`` sets them to zero.

In tests, use the ``scripted_server`` fixture (a factory)::

    def test_x(scripted_server):
        server = scripted_server(latency=0.01, faults=Faults(rate_500=0.1),
                                 reply=lambda body: "Paris")
        backend = create_backend("openai", model="scripted", base_url=server.url)

Standalone (benchmarks): ``python -m tests.servers.scripted_openai --latency 0.2`` prints
``PORT <n>`` on its first line and serves until killed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import random
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Faults", "ScriptedServer", "scripted_server", "last_user_text"]

Body = dict[str, Any]


@dataclass(frozen=True)
class Faults:
    """Rates (0..1, drawn independently per call in this order) of injected faults."""

    rate_429: float = 0.0
    rate_500: float = 0.0
    rate_timeout: float = 0.0
    rate_malformed: float = 0.0
    rate_disconnect: float = 0.0  # headers and half the body of a good answer, then close
    first_byte_delay: float = 0.0  # seconds before every answer's first byte (slow server)
    retry_after: float = 0.05  # seconds, sent in Retry-After with every 429
    timeout_sleep: float = 5.0  # a "timeout" answers after this long
    seed: int = 0


def last_user_text(body: Body) -> str:
    """The content of the last user message of a chat request."""
    for message in reversed(body.get("messages") or []):
        if message.get("role") == "user":
            return str(message.get("content", ""))
    return ""


def _default_reply(body: Body) -> str:
    return "echo: " + last_user_text(body)[:200]


def _default_logprobs(body: Body) -> dict[str, float]:
    return {"yes": math.log(0.7), "no": math.log(0.2), "maybe": math.log(0.1)}


@dataclass
class ScriptedServer:
    """The server.  ``start()`` runs it in a background thread; ``stop()`` ends it."""

    latency: float = 0.0
    faults: Faults = field(default_factory=Faults)
    reply: Callable[[Body], str] = _default_reply
    logprobs: Callable[[Body], dict[str, float]] = _default_logprobs
    supports_logprobs: bool = True
    ignores_logprobs: bool = False  # accept the parameter, answer text without logprobs
    host: str = "127.0.0.1"
    port: int = 0
    models: tuple[str, ...] = ("scripted",)  # what GET /models lists

    def __post_init__(self) -> None:
        self.calls = 0
        self.outcomes: Counter[str] = Counter()
        self.answered: list[str] = []  # last user text of each call answered with 200 + body
        self.answered_bodies: list[str] = []  # canonical JSON of each request answered 200
        self.bodies: list[Body] = []
        self.models_auth: list[str | None] = []  # the Authorization header of each GET /models
        self.connections = 0
        self.open_connections = 0
        self.max_open_connections = 0
        self.first_call_at: float | None = None  # time.time() of the first call since reset
        self.last_call_at: float | None = None
        self._rng = random.Random(self.faults.seed)
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.AbstractServer | None = None
        self._ready = threading.Event()

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def reset_counts(self) -> None:
        with self._lock:
            self.calls = 0
            self.outcomes.clear()
            self.answered.clear()
            self.answered_bodies.clear()
            self.bodies.clear()
            self.connections = 0
            self.max_open_connections = self.open_connections
            self.first_call_at = self.last_call_at = None

    def stats(self) -> dict[str, Any]:
        with self._lock:
            return {"calls": self.calls, "outcomes": dict(self.outcomes),
                    "connections": self.connections,
                    "max_open_connections": self.max_open_connections,
                    "first_call_at": self.first_call_at, "last_call_at": self.last_call_at}

    # -------------------------------------------------------------- lifecycle

    def start(self) -> ScriptedServer:
        self._thread = threading.Thread(target=self._thread_main, name="scripted-openai",
                                        daemon=True)
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("scripted server did not start")
        return self

    def _thread_main(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        loop.run_until_complete(self._open())
        self._ready.set()
        try:
            loop.run_forever()
        finally:
            loop.run_until_complete(self._close())
            loop.close()

    async def _open(self) -> None:
        self._server = await asyncio.start_server(self._handle, self.host, self.port,
                                                  backlog=1024)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _close(self) -> None:
        if self._server is not None:
            self._server.close()
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def stop(self) -> None:
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)

    async def serve_forever(self) -> None:
        """Serve in the current loop (standalone mode)."""
        self._loop = asyncio.get_running_loop()
        await self._open()
        print(f"PORT {self.port}", flush=True)
        assert self._server is not None
        await self._server.serve_forever()

    # -------------------------------------------------------------- HTTP

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with self._lock:
            self.connections += 1
            self.open_connections += 1
            self.max_open_connections = max(self.max_open_connections, self.open_connections)
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
                    return
                lines = head.decode("latin-1").split("\r\n")
                method, path, _ = (lines[0].split(" ") + ["", ""])[:3]
                headers = {}
                for line in lines[1:]:
                    if ":" in line:
                        k, _, v = line.partition(":")
                        headers[k.strip().lower()] = v.strip()
                length = int(headers.get("content-length", "0") or 0)
                raw = await reader.readexactly(length) if length else b""
                if method == "GET" and path.rstrip("/").endswith("/models"):
                    self.models_auth.append(headers.get("authorization"))
                status, extra, payload = await self._respond(method, path, raw)
                if self.faults.first_byte_delay:
                    await asyncio.sleep(self.faults.first_byte_delay)
                if status == -1:  # disconnect mid-body: a cut answer, then the socket closes
                    head = (f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                            f"Content-Length: {len(payload)}\r\n\r\n").encode()
                    writer.write(head + payload[:len(payload) // 2])
                    await writer.drain()
                    return
                out = [f"HTTP/1.1 {status} {'OK' if status == 200 else 'Error'}",
                       "Content-Type: application/json", f"Content-Length: {len(payload)}"]
                out += [f"{k}: {v}" for k, v in extra.items()]
                writer.write(("\r\n".join(out) + "\r\n\r\n").encode() + payload)
                await writer.drain()
                if headers.get("connection", "").lower() == "close":
                    return
        except (ConnectionError, asyncio.IncompleteReadError):
            return
        except asyncio.CancelledError:  # the server is stopping
            return
        finally:
            with self._lock:
                self.open_connections -= 1
            writer.close()

    def _draw(self) -> str:
        f = self.faults
        with self._lock:
            self.calls += 1
            self.last_call_at = time.time()
            if self.first_call_at is None:
                self.first_call_at = self.last_call_at
            for name, rate in (("429", f.rate_429), ("500", f.rate_500),
                               ("timeout", f.rate_timeout), ("malformed", f.rate_malformed),
                               ("disconnect", f.rate_disconnect)):
                if rate and self._rng.random() < rate:
                    return name
        return "ok"

    async def _respond(self, method: str, path: str, raw: bytes) -> tuple[int, dict[str, str],
                                                                           bytes]:
        if method == "GET" and path.rstrip("/").endswith("/stats"):
            return 200, {}, json.dumps(self.stats()).encode()
        if method == "POST" and path.rstrip("/").endswith("/reset"):
            self.reset_counts()
            return 200, {}, b"{}"
        if method == "GET" and path.rstrip("/").endswith("/models"):
            return 200, {}, json.dumps({"object": "list", "data": [
                {"id": m, "object": "model"} for m in self.models]}).encode()
        if method != "POST" or not path.rstrip("/").endswith("/v1/chat/completions"):
            return 404, {}, b'{"error": {"message": "not found"}}'
        try:
            body = json.loads(raw)
        except ValueError:
            return 400, {}, b'{"error": {"message": "body is not JSON"}}'
        fault = self._draw()
        with self._lock:
            self.outcomes[fault] += 1
            self.bodies.append(body)
        if self.latency:
            await asyncio.sleep(self.latency)
        if fault == "429":
            return 429, {"Retry-After": f"{self.faults.retry_after:g}"}, \
                b'{"error": {"message": "rate limited (scripted)"}}'
        if fault == "500":
            return 500, {}, b'{"error": {"message": "internal error (scripted)"}}'
        if fault == "timeout":
            await asyncio.sleep(self.faults.timeout_sleep)
        if fault == "malformed":
            return 200, {}, (b'{"choices": [{"message": ' if self._rng.random() < 0.5
                             else b'{"object": "chat.completion"}')
        if body.get("logprobs") and not self.supports_logprobs:
            return 400, {}, b'{"error": {"message": "logprobs are not supported"}}'
        payload = self._completion(body)
        if fault == "disconnect":
            return -1, {}, json.dumps(payload).encode()
        with self._lock:
            self.answered.append(last_user_text(body))
            self.answered_bodies.append(json.dumps(body, sort_keys=True))
        return 200, {}, json.dumps(payload).encode()

    def _completion(self, body: Body) -> Body:
        text = self.reply(body)
        choice: Body = {"index": 0, "message": {"role": "assistant", "content": text},
                        "finish_reason": "stop"}
        if body.get("logprobs") and not self.ignores_logprobs:
            dist = self.logprobs(body)
            top = sorted(dist.items(), key=lambda kv: -kv[1])[:int(body.get("top_logprobs") or 1)]
            text = top[0][0]
            choice["message"]["content"] = text
            choice["logprobs"] = {"content": [{
                "token": text, "logprob": top[0][1],
                "top_logprobs": [{"token": t, "logprob": lp} for t, lp in top]}]}
        prompt_words = sum(len(str(m.get("content", "")).split())
                           for m in body.get("messages") or [])
        return {"id": "chatcmpl-scripted", "object": "chat.completion",
                "created": int(time.time()), "model": body.get("model", "scripted"),
                "choices": [choice],
                "usage": {"prompt_tokens": prompt_words,
                          "completion_tokens": len(text.split()),
                          "total_tokens": prompt_words + len(text.split())}}


def _fixture(func: Any) -> Any:
    """``pytest.fixture`` when pytest is there; run standalone (benchmarks), pytest is not
    needed."""
    try:
        import pytest
    except ImportError:  # pragma: no cover - standalone use without pytest installed
        return func
    return pytest.fixture(func)


@_fixture
def scripted_server() -> Iterator[Callable[..., ScriptedServer]]:
    """Factory fixture: ``scripted_server(**ScriptedServer fields)`` starts a server on
    127.0.0.1 (stopped after the test) and returns it."""
    started: list[ScriptedServer] = []

    def make(**kwargs: Any) -> ScriptedServer:
        server = ScriptedServer(**kwargs).start()
        started.append(server)
        return server

    yield make
    for server in started:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--latency", type=float, default=0.0)
    args = parser.parse_args()
    asyncio.run(ScriptedServer(latency=args.latency, port=args.port).serve_forever())


if __name__ == "__main__":
    main()
