"""Access rules of the web app: allowed Host names, the access token, CSRF tokens, the one
bounded reader of request bodies, headers.

* **Host check** (DNS rebinding), on every request: the ``Host`` header must name the address the
  app listens on (or ``localhost``/``127.0.0.1`` for a loopback bind).  A wildcard bind
  (``0.0.0.0``, ``::``) accepts an IP address, ``localhost`` or this machine's own names: a
  rebinding attack always arrives under the attacker's domain name.
* **Token**: required when the app binds to anything but loopback (or when one was given); an
  empty token is refused at start (:func:`token_problem`).  It comes as ``Authorization:
  Bearer TOKEN``, or once as ``?token=TOKEN``, which sets an HttpOnly SameSite=Strict cookie and
  redirects to the same URL without it.  Anything else is answered 401.  Tokens are compared in
  constant time.
* **Bodies** (issue 29.1): a request that may carry a body (anything but GET and HEAD) goes
  through :meth:`SecurityMiddleware._read_form`, the only code that reads one.  Before reading a
  byte it refuses a request from another origin (``Origin`` or ``Sec-Fetch-Site``, which every
  browser sends with a POST), a body that is not a form, and a declared length over
  :data:`MAX_BODY_BYTES`; it then reads at most that many bytes (a chunked body is cut off
  there, not buffered), checks the form's ``csrf`` field (one secret per server process,
  compared in constant time) and hands the parsed form to the app in the request's scope
  (:data:`FORM_KEY`).  A refused request is answered at once and its connection closed, so the
  rest of a large body is never read.  A new POST route gets all of this without a line of its
  own.
* **Headers**: a Content-Security-Policy allowing only the app's own script and styles (no
  inline script, no network elsewhere), ``nosniff``, no framing, referrers only to itself
  (``no-referrer`` would make browsers send ``Origin: null`` with forms).
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
import socket
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qsl, urlencode

__all__ = ["Security", "LOOPBACK", "COOKIE", "is_loopback", "token_problem", "SecurityMiddleware",
           "MAX_BODY_BYTES", "FORM_KEY"]

LOOPBACK = ("127.0.0.1", "::1", "localhost")
COOKIE = "ragmeter_view_token"
CSP = ("default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
       "img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; "
       "frame-ancestors 'none'")

WILDCARD = ("0.0.0.0", "::")
MAX_BODY_BYTES = 64 * 1024  # the largest request body ever read (the app's forms are < 4 KiB)
MAX_FORM_FIELDS = 200
FORM_KEY = "ragmeter.form"  # where the checked form of a POST waits for the app, in its scope
_FORM_TYPE = "application/x-www-form-urlencoded"
_BODYLESS = ("GET", "HEAD")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

_SAFE_HEADERS = [(b"content-security-policy", CSP.encode()), (b"x-content-type-options", b"nosniff"),
                 (b"x-frame-options", b"DENY"), (b"referrer-policy", b"same-origin"),
                 (b"cache-control", b"no-store")]


def is_loopback(host: str) -> bool:
    return host in LOOPBACK or host.startswith("127.")


def token_problem(host: str, token: str | None) -> str | None:
    """Why ``token`` cannot protect a bind to ``host`` (None: it can).  An empty token would let
    anyone in with an empty cookie; on any address but loopback it would serve the whole app,
    job launching included, to the network (issue 29.4)."""
    if token is not None and not token.strip():
        where = "on loopback" if is_loopback(host) else f"on {host}"
        return (f"an empty token protects nothing {where}; give a real one, or none "
                + ("(loopback needs none)." if is_loopback(host)
                   else "(one is then generated and printed)."))
    return None


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name.strip("[]"))
    except ValueError:
        return False
    return True


def _split_host(header: str) -> tuple[str, int | None]:
    """``("example.org", 8000)`` from ``example.org:8000``, ``("[::1]", None)`` from ``[::1]``;
    a port that is not a number is -1."""
    if header.startswith("["):  # [v6] or [v6]:port
        name, _, rest = header.partition("]")
        name += "]"
        if not rest:
            return name, None
        port = rest[1:] if rest.startswith(":") else ""
    elif header.count(":") == 1:
        name, _, port = header.partition(":")
    else:
        return header, None
    return name, int(port) if port.isascii() and port.isdigit() else -1


@dataclass
class Security:
    """The settings of one server: where it listens, its token (None: none needed)."""

    host: str = "127.0.0.1"
    port: int = 8000
    token: str | None = None
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(32))

    def __post_init__(self) -> None:
        problem = token_problem(self.host, self.token)
        if problem is not None:
            from ragmeter.errors import ConfigError

            raise ConfigError(f"view: token={self.token!r}: {problem}")

    @classmethod
    def for_bind(cls, host: str, port: int, token: str | None) -> tuple[Security, bool]:
        """Settings for a bind; a token is generated when one is needed and none was given.

        Returns the settings and whether the token was generated (then it must be printed).
        An empty ``token`` is refused (ConfigError): it would protect nothing.
        """
        generated = False
        if token is None and not is_loopback(host):
            token, generated = secrets.token_urlsafe(24), True
        return cls(host=host, port=port, token=token), generated

    def allowed_hosts(self) -> set[str]:
        """The names a ``Host`` header may carry (with or without this port); a wildcard bind
        also accepts any IP address (:meth:`host_ok`)."""
        names = {self.host}
        if is_loopback(self.host) or self.host in WILDCARD:
            names |= {"127.0.0.1", "localhost", "[::1]"}
        if self.host in WILDCARD:
            names = (names - set(WILDCARD)) | _own_names()
        return {f"{n}:{self.port}" for n in names} | names

    def host_ok(self, header: str | None) -> bool:
        """Whether a request's ``Host`` header names this app (always checked)."""
        host = (header or "").strip().lower()
        if not host:
            return False
        if host in self.allowed_hosts():
            return True
        if self.host not in WILDCARD:
            return False
        name, port = _split_host(host)
        return _is_ip(name) and port in (None, self.port)

    def token_ok(self, given: str | None) -> bool:
        return self.token is None or (given is not None and hmac.compare_digest(
            given.encode(), self.token.encode()))

    def csrf_ok(self, given: str | None) -> bool:
        return given is not None and hmac.compare_digest(given.encode(), self.csrf.encode())


def _own_names() -> set[str]:
    """This machine's host names (a wildcard bind is reached under them, or an IP address)."""
    names = set()
    for name in (socket.gethostname(), socket.getfqdn()):
        if name:
            names.add(name.lower())
    return names


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
                            (b"content-length", str(len(body)).encode()), *(extra or []),
                            *_SAFE_HEADERS]})
    await send({"type": "http.response.body", "body": body})


async def _refuse(send: Send, status: int, text: str) -> None:
    """A refusal that also closes the connection: the rest of the body is never read."""
    await _plain(send, status, text, [(b"connection", b"close")])


def _after_body(receive: Receive) -> Receive:
    """The app's ``receive`` once the middleware has read the body: first an empty, final
    body message, then the connection's own messages (its ``http.disconnect``), as ASGI has
    it."""
    done = False

    async def replayed() -> Message:
        nonlocal done
        if not done:
            done = True
            return {"type": "http.request", "body": b"", "more_body": False}
        return await receive()

    return replayed


def _declared_length(scope: Scope) -> int | None:
    """The request's Content-Length (None when absent, -1 when not a number)."""
    value = _header(scope, b"content-length")
    if value is None:
        return None
    value = value.strip()
    return int(value) if value.isascii() and value.isdigit() else -1


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
        if not sec.host_ok(_header(scope, b"host")):
            await _refuse(send, 400, "ragmeter view: unexpected Host header.")
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
                             [(b"www-authenticate", b'Bearer realm="ragmeter view"'),
                              (b"connection", b"close")])
                return

        if scope.get("method") not in _BODYLESS:
            form = await self._read_form(scope, receive, send)
            if form is None:
                return
            scope[FORM_KEY] = form
            receive = _after_body(receive)
        elif _declared_length(scope) not in (None, 0):
            await _refuse(send, 413, "ragmeter view: a GET or HEAD request carries no body.")
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*list(message.get("headers") or []), *_SAFE_HEADERS]
            await send(message)

        await self.app(scope, receive, send_with_headers)

    async def _read_form(self, scope: Scope, receive: Receive, send: Send
                         ) -> dict[str, str] | None:
        """The form of a request with a body, or None once it was refused (answered here).

        In this order, and before reading anything: the request comes from the app's own pages
        (``Origin``, ``Sec-Fetch-Site``), it is a form, its declared length is within
        :data:`MAX_BODY_BYTES`.  Then at most that many bytes are read, and the form's CSRF
        token is checked."""
        origin = _header(scope, b"origin")
        own = f"{scope.get('scheme', 'http')}://{(_header(scope, b'host') or '').lower()}"
        site = (_header(scope, b"sec-fetch-site") or "").lower()
        if (origin is not None and origin.lower() != own) or site in ("cross-site", "same-site"):
            await _refuse(send, 403, "ragmeter view: a form from another site is refused; "
                                     "submit it from the app's own page.")
            return None
        kind = (_header(scope, b"content-type") or "").split(";")[0].strip().lower()
        if kind != _FORM_TYPE:
            await _refuse(send, 415, f"ragmeter view: only forms ({_FORM_TYPE}) are accepted.")
            return None
        declared = _declared_length(scope)
        if declared == -1 or (declared or 0) > MAX_BODY_BYTES:
            await _refuse(send, 413, "ragmeter view: form too large.")
            return None
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            body += message.get("body", b"")
            if len(body) > MAX_BODY_BYTES:
                await _refuse(send, 413, "ragmeter view: form too large.")
                return None
            if not message.get("more_body", False):
                break
        try:
            pairs = parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True,
                              max_num_fields=MAX_FORM_FIELDS)
        except ValueError:
            await _refuse(send, 413, "ragmeter view: form with too many fields.")
            return None
        form = dict(pairs)
        if not self.security.csrf_ok(form.get("csrf")):
            await _refuse(send, 403, "ragmeter view: the form's CSRF token is wrong; reload "
                                     "the page and submit again.")
            return None
        return form
