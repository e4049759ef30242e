"""The plain-http client (backends/_wire.py) against a real server on 127.0.0.1: the same
replies as httpx for the same exchanges (chunked and gzip bodies, error bodies, Retry-After),
keep-alive within the pool limit, a closed connection never reused, the timeouts and
connection failures classified as with httpx, Basic credentials from the URL, query params
merged (issue 26.5)."""

from __future__ import annotations

import asyncio
import base64
import gzip
import json
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from ragmeter.backends._http import LoopClient, send
from ragmeter.backends._wire import WireClient
from ragmeter.errors import BackendError


class RawServer:
    """HTTP/1.1 with keep-alive written by hand; the path picks the reply; it records each
    request's head and counts the connections it accepted."""

    def __init__(self) -> None:
        self.connections = 0
        self.heads: list[dict[str, str]] = []
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()

        async def start() -> None:
            self.server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
            self.port = self.server.sockets[0].getsockname()[1]
            ready.set()

        self.thread = threading.Thread(target=lambda: (self.loop.run_until_complete(start()),
                                                       self.loop.run_forever()), daemon=True)
        self.thread.start()
        ready.wait(10)
        self.url = f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                raw = await reader.readuntil(b"\r\n\r\n")
                lines = raw.decode("latin-1").split("\r\n")
                method, target, _ = lines[0].split(" ")
                head = {k.lower(): v.strip() for k, _, v in
                        (line.partition(":") for line in lines[1:] if line)}
                head["method"], head["target"] = method, target
                body = await reader.readexactly(int(head.get("content-length", "0")))
                head["body"] = body.decode()
                self.heads.append(head)
                if not await self._reply(target.split("?")[0], head, writer):
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        writer.close()

    async def _reply(self, path: str, head: dict[str, str], writer: asyncio.StreamWriter
                     ) -> bool:
        """Write the reply for ``path``; False closes the connection after it."""
        def plain(status: str, body: bytes, *extra: str) -> bytes:
            lines = [f"HTTP/1.1 {status}", f"Content-Length: {len(body)}",
                     "Content-Type: application/json", *extra]
            return ("\r\n".join(lines) + "\r\n\r\n").encode() + body

        if path == "/chunked":
            parts = [b'{"choices": ', b'[{"text": "h\\u00e9llo"}]}']
            writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
                         b"Content-Type: application/json; charset=utf-8\r\n\r\n"
                         + b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts) + b"0\r\n\r\n")
        elif path == "/gzip":
            writer.write(plain("200 OK", gzip.compress(b'{"zipped": true}'),
                               "Content-Encoding: gzip"))
        elif path == "/limit":
            writer.write(plain("429 Too Many Requests", b'{"error": {"message": "slow down"}}',
                               "Retry-After: 3"))
        elif path == "/missing":
            writer.write(plain("404 Not Found", b"no such thing here"))
        elif path == "/close":
            writer.write(plain("200 OK", b'{"closing": true}', "Connection: close"))
            await writer.drain()
            return False
        elif path == "/drop":  # answers, then closes without saying so (an idle timeout)
            writer.write(plain("200 OK", b'{"dropped": true}'))
            await writer.drain()
            return False
        elif path == "/slow":
            await asyncio.sleep(1.0)
            writer.write(plain("200 OK", b"{}"))
        elif path == "/cut":  # headers and half the body, then the connection ends
            writer.write(plain("200 OK", b'{"half": "of a body"}')[:-8])
            await writer.drain()
            return False
        else:  # /echo: the request head as JSON
            writer.write(plain("200 OK", json.dumps(head).encode()))
        await writer.drain()
        return True


@pytest.fixture
def raw_server() -> Iterator[RawServer]:
    server = RawServer()
    yield server
    server.stop()


def _wire(url: str, **kw: Any) -> WireClient:
    return WireClient(headers={"Content-Type": "application/json"}, timeout_s=kw.pop("t", 5.0),
                      connect_s=5.0, max_connections=kw.pop("n", 4), base_url=url)


def _facts(reply: Any) -> tuple[Any, ...]:
    """What the backends read from a reply."""
    try:
        parsed = reply.json()
    except ValueError:
        parsed = "not json"
    return (reply.status_code, reply.reason_phrase, reply.text, parsed,
            reply.headers.get("retry-after"), reply.headers.get("Content-Type"))


@pytest.mark.parametrize("path", ["/chunked", "/gzip", "/limit", "/missing", "/close"])
def test_replies_read_as_httpx_reads_them(raw_server, path):
    async def both() -> tuple[tuple[Any, ...], tuple[Any, ...]]:
        wire = _wire(raw_server.url)
        async with httpx.AsyncClient(base_url=raw_server.url) as client:
            ours = _facts(await wire.request("POST", path, content='{"q": 1}'))
            theirs = _facts(await client.request("POST", path, content='{"q": 1}'))
        await wire.aclose()
        return ours, theirs

    ours, theirs = asyncio.run(both())
    assert ours == theirs
    assert ours[0] in (200, 429, 404)


def test_keep_alive_within_the_pool_limit(raw_server):
    async def run() -> None:
        wire = _wire(raw_server.url, n=3)
        for _ in range(5):  # one after another: one connection
            await wire.request("GET", "/echo")
        await asyncio.gather(*(wire.request("POST", "/echo", content="x") for _ in range(30)))
        await wire.aclose()

    asyncio.run(run())
    assert raw_server.connections == 3


def test_a_closed_connection_is_never_reused(raw_server):
    async def run() -> list[Any]:
        wire = _wire(raw_server.url, n=1)
        out = [(await wire.request("GET", "/close")).json()]
        out.append((await wire.request("GET", "/drop")).json())
        await asyncio.sleep(0.05)  # the server has closed it meanwhile, without a word
        out.append((await wire.request("GET", "/echo")).json()["target"])
        await wire.aclose()
        return out

    assert asyncio.run(run()) == [{"closing": True}, {"dropped": True}, "/echo"]
    assert raw_server.connections == 3


def test_request_head_host_auth_params_body(raw_server):
    url = raw_server.url.replace("http://", "http://us%40er:p%3Ass@") + "/v1"

    async def run() -> list[dict[str, str]]:
        wire = _wire(url)
        got = [(await wire.request("GET", "echo?a=1&b=2", params={"b": "x y", "c": "é"})).json(),
               (await wire.request("POST", "/echo", content="héllo")).json()]
        await wire.aclose()
        return got

    get, post = asyncio.run(run())
    assert get["target"] == "/v1/echo?a=1&b=x+y&c=%C3%A9"
    assert get["host"] == f"127.0.0.1:{raw_server.port}"
    assert get["authorization"] == "Basic " + base64.b64encode(b"us@er:p:ss").decode()
    assert "content-length" not in get and get["method"] == "GET"
    assert post["content-length"] == str(len("héllo".encode())) and post["body"] == "héllo"
    assert post["content-type"] == "application/json" and post["connection"] == "keep-alive"


def _send_error(url: str, path: str, timeout_s: float = 5.0) -> BackendError:
    async def run() -> BackendError:
        pool = LoopClient(headers={}, timeout_s=timeout_s, max_connections=2, base_url=url)
        try:
            await send(pool.get(), "POST", path, where="the server", timeout_s=timeout_s,
                       scrub=str, content="{}")
        except BackendError as exc:
            return exc
        finally:
            await pool.close()
        raise AssertionError("no error")
    return asyncio.run(run())


def test_failures_are_classified_as_with_httpx(raw_server):
    slow = _send_error(raw_server.url, "/slow", timeout_s=0.2)
    assert (slow.reason, slow.retryable) == ("timeout", True)
    assert str(slow.detail).startswith("ReadTimeout after 0.2 s")
    cut = _send_error(raw_server.url, "/cut")
    assert (cut.reason, cut.retryable) == ("connection", True)
    assert "RemoteProtocolError" in str(cut.detail)
    refused = _send_error("http://127.0.0.1:9", "/x")
    assert (refused.reason, refused.retryable) == ("connection", True)
    assert str(refused.detail) == ("ConnectError: All connection attempts failed "
                                   "(the server)")
    limited = _send_error(raw_server.url, "/limit")
    assert (limited.reason, limited.retryable, limited.retry_after) == ("http_429", True, 3.0)
    missing = _send_error(raw_server.url, "/missing")
    assert (missing.reason, missing.retryable) == ("http_404", False)
    assert "no such thing here" in str(missing.detail)


def _h11_bytes(method: str, target: str, headers: list[tuple[str, str]],
               body: bytes | None) -> bytes | None:
    """What h11 writes for a request (head, body, end), or None where it refuses it."""
    import h11

    conn = h11.Connection(our_role=h11.CLIENT)
    try:
        data = conn.send(h11.Request(method=method, target=target, headers=headers)) or b""
        if body:
            data += conn.send(h11.Data(data=body)) or b""
        return data + (conn.send(h11.EndOfMessage()) or b"")
    except (h11.LocalProtocolError, UnicodeEncodeError):
        return None


HOST = ("Host", "127.0.0.1:8000")


@pytest.mark.parametrize("method,target,headers,body,by_hand", [
    ("POST", "/v1/chat/completions", [HOST, ("Accept", "*/*"), ("User-Agent", "ragmeter/1"),
                                      ("Content-Length", "2")], b"{}", True),
    ("GET", "/v1/models?a=1", [("Accept", "*/*"), HOST, ("X-Empty", "")], None, True),
    ("GET", "/", [HOST, ("X-Tab", "a\tb c")], None, True),  # inner tab and space: a value
    ("POST", "/", [HOST, ("Content-Length", "0")], b"", True),
    ("GET", "/", [("X-A", "1")], None, False),  # no Host: h11 refuses
    ("GET", "/", [HOST, ("host", "other")], None, False),  # two: h11 refuses
    ("GET", "/", [HOST, ("X-A", " padded")], None, False),  # leading space: h11 refuses
    ("GET", "/", [HOST, ("X-A", "a\r\nb")], None, False),  # CR LF: h11 refuses
    ("GET", "/", [HOST, ("X A", "1")], None, False),  # a space in a name: h11 refuses
    ("GET", "/é", [HOST], None, False),  # not ASCII: h11 refuses
    ("GET", "/", [HOST, ("X-A", "é")], None, False),
    ("GET", "/a b", [HOST], None, False),
    ("POST", "/", [HOST, ("Content-Length", "3")], b"{}", False),  # h11 refuses the length
    ("POST", "/", [HOST, ("Content-Length", "2"), ("content-length", "2")], b"{}", False),
    ("POST", "/", [HOST, ("Transfer-Encoding", "chunked")], b"{}", False),
])
def test_a_plain_head_is_written_by_hand_as_h11_writes_it(method, target, headers, body,
                                                          by_hand):
    """The first request goes out before h11 is imported (issue 26.5): its head is written by
    hand, byte for byte as h11 writes it; anything outside that plain subset is left to h11,
    which checks it (and refuses some of it, as before)."""
    from ragmeter.backends._wire import _head_bytes

    written = _head_bytes(method, target, headers, body)
    assert (written is not None) == by_hand
    if written is not None:
        assert written + (body or b"") == _h11_bytes(method, target, headers, body)


def test_hand_written_heads_match_h11_for_any_header():
    """Any header h11 writes either goes by hand, byte for byte, or is left to h11; nothing
    h11 refuses is written by hand."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from ragmeter.backends._wire import _head_bytes

    # mostly plain names and values (spaces and tabs anywhere), now and then a bad character
    name = st.text(alphabet="aZ09-_.!~", min_size=1, max_size=5) | st.text("a :é(", max_size=3)
    value = (st.text(alphabet='ab/:"( \t', max_size=6)
             | st.text(alphabet="a\r\né\x7f\x00", max_size=3))

    @settings(max_examples=400, deadline=None)
    @given(st.lists(st.tuples(name, value), max_size=3), st.sampled_from(["GET", "POST", "P T"]),
           st.sampled_from(["/", "/v1?q=1", "/a b", ""]))
    def check(extra, method, target):
        headers = [HOST, *extra]
        written = _head_bytes(method, target, headers, None)
        if written is not None:
            assert written == _h11_bytes(method, target, headers, None)

    check()
