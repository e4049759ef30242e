"""HTTP/1.1 for plain ``http://`` servers over asyncio streams, the protocol parsed by ``h11``.

A judged command spends most of its start-up importing and setting up httpx (httpx, httpcore,
anyio and their transport: ~80 ms before the first call, issue 26.5), while a local model
server or the user's RAG application speaks plain http on 127.0.0.1.  :class:`WireClient` does
for those what ``httpx.AsyncClient`` did, with the same meaning for the runner:

- a keep-alive pool of at most ``max_connections`` connections (a request waits for a free one
  up to the timeout: :class:`PoolTimeout`); an idle connection the server has closed is
  dropped, never reused; a reply that ends the connection (``Connection: close``, a body read
  to the end of the stream) closes it;
- the timeouts of ``httpx.Timeout(timeout_s, connect=connect_s)``: connecting, waiting for a
  free connection, each write and each read (not the whole exchange);
- failures raised as :class:`WireTimeout` (``ConnectTimeout``, ``ReadTimeout``,
  ``WriteTimeout``, ``PoolTimeout``) and :class:`WireError` (``ConnectError``, ``ReadError``,
  ``WriteError``, ``RemoteProtocolError``), named as httpx names them, which
  :func:`ragmeter.backends._http.send` classifies as ``timeout`` and ``connection``;
- no redirects followed, ``gzip``/``deflate`` bodies decoded, credentials in the URL sent as
  HTTP Basic authorization, query ``params`` merged into the URL's own query.

It never retries (the runner does).  ``https://`` stays with httpx (certificate handling).
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit

from ragmeter._util._aio import within
from ragmeter._version import __version__

if TYPE_CHECKING:
    import h11

__all__ = ["WireClient", "WireReply", "WireTimeout", "WireError", "is_plain_http", "join_url"]

_READ_SIZE = 65536


class WireTimeout(TimeoutError):
    """A timeout of the plain-http client (its class name says which, as in httpx)."""


class ConnectTimeout(WireTimeout):
    pass


class ReadTimeout(WireTimeout):
    pass


class WriteTimeout(WireTimeout):
    pass


class PoolTimeout(WireTimeout):
    pass


class WireError(OSError):
    """A transport failure of the plain-http client (its class name says which)."""


class ConnectError(WireError):
    pass


class ReadError(WireError):
    pass


class WriteError(WireError):
    pass


class RemoteProtocolError(WireError):
    pass


def join_url(base_url: str, url: str) -> str:
    """``url`` under ``base_url`` (``/v1`` + ``/chat/completions`` = ``/v1/chat/completions``,
    as httpx joins them); an absolute ``url``, or no ``base_url``, is returned as is."""
    if "://" in url[:16] or not base_url:
        return url
    return f"{base_url.rstrip('/')}/{url.lstrip('/')}"


def is_plain_http(url: str) -> bool:
    """Whether ``url`` is an absolute ``http://`` URL (served by :class:`WireClient`)."""
    return url[:7].lower() == "http://"


class WireReply:
    """A reply: ``status_code``, ``reason_phrase``, ``headers`` (case-insensitive ``get``),
    ``content`` (bytes, decoded from gzip/deflate), ``text`` and ``json()`` as httpx's."""

    __slots__ = ("status_code", "reason_phrase", "headers", "content")

    def __init__(self, status_code: int, reason_phrase: str, headers: _Headers,
                 content: bytes) -> None:
        self.status_code = status_code
        self.reason_phrase = reason_phrase
        self.headers = headers
        self.content = content

    @property
    def text(self) -> str:
        """The body as text: the charset the Content-Type names, else UTF-8 (errors
        replaced), as httpx decodes it."""
        charset = _charset(self.headers.get("content-type"))
        try:
            return self.content.decode(charset or "utf-8", errors="replace")
        except LookupError:  # a charset Python does not know
            return self.content.decode("utf-8", errors="replace")

    def json(self) -> Any:
        """The body parsed as JSON (``ValueError`` when it is not JSON)."""
        return json.loads(self.content)


class _Headers:
    """Reply headers: names case-insensitive, repeated values joined by ``", "``."""

    __slots__ = ("_items",)

    def __init__(self, items: list[tuple[bytes, bytes]]) -> None:
        merged: dict[str, str] = {}
        for name, value in items:
            key = name.decode("latin-1").lower()
            text = value.decode("latin-1")
            merged[key] = f"{merged[key]}, {text}" if key in merged else text
        self._items = merged

    def get(self, name: str, default: str | None = None) -> str | None:
        return self._items.get(name.lower(), default)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self._items


def _charset(content_type: str | None) -> str | None:
    for part in (content_type or "").split(";")[1:]:
        key, _, value = part.partition("=")
        if key.strip().lower() == "charset":
            return value.strip().strip('"') or None
    return None


def _decode_body(body: bytes, encoding: str | None) -> bytes:
    """The body without its Content-Encoding (gzip, deflate; anything else as is, as httpx)."""
    codings = [c.strip().lower() for c in (encoding or "").split(",") if c.strip()]
    if not codings or not body:
        return body
    import zlib

    for coding in reversed(codings):
        try:
            if coding in ("gzip", "x-gzip"):
                body = zlib.decompress(body, zlib.MAX_WBITS | 16)
            elif coding == "deflate":
                try:
                    body = zlib.decompress(body)
                except zlib.error:
                    body = zlib.decompress(body, -zlib.MAX_WBITS)
        except zlib.error as exc:
            raise RemoteProtocolError(f"cannot decode the {coding} body: {exc}") from None
    return body


class _Target:
    """Where a URL points: the pool key, the Host header, the request target, Basic auth."""

    __slots__ = ("key", "host", "port", "host_header", "target", "authorization")

    def __init__(self, url: str, params: Mapping[str, Any] | None) -> None:
        parts = urlsplit(url)
        if parts.hostname is None:
            raise ConnectError(f"no host in the URL {url!r}")
        self.host = parts.hostname
        try:
            port = parts.port
        except ValueError as exc:
            raise ConnectError(str(exc)) from None
        self.port = 80 if port is None else port
        self.key = (self.host, self.port)
        shown = f"[{self.host}]" if ":" in self.host else self.host
        self.host_header = shown if self.port == 80 else f"{shown}:{self.port}"
        query = parts.query
        if params:
            merged = dict(parse_qsl(query, keep_blank_values=True))
            merged.update({str(k): str(v) for k, v in params.items()})
            query = urlencode(merged)
        self.target = (parts.path or "/") + (f"?{query}" if query else "")
        self.authorization: str | None = None
        if parts.username is not None or parts.password is not None:
            import base64

            pair = f"{unquote(parts.username or '')}:{unquote(parts.password or '')}"
            self.authorization = "Basic " + base64.b64encode(pair.encode("utf-8")).decode()


# What h11 accepts in a request line and a header (its _abnf.py: a token, a field value of
# visible characters with inner spaces and tabs), narrowed to ASCII.
_TOKEN = "!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def _head_bytes(method: str, target: str, headers: list[tuple[str, str]],
                body: bytes | None) -> bytes | None:
    """The request's head as h11 would write it, or None where h11 must write (and check)
    it: a name, value or target outside the plain subset, no or two Host headers, a
    Transfer-Encoding, a Content-Length other than the body's own.  Written by hand, the first
    request goes out before h11 is imported (issue 26.5)."""
    if not (method and method.isascii() and not method.strip(_TOKEN)):
        return None
    if not (target and target.isascii() and target.isprintable() and " " not in target):
        return None
    hosts, lengths, lines = [], 0, []
    for name, value in headers:
        if not (isinstance(name, str) and isinstance(value, str) and name and name.isascii()
                and not name.strip(_TOKEN)):
            return None
        spaced = value.replace("\t", " ")
        if not (spaced.isascii() and spaced.isprintable() and spaced == spaced.strip(" ")):
            return None
        lower = name.lower()
        line = f"{name}: {value}\r\n"
        if lower == "host":
            hosts.append(line)
            continue
        if lower == "transfer-encoding":
            return None
        if lower == "content-length":
            lengths += 1
            if body is None or value != str(len(body)):
                return None
        lines.append(line)
    if len(hosts) != 1 or lengths != (body is not None):
        return None
    return "".join([f"{method} {target} HTTP/1.1\r\n", *hosts, *lines, "\r\n"]).encode("ascii")


class _Head:
    """A request's line and headers; ``written``: its bytes by :func:`_head_bytes`, or None and
    ``checked``: the h11 request that checks and writes it (made here, so a head h11 refuses
    raises before any connection is taken).  Heads are written by hand only while h11 is not
    imported yet: once it is, h11 writes them (it must see each request anyway, to parse the
    reply, so a hand-written head is serialized twice)."""

    __slots__ = ("method", "target", "headers", "written", "checked")

    def __init__(self, method: str, target: str, headers: list[tuple[str, str]],
                 body: bytes | None) -> None:
        self.method, self.target, self.headers = method, target, headers
        self.written = (_head_bytes(method, target, headers, body)
                        if "h11" not in sys.modules else None)
        self.checked: h11.Request | None = None
        if self.written is None:
            import h11

            self.checked = h11.Request(method=method, target=target, headers=headers)


class _Connection:
    """One keep-alive connection: the streams and the h11 state machine (made at its first
    exchange, once the first request has gone out)."""

    __slots__ = ("key", "reader", "writer", "h11")

    def __init__(self, key: tuple[str, int], reader: asyncio.StreamReader,
                 writer: asyncio.StreamWriter) -> None:
        self.key = key
        self.reader = reader
        self.writer = writer
        self.h11: h11.Connection | None = None

    def protocol(self) -> h11.Connection:
        if self.h11 is None:
            import h11

            self.h11 = h11.Connection(our_role=h11.CLIENT)
        return self.h11

    def usable(self) -> bool:
        """Idle and still open: the server has not closed it (nor sent anything unasked)."""
        import h11

        return (self.h11 is not None and self.h11.our_state is h11.IDLE
                and not self.writer.is_closing() and not self.reader.at_eof()
                and self.reader.exception() is None)

    def close(self) -> None:
        self.writer.close()

    def _send(self, head: _Head, content: bytes | None) -> bytes:
        """The request through h11's state machine: the bytes h11 writes for it."""
        import h11

        conn = self.protocol()
        try:
            data = conn.send(head.checked or h11.Request(
                method=head.method, target=head.target, headers=head.headers)) or b""
            if content:
                data += (conn.send(h11.Data(data=content)) or b"")
            data += (conn.send(h11.EndOfMessage()) or b"")
        except h11.LocalProtocolError as exc:
            raise RemoteProtocolError(str(exc)) from None
        return data

    async def exchange(self, head: _Head, content: bytes | None, read_s: float,
                       write_s: float) -> WireReply:
        data = (head.written + (content or b"") if head.written is not None
                else self._send(head, content))
        try:
            self.writer.write(data)
            await within(write_s, self.writer.drain())
        except asyncio.TimeoutError:
            raise WriteTimeout("timed out writing the request") from None
        except OSError as exc:
            raise WriteError(str(exc) or type(exc).__name__) from None
        import h11  # the first request is out: the reply is h11's to parse

        if head.written is not None:  # h11 learns of the request sent by hand
            self._send(head, content)
        conn = self.protocol()
        status, reason, headers, chunks = 0, "", _Headers([]), []
        while True:
            try:
                event = conn.next_event()
            except h11.RemoteProtocolError as exc:
                raise RemoteProtocolError(str(exc)) from None
            if event is h11.NEED_DATA:
                try:
                    chunk = await within(read_s, self.reader.read(_READ_SIZE))
                except asyncio.TimeoutError:
                    raise ReadTimeout("timed out reading the reply") from None
                except OSError as exc:
                    raise ReadError(str(exc) or type(exc).__name__) from None
                conn.receive_data(chunk)  # b"" tells h11 the server closed the connection
            elif isinstance(event, h11.Response):
                status, headers = event.status_code, _Headers(list(event.headers))
                reason = event.reason.decode("latin-1")
            elif isinstance(event, h11.Data):
                chunks.append(bytes(event.data))
            elif isinstance(event, h11.EndOfMessage):
                break
            elif isinstance(event, h11.ConnectionClosed):
                raise RemoteProtocolError("Server disconnected without sending a response.")
            # an InformationalResponse (1xx) is skipped: the final reply follows
        body = _decode_body(b"".join(chunks), headers.get("content-encoding"))
        return WireReply(status, reason, headers, body)

    def finish(self) -> bool:
        """After a complete exchange: ready for the next request (True) or to be closed."""
        import h11

        conn = self.h11
        if conn is not None and conn.our_state is h11.DONE and conn.their_state is h11.DONE:
            conn.start_next_cycle()
            return True
        return False


class WireClient:
    """A pooled keep-alive HTTP/1.1 client for ``http://`` URLs on the running event loop
    (see the module docstring); ``request`` has the shape of ``httpx.AsyncClient.request``."""

    def __init__(self, *, headers: Mapping[str, str], timeout_s: float, connect_s: float,
                 max_connections: int, base_url: str = "") -> None:
        self._base_url = base_url.rstrip("/")
        self._headers = {"Accept": "*/*", "Accept-Encoding": "gzip, deflate",
                         "Connection": "keep-alive", "User-Agent": f"ragmeter/{__version__}"}
        for name, value in headers.items():  # the caller's headers replace ours, any case
            for ours in [k for k in self._headers if k.lower() == name.lower()]:
                del self._headers[ours]
            self._headers[name] = value
        self._timeout_s = timeout_s
        self._connect_s = connect_s
        self._max = max(1, int(max_connections))
        self._slots = asyncio.Semaphore(self._max)
        self._idle: list[_Connection] = []
        self._open = 0  # connections open (in use or idle)

    async def request(self, method: str, url: str, *, content: str | bytes | None = None,
                      params: Mapping[str, Any] | None = None) -> WireReply:
        target = _Target(join_url(self._base_url, url), params)
        body = content.encode("utf-8") if isinstance(content, str) else content
        headers = [("Host", target.host_header), *self._headers.items()]
        if target.authorization is not None:
            headers = [(k, v) for k, v in headers if k.lower() != "authorization"]
            headers.append(("Authorization", target.authorization))
        if body is not None:
            headers.append(("Content-Length", str(len(body))))
        head = _Head(method.upper(), target.target, headers, body)
        try:
            await within(self._timeout_s, self._slots.acquire())
        except asyncio.TimeoutError:
            raise PoolTimeout("no free connection in time") from None
        try:
            conn = await self._connection(target)
            try:
                reply = await conn.exchange(head, body, self._timeout_s, self._timeout_s)
            except BaseException:
                self._drop(conn)
                raise
            if conn.finish():
                self._idle.append(conn)
            else:
                self._drop(conn)
            return reply
        finally:
            self._slots.release()

    async def _connection(self, target: _Target) -> _Connection:
        while True:  # an idle connection to this server that is still open, newest first
            found = next((c for c in reversed(self._idle) if c.key == target.key), None)
            if found is None:
                break
            self._idle.remove(found)
            if found.usable():
                return found
            self._drop(found)
        if self._open >= self._max and self._idle:  # make room: close the oldest idle one
            self._drop(self._idle.pop(0))
        try:
            reader, writer = await within(self._connect_s, asyncio.open_connection(
                target.host, target.port, limit=_READ_SIZE * 4))
        except asyncio.TimeoutError:
            raise ConnectTimeout(f"timed out connecting to {target.host_header}") from None
        except OSError as exc:  # worded as httpx words it
            import socket

            raise ConnectError(str(exc) if isinstance(exc, socket.gaierror)
                               else "All connection attempts failed") from None
        self._open += 1
        return _Connection(target.key, reader, writer)

    def _drop(self, conn: _Connection) -> None:
        self._open -= 1
        conn.close()

    async def aclose(self) -> None:
        """Close the idle connections (the runner calls this when no request is running)."""
        idle, self._idle = self._idle, []
        for conn in idle:
            self._drop(conn)
        for conn in idle:
            try:
                await conn.writer.wait_closed()
            except OSError:
                pass
