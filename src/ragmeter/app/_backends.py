"""An application as the runner sees it: a backend whose request is one test-set row and whose
response is the application's raw reply.

The runner then gives an application everything it gives a model: the store (every reply is
committed before it is read, so a run killed with ``kill -9`` resumes without calling the
application again for a stored row), claims between processes, concurrency, a
requests-per-minute limit, retries with backoff honouring ``Retry-After``, timeouts, progress
and ``--dry-run``.  The reply is kept as it came (the body of an HTTP reply, the JSON of what a
function returned) and read afterwards (:mod:`ragmeter.app._reply`), so a changed field path
re-reads stored replies instead of calling again.

Request content (what enters the store's key with the backend's identity): for HTTP the method
and the filled template; for a function the question (and the row, when the function takes
one).  The identity names the application (URL without credentials, or module:function) and
its ``version``; never a header, a key or the label.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import time
from collections.abc import Callable, Mapping
from typing import Any

from ragmeter._util._redact import redact_text, redact_url
from ragmeter.app._types import DEFAULT_TEMPLATE, AppCalls, ChatApp, FunctionApp, HttpApp
from ragmeter.backends._http import LoopClient
from ragmeter.backends._types import BaseBackend, Capabilities, Message, Request, Response
from ragmeter.errors import BackendError, ConfigError

__all__ = ["HttpAppBackend", "FunctionAppBackend", "backend_for", "payload_request",
           "resolve_function", "function_name", "target_url"]

_ENV = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def payload_request(case_id: str, payload: Mapping[str, Any]) -> Request:
    """The runner's request for one row: its payload as canonical JSON in one message."""
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return Request(id=case_id, messages=(Message("user", text),))


def _payload(request: Request) -> dict[str, Any]:
    payload: dict[str, Any] = json.loads(request.messages[0].content)
    return payload


def expand_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """Header values with ``${NAME}`` replaced by the environment variable NAME;
    :class:`ConfigError` naming the variable when it is not set."""
    out = {}
    for name, value in headers.items():
        def env(m: re.Match[str], header: str = name) -> str:
            found = os.environ.get(m.group(1))
            if found is None:
                raise ConfigError(f"app: the header {header!r} needs the environment variable "
                                  f"{m.group(1)}, which is not set. Fix: export it, or drop "
                                  "the header.")
            return found
        out[str(name)] = _ENV.sub(env, str(value))
    return out


def target_url(target: HttpApp | ChatApp) -> str:
    """The URL a target's calls go to (credentials included: for requests only)."""
    if isinstance(target, ChatApp):
        base = target.base_url.rstrip("/")
        return base if base.endswith("/chat/completions") else base + "/chat/completions"
    return target.url


class HttpAppBackend(BaseBackend):
    """An application behind an HTTP endpoint (JSON in, any body out)."""

    name = "app"
    capabilities = Capabilities(remote=True)

    def __init__(self, url: str, method: str = "POST", headers: Mapping[str, str] | None = None,
                 timeout_s: float = 60.0, max_connections: int = 4, kind: str = "http",
                 model: str | None = None, version: str | None = None) -> None:
        self._url = url  # may hold credentials: used for requests only, never shown or stored
        self.url = redact_url(url)
        self.method = method.upper()
        self._headers = expand_headers(headers or {})  # may hold secrets: never shown
        self.timeout_s = timeout_s
        self.kind = kind
        self.model = model
        self.version = version
        self._pool = LoopClient(headers={"Content-Type": "application/json", **self._headers},
                                timeout_s=timeout_s, max_connections=max_connections)

    def __repr__(self) -> str:
        return f"HttpAppBackend({self.method} {self.url})"

    def identity(self) -> dict[str, Any]:
        ident: dict[str, Any] = {"backend": self.name, "kind": self.kind, "url": self.url,
                                 "method": self.method}
        if self.model is not None:
            ident["model"] = self.model
        if self.version is not None:
            ident["version"] = self.version
        return ident

    def _scrub(self, text: str) -> str:
        for secret in self._headers.values():
            if len(secret) >= 8:
                text = text.replace(secret, "***")
        if self._url != self.url:
            text = text.replace(self._url, self.url)
        return redact_text(text)[:300]

    def _http(self) -> Any:
        return self._pool.get()

    async def release(self) -> None:
        await self._pool.close()

    async def complete(self, request: Request) -> Response:
        from ragmeter.backends._http import send

        body = _payload(request)["body"]
        if self.method == "GET":
            params = {k: v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)
                      for k, v in (body.items() if isinstance(body, Mapping) else ())}
            reply, latency = await send(self._http(), "GET", self._url, where=self.url,
                                        timeout_s=self.timeout_s, scrub=self._scrub,
                                        params=params)
        else:
            reply, latency = await send(self._http(), self.method, self._url, where=self.url,
                                        timeout_s=self.timeout_s, scrub=self._scrub,
                                        content=json.dumps(body, ensure_ascii=False))
        return Response(text=reply.text, latency_ms=latency, finish_reason="stop")


# ------------------------------------------------------------------ Python functions


def function_name(function: str | Callable[..., Any]) -> str:
    """``module:qualname`` of a function (what names it in the output and the store)."""
    if isinstance(function, str):
        return function.strip()
    module = getattr(function, "__module__", None) or "?"
    name = getattr(function, "__qualname__", None) or type(function).__qualname__
    return f"{module}:{name}"


def resolve_function(function: str | Callable[..., Any]) -> Callable[..., Any]:
    """The callable a :class:`FunctionApp` names; ``"package.module:function"`` is imported
    (the current folder first, as ``python -m`` would); a :class:`ConfigError` says what is
    wrong with the name."""
    if not isinstance(function, str):
        if not callable(function):
            raise ConfigError(f"app: function={function!r} is not callable.")
        return function
    import importlib
    import sys

    module_name, sep, attr = function.strip().partition(":")
    if not sep or not module_name or not attr:
        raise ConfigError(f"app: --function {function!r} is not of the form "
                          "package.module:function. Fix: e.g. --function myapp.rag:answer.")
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise ConfigError(f"app: cannot import {module_name!r} for --function {function} "
                          f"({exc}). Fix: run ragmeter from the folder that holds it, or "
                          "install its package.") from None
    except Exception as exc:  # the user's module failed while importing: say how
        raise ConfigError(f"app: importing {module_name!r} for --function {function} raised "
                          f"{type(exc).__name__}: {exc}") from None
    target: Any = module
    for part in attr.split("."):
        if not hasattr(target, part):
            from ragmeter.errors import did_you_mean

            names = [n for n in dir(target) if not n.startswith("_")]
            hints = did_you_mean(part, names)
            hint = f" Did you mean: {', '.join(hints)}?" if hints else ""
            raise ConfigError(f"app: {module_name!r} has no {attr!r} (--function "
                              f"{function}).{hint}")
        target = getattr(target, part)
    if not callable(target):
        raise ConfigError(f"app: {function} is a {type(target).__name__}, not a function.")
    return target  # type: ignore[no-any-return]


def takes_row(function: Callable[..., Any]) -> bool:
    """Whether ``function`` has a parameter named ``row`` (it then gets the test-set row)."""
    import inspect

    try:
        return "row" in inspect.signature(function).parameters
    except (TypeError, ValueError):
        return False


def _is_async(function: Callable[..., Any]) -> bool:
    import inspect

    if inspect.iscoroutinefunction(function):
        return True
    call = type(function).__call__ if not inspect.isroutine(function) else None
    return call is not None and inspect.iscoroutinefunction(call)


def jsonable(value: Any, depth: int = 0) -> Any:
    """What a function returned as plain JSON values: dataclasses, pydantic models and objects
    with attributes become dicts (a LangChain document keeps ``page_content`` and
    ``metadata``); anything else unknown becomes its text."""
    import dataclasses

    if depth > 20:
        return str(value)
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        return value if value == value and value not in (float("inf"), float("-inf")) else None
    if isinstance(value, Mapping):
        return {str(k): jsonable(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [jsonable(v, depth + 1) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: jsonable(getattr(value, f.name), depth + 1)
                for f in dataclasses.fields(value)}
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return jsonable(dump(), depth + 1)
    if hasattr(value, "page_content"):
        return {"page_content": jsonable(value.page_content, depth + 1),
                "metadata": jsonable(getattr(value, "metadata", {}), depth + 1)}
    item = getattr(value, "item", None)  # numpy scalars
    if callable(item) and type(value).__module__ == "numpy":
        return jsonable(item(), depth + 1)
    attrs = getattr(value, "__dict__", None)
    if isinstance(attrs, dict) and attrs:
        return {k: jsonable(v, depth + 1) for k, v in attrs.items() if not k.startswith("_")}
    return str(value)


def reply_of(returned: Any) -> dict[str, Any]:
    """What a function returned, as the reply object that is stored (see
    :class:`~ragmeter.app._types.FunctionApp`)."""
    if isinstance(returned, str) or returned is None:
        return {"answer": returned}
    if isinstance(returned, tuple) and 2 <= len(returned) <= 3:
        out = {"answer": jsonable(returned[0]), "contexts": jsonable(returned[1])}
        if len(returned) == 3:
            out["retrieved_ids"] = jsonable(returned[2])
        return out
    value = jsonable(returned)
    return value if isinstance(value, dict) else {"answer": value}


def code_fingerprint(function: Callable[..., Any]) -> str | None:
    """A short hash of a function's own source (else of its bytecode), so that editing the
    function makes it a new application for the store; None when neither can be read.  What
    it calls (a retriever, an index) is not covered: that is what ``version`` is for."""
    import hashlib
    import inspect

    target = function
    if not inspect.isroutine(target) and callable(target):
        target = type(target).__call__
    try:
        text = inspect.getsource(target).encode("utf-8")
    except (OSError, TypeError):
        code = getattr(target, "__code__", None)
        if code is None:
            return None
        text = code.co_code + repr(code.co_consts).encode("utf-8")
    return hashlib.sha256(text).hexdigest()[:12]


class FunctionAppBackend(BaseBackend):
    """An application called in this process: a sync function (run in worker threads, up to
    ``concurrency`` at once; it cannot be interrupted, so no timeout) or an async one
    (awaited, with the timeout)."""

    name = "app"

    def __init__(self, function: str | Callable[..., Any], version: str | None = None,
                 concurrency: int = 4) -> None:
        self.function_name = function_name(function)
        self._function = resolve_function(function)
        self.version = version
        self.code = code_fingerprint(self._function)
        self.is_async = _is_async(self._function)
        self.takes_row = takes_row(self._function)
        self.capabilities = Capabilities(in_process=not self.is_async)
        self.concurrency = max(1, int(concurrency))
        self._threads: Any = None

    def identity(self) -> dict[str, Any]:
        ident: dict[str, Any] = {"backend": self.name, "kind": "function",
                                 "function": self.function_name}
        if self.code is not None:
            ident["code"] = self.code
        if self.version is not None:
            ident["version"] = self.version
        return ident

    def _executor(self) -> Any:
        if self._threads is None:
            from concurrent.futures import ThreadPoolExecutor

            self._threads = ThreadPoolExecutor(self.concurrency,
                                               thread_name_prefix="ragmeter-app")
        return self._threads

    async def release(self) -> None:
        threads, self._threads = self._threads, None
        if threads is not None:
            threads.shutdown(wait=True)

    async def complete(self, request: Request) -> Response:
        payload = _payload(request)
        kwargs = {"row": payload["row"]} if self.takes_row else {}
        start = time.perf_counter()
        try:
            if self.is_async:
                returned = await self._function(payload["question"], **kwargs)
            else:
                import functools

                returned = await asyncio.get_running_loop().run_in_executor(
                    self._executor(), functools.partial(self._function, payload["question"],
                                                        **kwargs))
                if asyncio.iscoroutine(returned):
                    returned = await returned
        except Exception as exc:  # the application failed on this row: unscored, with why
            retry = isinstance(exc, (TimeoutError, ConnectionError))
            raise BackendError("app_error", redact_text(f"{type(exc).__name__}: {exc}")[:300],
                               retryable=retry) from None
        latency = (time.perf_counter() - start) * 1000.0
        text = json.dumps(reply_of(returned), ensure_ascii=False, allow_nan=False)
        return Response(text=text, latency_ms=latency, finish_reason="stop")


def backend_for(target: HttpApp | ChatApp | FunctionApp, calls: AppCalls) -> BaseBackend:
    """The backend object that calls ``target``."""
    if isinstance(target, FunctionApp):
        return FunctionAppBackend(target.function, target.version, calls.concurrency)
    if isinstance(target, ChatApp):
        return HttpAppBackend(target_url(target), "POST", target.headers, calls.timeout,
                              calls.concurrency, kind="chat", model=target.model,
                              version=target.version)
    return HttpAppBackend(target.url, target.method, target.headers, calls.timeout,
                          calls.concurrency, kind="http", version=target.version)


def http_body(target: HttpApp | ChatApp) -> Any:
    """The request template of an HTTP or chat target, placeholders unfilled."""
    if isinstance(target, ChatApp):
        messages: list[dict[str, str]] = []
        if target.system:
            messages.append({"role": "system", "content": _literal(target.system)})
        messages.append({"role": "user", "content": "{question}"})
        body: dict[str, Any] = {"messages": messages, **_literal(dict(target.params))}
        if target.model:
            body["model"] = _literal(target.model)
        return body
    return target.template if target.template is not None else dict(DEFAULT_TEMPLATE)


def _literal(value: Any) -> Any:
    """``value`` with its braces escaped, so that no text of the user's becomes a placeholder."""
    if isinstance(value, str):
        return value.replace("{", "{{").replace("}", "}}")
    if isinstance(value, Mapping):
        return {_literal(k): _literal(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_literal(v) for v in value]
    return value
