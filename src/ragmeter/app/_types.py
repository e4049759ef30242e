"""The values that describe a RAG application to call (:class:`HttpApp`, :class:`ChatApp`,
:class:`FunctionApp`), how it is called (:class:`AppCalls`) and one test-set row
(:class:`Case`).  Plain data, imported by every module of the family (no cycles).

A target value only describes the application; nothing is called or imported until
:func:`ragmeter.app.run`.  None of its fields holds a secret that is stored or shown: a header
value may name an environment variable (``"Bearer ${APP_TOKEN}"``), read at call time, and
URLs lose their credentials (``user:pass@``, ``?api_key=``) wherever they are shown.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ragmeter.errors import ConfigError

__all__ = ["HttpApp", "ChatApp", "FunctionApp", "AppCalls", "Case", "AppTarget",
           "DEFAULT_TEMPLATE", "CHAT_ANSWER_PATH"]

DEFAULT_TEMPLATE: Mapping[str, Any] = {"question": "{question}"}
CHAT_ANSWER_PATH = "choices[0].message.content"


@dataclass(frozen=True)
class HttpApp:
    """An application behind an HTTP JSON endpoint.

    ``template``: the request body, JSON with placeholders (``{"query": "{question}"}``;
    default ``{"question": "{question}"}``; with ``method="GET"`` its top-level fields are the
    query string).  ``answer``, ``contexts``, ``ids``: field paths in the reply
    (:mod:`ragmeter.app._paths`); None looks for the usual names (``answer``/``response``/...,
    ``contexts``/``retrieved_contexts``/``documents``/``sources``, ``retrieved_ids``/``ids``).
    ``headers``: sent with every call; ``${NAME}`` in a value is the environment variable NAME.
    ``name``: the application's label in the output (its ``system`` column) [default: the URL].
    ``version``: your application's version; it enters the store's key, so a new version is
    called afresh while a re-run of the same version is served from the store.
    """

    url: str
    template: Any = None
    method: str = "POST"
    headers: Mapping[str, str] = field(default_factory=dict)
    answer: str | None = None
    contexts: str | None = None
    ids: str | None = None
    name: str | None = None
    version: str | None = None

    def __post_init__(self) -> None:
        _check_url(self.url, "url")
        if self.method.upper() not in ("POST", "GET", "PUT"):
            raise ConfigError(f"app: method={self.method!r} is not POST, GET or PUT.")

    kind = "http"


@dataclass(frozen=True)
class ChatApp:
    """An application behind an OpenAI-compatible chat endpoint (``POST
    {base_url}/chat/completions``): the question is the user message; the answer is
    ``choices[0].message.content`` unless ``answer`` says otherwise; ``contexts`` and ``ids``
    are paths in the same reply when the application returns them (e.g. ``context``,
    ``choices[0].message.context.citations[*].content``).  ``params``: sampling parameters
    sent with every call (``{"temperature": 0}``); ``system``: a system message."""

    base_url: str
    model: str | None = None
    system: str | None = None
    params: Mapping[str, Any] = field(default_factory=dict)
    headers: Mapping[str, str] = field(default_factory=dict)
    answer: str | None = None
    contexts: str | None = None
    ids: str | None = None
    name: str | None = None
    version: str | None = None

    def __post_init__(self) -> None:
        _check_url(self.base_url, "base_url")

    kind = "chat"


@dataclass(frozen=True)
class FunctionApp:
    """An application you can call from Python: a function (or ``"package.module:function"``)
    taking the question and returning the answer, sync or async.

    It may return the answer text; ``(answer, contexts)`` or ``(answer, contexts, ids)``; a dict
    (read with ``answer``/``contexts``/``ids`` paths, default the usual names); or an object
    (a dataclass, a pydantic model, a LangChain-style result), turned into a dict first.  A
    parameter named ``row`` receives the whole test-set row.  A ``"module:function"`` string is
    imported from the current folder or the installed packages.
    """

    function: str | Callable[..., Any]
    answer: str | None = None
    contexts: str | None = None
    ids: str | None = None
    name: str | None = None
    version: str | None = None

    kind = "function"


AppTarget = HttpApp | ChatApp | FunctionApp


@dataclass(frozen=True)
class AppCalls:
    """How the application is called; none of these changes an answer, so none enters the
    store's key.  ``concurrency``: calls in flight at once; ``rpm``: at most this many calls a
    minute; ``max_retries``: retries of a call on 429, 5xx, timeouts and connection errors
    (then the row is unscored with its reason); ``timeout``: seconds one attempt may take
    (a sync Python function cannot be interrupted, so it has none)."""

    concurrency: int = 4
    rpm: float | None = None
    max_retries: int = 3
    timeout: float = 60.0


@dataclass(frozen=True)
class Case:
    """One test-set row: its id, question, reference answer (None when the test set has none),
    language, the other columns (kept in the output as they are) and everything a template
    placeholder may name (``values``); ``number``, ``unit`` and ``path`` place it for errors."""

    id: str
    question: str
    reference: Any
    lang: str | None
    extra: Mapping[str, Any]
    values: Mapping[str, Any]
    number: int
    unit: str = "line"
    path: str = ""


def _check_url(url: Any, what: str) -> None:
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise ConfigError(f"app: {what}={url!r} is not an http:// or https:// URL. Fix: give the "
                          "address your application listens on, e.g. "
                          "http://127.0.0.1:8000/ask.")
