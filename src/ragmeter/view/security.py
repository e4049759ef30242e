"""Access rules of the web app: allowed Host names, the access token, CSRF tokens, headers.

* **Host check** (DNS rebinding): a request is served only when its ``Host`` header names the
  address the app listens on (or ``localhost``/``127.0.0.1`` for a loopback bind).
* **Token**: required when the app binds to anything but loopback (or when one was given).  It
  comes as ``Authorization: Bearer TOKEN``, or once as ``?token=TOKEN``, which sets an
  HttpOnly SameSite=Strict cookie and redirects to the same URL without it.  Anything else is
  answered 401.  Tokens are compared in constant time.
* **CSRF**: every POST carries the ``csrf`` field of the form the app rendered (one secret per
  server process, compared in constant time) and, when the browser sends one, an ``Origin``
  equal to the app's own.
* **Headers**: a Content-Security-Policy allowing only the app's own script and styles (no
  inline script, no network elsewhere), ``nosniff``, no framing, referrers only to itself
  (``no-referrer`` would make browsers send ``Origin: null`` with forms).
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qsl, urlencode

__all__ = ["Security", "LOOPBACK", "COOKIE", "is_loopback", "SecurityMiddleware"]

LOOPBACK = ("127.0.0.1", "::1", "localhost")
COOKIE = "ragmeter_view_token"
CSP = ("default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
       "img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; "
       "frame-ancestors 'none'")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def is_loopback(host: str) -> bool:
    return host in LOOPBACK or host.startswith("127.")


@dataclass
class Security:
    """The settings of one server: where it listens, its token (None: none needed)."""

    host: str = "127.0.0.1"
    port: int = 8000
    token: str | None = None
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(32))

    @classmethod
    def for_bind(cls, host: str, port: int, token: str | None) -> tuple[Security, bool]:
        """Settings for a bind; a token is generated when one is needed and none was given.

        Returns the settings and whether the token was generated (then it must be printed).
        """
        generated = False
        if token is None and not is_loopback(host):
            token, generated = secrets.token_urlsafe(24), True
        return cls(host=host, port=port, token=token), generated

    def allowed_hosts(self) -> set[str]:
        names = {self.host}
        if is_loopback(self.host):
            names |= {"127.0.0.1", "localhost", "[::1]"}
        if self.host in ("0.0.0.0", "::"):
            return set()  # any name: the token is what protects a wildcard bind
        return {f"{n}:{self.port}" for n in names} | names

    def token_ok(self, given: str | None) -> bool:
        return self.token is None or (given is not None and hmac.compare_digest(
            given.encode(), self.token.encode()))

    def csrf_ok(self, given: str | None) -> bool:
        return given is not None and hmac.compare_digest(given.encode(), self.csrf.encode())


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers") or []:
        if key == name:
            return str(value.decode("latin-1"))
    return None


async def _plain(send: Send, status: int, text: str,
                 extra: list[tuple[bytes, bytes]] | None = None) -> None:
    body = text.encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                            (b"content-length", str(len(body)).encode()), *(extra or [])]})
    await send({"type": "http.response.body", "body": body})


class SecurityMiddleware:
    """ASGI middleware applying :class:`Security` to every HTTP request."""

    def __init__(self, app: ASGIApp, security: Security) -> None:
        self.app = app
        self.security = security

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        sec = self.security
        allowed = sec.allowed_hosts()
        host = (_header(scope, b"host") or "").lower()
        if allowed and host not in allowed:
            await _plain(send, 400, "ragmeter view: unexpected Host header.")
            return
        if sec.token is not None:
            query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
            auth = _header(scope, b"authorization") or ""
            bearer = auth[7:].strip() if auth.lower().startswith("bearer ") else None
            cookie = SimpleCookie(_header(scope, b"cookie") or "")
            from_cookie = cookie[COOKIE].value if COOKIE in cookie else None
            if "token" in query and sec.token_ok(query["token"]):
                rest = urlencode([(k, v) for k, v in parse_qsl(
                    scope.get("query_string", b"").decode("latin-1")) if k != "token"])
                location = scope.get("path", "/") + (f"?{rest}" if rest else "")
                value = f"{COOKIE}={sec.token}; HttpOnly; SameSite=Strict; Path=/"
                await send({"type": "http.response.start", "status": 303,
                            "headers": [(b"location", location.encode()),
                                        (b"set-cookie", value.encode()),
                                        (b"content-length", b"0")]})
                await send({"type": "http.response.body", "body": b""})
                return
            if not (sec.token_ok(bearer) if bearer is not None else sec.token_ok(from_cookie)):
                await _plain(send, 401, "ragmeter view: a token is required (the one printed "
                             "at start): open the URL with ?token=... once, or send "
                             "Authorization: Bearer ...",
                             [(b"www-authenticate", b'Bearer realm="ragmeter view"')])
                return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers") or [])
                headers += [(b"content-security-policy", CSP.encode()),
                            (b"x-content-type-options", b"nosniff"),
                            (b"x-frame-options", b"DENY"), (b"referrer-policy", b"same-origin"),
                            (b"cache-control", b"no-store")]
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, send_with_headers)
