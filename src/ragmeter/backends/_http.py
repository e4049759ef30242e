"""One HTTP exchange with a server ragmeter calls (an OpenAI-compatible model server, the
user's RAG application), and what its failures mean to the runner.

:func:`send` makes one request through a :class:`LoopClient` (plain ``http://`` over
:mod:`ragmeter.backends._wire`, anything else over httpx) and returns the reply and its latency, or raises :class:`~ragmeter.errors.BackendError` with the runner's reason codes:
``timeout`` and ``connection`` (retryable), ``http_429`` and ``http_5xx`` / 408 / 409
(retryable, honouring ``Retry-After``), any other ``http_4xx`` (not retryable).  It never
retries by itself (the runner does: policy wraps I/O).

:func:`post_stored` is the synchronous exchange of the pipeline steps that call a server
outside the runner (an embeddings endpoint, a ``/rerank`` endpoint): every reply is kept in
the store before it is read.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from ragmeter._util._redact import redact_text
from ragmeter.errors import BackendError

__all__ = ["send", "raise_for_status", "error_message", "parse_retry_after", "post_stored",
           "LoopClient", "RETRYABLE_4XX", "import_httpx"]

RETRYABLE_4XX = {408, 409}


def import_httpx() -> Any:
    """``import httpx``, without httpx's own command-line client: ``httpx/__init__`` imports
    ``httpx._main`` (rich, pygments, click; 30-90 ms of a process's start-up) and falls back to
    a stub ``httpx.main`` when that import fails, so ragmeter, which never runs that command,
    makes it fail.  Any other import error of httpx is raised as usual."""
    import sys

    if "httpx" in sys.modules:
        return sys.modules["httpx"]
    modules: dict[str, Any] = sys.modules  # type: ignore[assignment]
    blocked = "httpx._main" not in modules
    if blocked:
        modules["httpx._main"] = None  # `import httpx._main` raises ImportError
    try:
        import httpx
    except ImportError:
        if not blocked:
            raise
        del modules["httpx._main"]  # an httpx that cannot do without its _main: import it whole
        blocked = False
        import httpx
    finally:
        if blocked and modules.get("httpx._main", 0) is None:
            del modules["httpx._main"]
    return httpx


class LoopClient:
    """The pooled HTTP client for the running event loop: made on first use, made again when
    the loop changes (a client belongs to the loop it was opened on), closed by :meth:`close`
    (a backend's ``release``, awaited by the runner after each run).

    Plain ``http://`` URLs go through :class:`ragmeter.backends._wire.WireClient` (asyncio
    streams and h11: no httpx to import or set up before the first call, issue 26.5); any
    other URL through an ``httpx.AsyncClient`` with httpx's default certificate
    verification, made at the first request that needs it."""

    def __init__(self, *, headers: Mapping[str, str], timeout_s: float, max_connections: int,
                 base_url: str = "") -> None:
        self._headers = dict(headers)
        self._timeout_s = timeout_s
        self._max = max(1, int(max_connections))
        self._base_url = base_url.rstrip("/")
        self._client: _Dispatch | None = None
        self._loop: Any = None

    def get(self) -> _Dispatch:
        import asyncio

        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:
            self._client = _Dispatch(self)
            self._loop = loop
        return self._client

    async def close(self) -> None:
        client, self._client, self._loop = self._client, None, None
        if client is not None:
            await client.aclose()


class _Dispatch:
    """One loop's clients: a :class:`WireClient` for ``http://``, an ``httpx.AsyncClient``
    for anything else, each made at its first request."""

    def __init__(self, owner: LoopClient) -> None:
        self._owner = owner
        self._wire: Any = None
        self._httpx: Any = None

    async def request(self, method: str, url: str, *, content: str | bytes | None = None,
                      params: Mapping[str, Any] | None = None) -> Any:
        from ragmeter.backends._wire import WireClient, is_plain_http, join_url

        owner = self._owner
        full = join_url(owner._base_url, url)
        if is_plain_http(full):
            if self._wire is None:
                self._wire = WireClient(headers=owner._headers, timeout_s=owner._timeout_s,
                                        connect_s=min(owner._timeout_s, 30.0),
                                        max_connections=owner._max)
            return await self._wire.request(method, full, content=content, params=params)
        if self._httpx is None:
            httpx = import_httpx()
            limits = httpx.Limits(max_connections=owner._max,
                                  max_keepalive_connections=owner._max)
            self._httpx = httpx.AsyncClient(
                headers=owner._headers, limits=limits,
                timeout=httpx.Timeout(owner._timeout_s, connect=min(owner._timeout_s, 30.0)))
        return await self._httpx.request(method, full, content=content,
                                         params=dict(params) if params else None)

    async def aclose(self) -> None:
        wire, self._wire = self._wire, None
        client, self._httpx = self._httpx, None
        if wire is not None:
            await wire.aclose()
        if client is not None:
            await client.aclose()


def parse_retry_after(headers: Any, now: float | None = None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date)."""
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if not raw:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    import email.utils

    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def error_message(reply: Any) -> str:
    """The server's own words for a failed reply: OpenAI's ``{"error": {"message"}}``, an
    ``{"error": "..."}``, else the start of the body or the reason phrase."""
    try:
        err = reply.json().get("error")
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])
        if isinstance(err, str):
            return err
    except (ValueError, AttributeError):
        pass
    return reply.text[:200] or reply.reason_phrase


def raise_for_status(reply: Any, scrub: Callable[[str], str], unauthorized: str = "") -> None:
    """Raise the :class:`BackendError` a status of 400 or more means (see the module
    docstring); ``unauthorized`` is added to the detail of a 401 (how to give a key)."""
    status = reply.status_code
    if status < 400:
        return
    detail = scrub(error_message(reply))
    if status == 429:
        raise BackendError("http_429", detail, retryable=True,
                           retry_after=parse_retry_after(reply.headers))
    if status >= 500 or status in RETRYABLE_4XX:
        raise BackendError(f"http_{status}", detail, retryable=True,
                           retry_after=parse_retry_after(reply.headers))
    if status == 401:
        detail += unauthorized
    raise BackendError(f"http_{status}", detail, retryable=False)


def _failure_kind(exc: BaseException) -> str | None:
    """``timeout`` or ``connection`` for a transport failure of either client (the plain-http
    :class:`~ragmeter.backends._wire.WireClient` or httpx), None for anything else."""
    import sys

    from ragmeter.backends._wire import WireTimeout

    httpx = sys.modules.get("httpx")  # only an httpx client (https://) raises httpx's errors
    if isinstance(exc, WireTimeout) or (httpx is not None
                                        and isinstance(exc, httpx.TimeoutException)):
        return "timeout"
    if isinstance(exc, OSError) or (httpx is not None and isinstance(exc, httpx.TransportError)):
        return "connection"  # a WireError is an OSError
    return None


async def send(client: Any, method: str, url: str, *, where: str, timeout_s: float,
               scrub: Callable[[str], str], content: str | bytes | None = None,
               params: Mapping[str, Any] | None = None, unauthorized: str = ""
               ) -> tuple[Any, float]:
    """One request through ``client``: ``(reply, latency in ms)`` for a status below 400.

    ``where`` names the server in a connection error (already free of credentials);
    ``scrub`` removes secrets from any text that goes into an error.
    """
    start = time.perf_counter()
    try:
        reply = await client.request(method, url, content=content,
                                     params=dict(params) if params else None)
    except Exception as exc:
        kind = _failure_kind(exc)
        if kind == "timeout":
            raise BackendError("timeout", f"{type(exc).__name__} after {timeout_s:g} s",
                               retryable=True) from None
        if kind == "connection":
            raise BackendError("connection", scrub(f"{type(exc).__name__}: {exc} ({where})"),
                               retryable=True) from None
        raise
    latency_ms = (time.perf_counter() - start) * 1000.0
    raise_for_status(reply, scrub, unauthorized)
    return reply, latency_ms


def post_stored(url: str, body: Mapping[str, Any], identity: Mapping[str, Any], *,
                store: Any = None, api_key: str | None = None, timeout_s: float = 60.0,
                what: str = "the server", component: str = "ragmeter",
                request_id: str = "post") -> str:
    """The text of a server's reply to a JSON POST (an embeddings or ``/rerank`` endpoint), kept
    in ``store`` before it is returned and served from it on a re-run (keyed by the body and
    ``identity``).  One attempt: a failure is a :class:`~ragmeter.errors.ConfigError` naming
    ``what`` and the URL (without credentials); replies already stored stay stored, so a
    re-run resumes where this one stopped."""
    import json

    from ragmeter._util._redact import redact_url
    from ragmeter.backends._types import Message, Request, Response, Usage
    from ragmeter.errors import ConfigError

    httpx = import_httpx()
    request = Request(id=request_id, messages=(Message("user", json.dumps(
        body, ensure_ascii=False, sort_keys=True)),))
    key = request.cache_key(identity)
    if store is not None:
        cached = store.get(key)
        if cached is not None:
            return str(cached.text)
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    shown = redact_url(url)
    start = time.perf_counter()
    try:
        reply = httpx.post(url, json=body, headers=headers, timeout=timeout_s)
    except httpx.HTTPError as exc:
        raise ConfigError(f"{component}: cannot reach {what} at {shown} "
                          f"({redact_text(str(exc))}).") from None
    if reply.status_code != 200:
        raise ConfigError(f"{component}: {what} at {shown} answered HTTP {reply.status_code}: "
                          f"{redact_text(reply.text[:200])!r}")
    if store is not None:
        store.put(key, request, identity, Response(
            text=reply.text, usage=Usage(), latency_ms=(time.perf_counter() - start) * 1000))
    return str(reply.text)
