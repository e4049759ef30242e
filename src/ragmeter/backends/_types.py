"""The backend protocol and the request/response records.

A :class:`Request` holds everything that determines a model's output: messages, sampling
parameters, optional ``choices`` to score and a ``repeat`` index.  Its cache key is a versioned
SHA-256 of canonical JSON of those fields plus the backend's identity (backend name and model),
never of timeouts, concurrency or the request id (simonw/llm's content addressing).

A :class:`Response` holds the text, token usage, latency and, when ``choices`` were asked,
``choice_probs``: the probability of each choice as the next continuation, normalized over the
choices.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from ragmeter._util._digest import sha256
from ragmeter._util._record import record, set_field

__all__ = ["Message", "Request", "Response", "Usage", "Backend", "BaseBackend", "Capabilities",
           "Readiness", "CACHE_KEY_VERSION", "canonical_json", "TokenCounter",
           "approximate_tokens"]

CACHE_KEY_VERSION = "v1"

# Sampling parameters that change the output (and so enter the cache key).
OUTPUT_PARAMS = ("temperature", "top_p", "max_tokens", "stop", "seed", "frequency_penalty",
                 "presence_penalty", "top_k", "repetition_penalty")


# json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False) builds this
# encoder anew on every call; one is kept instead (the same text: dumps is encoder.encode)
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def canonical_json(obj: Any) -> str:
    """Canonical JSON: sorted keys, no spaces, UTF-8 kept (the form that is hashed)."""
    return _CANONICAL.encode(obj)


# The records below are plain classes with __slots__ (ragmeter._util._record): frozen, with a
# frozen dataclass's __eq__, __hash__ and __repr__, without its creation cost (issue 26.5).
@record()
class Message:
    __slots__ = ("role", "content")
    role: str  # "system" | "user" | "assistant"
    content: str

    def __init__(self, role: str, content: str) -> None:
        set_field(self, "role", role)
        set_field(self, "content", content)

    def to_dict(self) -> dict[str, str]:
        return {"role": self.role, "content": self.content}


@record()
class Request:
    """One model call.  ``id`` names the item for the caller and is not part of the key."""

    __slots__ = ("id", "messages", "params", "choices", "repeat")
    id: str
    messages: tuple[Message, ...]
    params: Mapping[str, Any]  # default: a new empty dict
    choices: tuple[str, ...] | None
    repeat: int

    def __init__(self, id: str, messages: tuple[Message, ...],
                 params: Mapping[str, Any] | None = None,
                 choices: tuple[str, ...] | None = None, repeat: int = 0) -> None:
        set_field(self, "id", id)
        set_field(self, "messages", messages)
        set_field(self, "params", {} if params is None else params)
        set_field(self, "choices", choices)
        set_field(self, "repeat", repeat)
        # A sampling parameter of nan or inf (temperature=float("nan")) would be sent with
        # every call and fail at the server, or worse, be accepted: refused before any call,
        # by the same finite-number check as every other option (issue 29.3).
        for name, value in self.params.items():
            if isinstance(value, float) and not math.isfinite(value):
                from ragmeter._util import check_number

                check_number(value, f"{name}=", component="backends")

    @classmethod
    def chat(cls, id: str, messages: Sequence[Mapping[str, str]] | Sequence[Message],
             params: Mapping[str, Any] | None = None, choices: Sequence[str] | None = None,
             repeat: int = 0) -> Request:
        msgs = tuple(m if isinstance(m, Message) else Message(m["role"], m["content"])
                     for m in messages)
        return cls(id=id, messages=msgs, params=dict(params or {}),
                   choices=tuple(choices) if choices is not None else None, repeat=repeat)

    def output_params(self) -> dict[str, Any]:
        return {k: self.params[k] for k in OUTPUT_PARAMS if k in self.params}

    def key_material(self, backend_identity: Mapping[str, Any]) -> dict[str, Any]:
        return {
            "backend": dict(backend_identity),
            "messages": [m.to_dict() for m in self.messages],
            "params": self.output_params(),
            "choices": list(self.choices) if self.choices is not None else None,
            "repeat": self.repeat,
        }

    def cache_key(self, backend_identity: Mapping[str, Any]) -> str:
        """``v1:<sha256 hex>`` of canonical JSON of what determines the output."""
        digest = sha256(
            canonical_json(self.key_material(backend_identity)).encode("utf-8")).hexdigest()
        return f"{CACHE_KEY_VERSION}:{digest}"


@record()
class Usage:
    __slots__ = ("prompt_tokens", "completion_tokens")
    prompt_tokens: int
    completion_tokens: int

    def __init__(self, prompt_tokens: int = 0, completion_tokens: int = 0) -> None:
        set_field(self, "prompt_tokens", prompt_tokens)
        set_field(self, "completion_tokens", completion_tokens)

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def to_dict(self) -> dict[str, int]:
        return {"prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens}


@record()
class Response:
    """A successful model response."""

    __slots__ = ("text", "usage", "latency_ms", "choice_probs", "finish_reason",
                 "choice_method")
    text: str
    usage: Usage  # default: Usage()
    latency_ms: float
    choice_probs: dict[str, float] | None
    finish_reason: str | None
    # "logits" | "logprobs" | "constrained_text" | "no_logprobs" (a paid reply that the
    # server gave without the logprobs choice scoring needs; choice_probs is then None)
    choice_method: str | None

    def __init__(self, text: str, usage: Usage | None = None, latency_ms: float = 0.0,
                 choice_probs: dict[str, float] | None = None,
                 finish_reason: str | None = None, choice_method: str | None = None) -> None:
        set_field(self, "text", text)
        set_field(self, "usage", Usage() if usage is None else usage)
        set_field(self, "latency_ms", latency_ms)
        set_field(self, "choice_probs", choice_probs)
        set_field(self, "finish_reason", finish_reason)
        set_field(self, "choice_method", choice_method)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"text": self.text, "usage": self.usage.to_dict(),
                               "latency_ms": self.latency_ms,
                               "finish_reason": self.finish_reason}
        if self.choice_probs is not None or self.choice_method is not None:
            out["choice_probs"] = self.choice_probs
            out["choice_method"] = self.choice_method
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Response:
        u = d.get("usage") or {}
        return cls(text=d.get("text", ""),
                   usage=Usage(int(u.get("prompt_tokens", 0)), int(u.get("completion_tokens", 0))),
                   latency_ms=float(d.get("latency_ms", 0.0)),
                   choice_probs=d.get("choice_probs"), finish_reason=d.get("finish_reason"),
                   choice_method=d.get("choice_method"))


@record()
class Capabilities:
    """What a backend can do, declared once as the ``capabilities`` attribute of its class
    (and mirrored on its :class:`~ragmeter.backends._registry.BackendSpec` when a decision is
    made before the class is imported).  Nothing in ragmeter decides from a backend's name.

    ``in_process``: computes in this process; a call cannot be interrupted, so the runner gives
    it no per-call timeout (a timed-out attempt would go on computing and the retry would
    queue the same work again).

    ``choice_scoring``: scores ``Request.choices`` by their probabilities (logits or
    logprobs).  ``True``: always; ``False``: never (``auto`` strategies then prompt for
    text); ``None``: unknown until the first reply (an OpenAI-compatible server may or may not
    return logprobs); the runner then sends one choice-scored call alone first and the
    backend reports what it learned through :meth:`BaseBackend.choice_scoring_now`.

    ``batching``: takes ``batch_size``: concurrent requests may share one forward pass.

    ``remote``: talks HTTP; takes ``base_url``, ``timeout_s``, ``max_connections`` and
    ``api_key`` (``--base-url``, ``--timeout``, ``--concurrency``, the key).
    """

    __slots__ = ("in_process", "choice_scoring", "batching", "remote")
    in_process: bool
    choice_scoring: bool | None
    batching: bool
    remote: bool

    def __init__(self, in_process: bool = False, choice_scoring: bool | None = False,
                 batching: bool = False, remote: bool = False) -> None:
        set_field(self, "in_process", in_process)
        set_field(self, "choice_scoring", choice_scoring)
        set_field(self, "batching", batching)
        set_field(self, "remote", remote)

    def to_dict(self) -> dict[str, bool | None]:
        return {"in_process": self.in_process, "choice_scoring": self.choice_scoring,
                "batching": self.batching, "remote": self.remote}


@record()
class Readiness:
    """Whether a backend can be used as installed (``ragmeter models``): ``ready``, a short
    ``note`` shown beside it, and ``details`` added to ``ragmeter models --json``."""

    __slots__ = ("ready", "note", "details")
    ready: bool
    note: str
    details: Mapping[str, Any]  # default: a new empty dict

    def __init__(self, ready: bool, note: str = "",
                 details: Mapping[str, Any] | None = None) -> None:
        set_field(self, "ready", ready)
        set_field(self, "note", note)
        set_field(self, "details", {} if details is None else details)


@runtime_checkable
class Backend(Protocol):
    """What every backend provides.  ``complete`` raises :class:`ragmeter.errors.BackendError`
    with a reason code (``timeout``, ``http_429``, ``http_500``, ``connection``,
    ``bad_response``, ...) and ``retryable`` set; it never retries by itself.

    :class:`BaseBackend` gives every member but ``identity`` and ``complete`` a default.
    """

    name: str
    capabilities: Capabilities

    def identity(self) -> dict[str, Any]:
        """What identifies the model for the cache key: backend name, model id (and for a
        local file, its size and name)."""
        ...

    async def complete(self, request: Request) -> Response: ...

    def choice_scoring_now(self) -> bool | None:
        """``capabilities.choice_scoring``, or what this backend has learned since."""
        ...

    def token_model(self) -> str | None:
        """The model its :meth:`token_counter` counts for (a name or a file path)."""
        ...

    @classmethod
    def token_counter(cls, model: str | None) -> TokenCounter: ...

    @classmethod
    def readiness(cls) -> Readiness: ...

    async def release(self) -> None:
        """Free what belongs to the current event loop (the runner awaits it after a run)."""
        ...

    async def aclose(self) -> None: ...


class BaseBackend:
    """The defaults of the :class:`Backend` protocol: a backend class subclasses this, sets
    ``name`` and ``capabilities``, and writes ``identity`` and ``complete``::

        class EchoBackend(BaseBackend):
            name = "echo"
            capabilities = Capabilities(choice_scoring=True)

            def identity(self): return {"backend": self.name, "model": "echo-1"}
            async def complete(self, request): ...
    """

    name: str = ""
    capabilities: Capabilities = Capabilities()  # frozen: shared by the class's instances

    def identity(self) -> dict[str, Any]:
        raise NotImplementedError

    async def complete(self, request: Request) -> Response:
        raise NotImplementedError

    def choice_scoring_now(self) -> bool | None:
        """The declared ``capabilities.choice_scoring``; a backend that learns it from its
        first reply (declared ``None``) overrides this to report what it learned."""
        return self.capabilities.choice_scoring

    def token_model(self) -> str | None:
        """The model to count tokens for: the ``model`` of :meth:`identity`."""
        model = self.identity().get("model")
        return None if model is None else str(model)

    @classmethod
    def token_counter(cls, model: str | None) -> TokenCounter:
        """The best offline token counter for ``model``; by default ``ceil(chars / 4)``.
        Called without an instance (a dry run counts before any model is loaded)."""
        return _approximate_counter(f"no tokenizer known for backend {cls.name!r}")

    @classmethod
    def readiness(cls) -> Readiness:
        """Whether the backend can be used as installed (``ragmeter models``)."""
        return Readiness(True)

    async def release(self) -> None:
        return None

    async def aclose(self) -> None:
        await self.release()


# ---------------------------------------------------------------- token counting

_OPENAI_TOKENS_PER_MESSAGE = 3
_OPENAI_REPLY_PRIMING = 3


def approximate_tokens(text: str) -> int:
    """``ceil(len(text) / 4)``: the rough count used when no tokenizer is available."""
    return math.ceil(len(text) / 4)


@record()
class TokenCounter:
    """Counts tokens of text and of chat messages with one named method.

    ``method`` is e.g. ``"local:SmolLM2-135M-Instruct.Q4_1"``, ``"tiktoken:o200k_base"``,
    ``"tiktoken:o200k_base (approximate: unknown model 'llama3')"`` or ``"chars/4"``.
    """

    __slots__ = ("method", "exact", "_count", "_count_messages")
    method: str
    exact: bool
    _count: Callable[[str], int]
    _count_messages: Callable[[Sequence[Mapping[str, str]]], int]

    def __init__(self, method: str, exact: bool, _count: Callable[[str], int],
                 _count_messages: Callable[[Sequence[Mapping[str, str]]], int]) -> None:
        set_field(self, "method", method)
        set_field(self, "exact", exact)
        set_field(self, "_count", _count)
        set_field(self, "_count_messages", _count_messages)

    def count(self, text: str) -> int:
        return int(self._count(text))

    def count_messages(self, messages: Sequence[Mapping[str, str]] | Sequence[Any]) -> int:
        """Prompt tokens of a chat: ``[{"role", "content"}, ...]`` or Message objects."""
        chat = [m if isinstance(m, Mapping) else m.to_dict() for m in messages]
        return int(self._count_messages(chat))


def _approximate_counter(reason: str = "") -> TokenCounter:
    def count_messages(chat: Sequence[Mapping[str, str]]) -> int:
        return sum(approximate_tokens(m.get("content", "")) + _OPENAI_TOKENS_PER_MESSAGE
                   for m in chat) + _OPENAI_REPLY_PRIMING

    method = "chars/4" + (f" ({reason})" if reason else "")
    return TokenCounter(method, False, approximate_tokens, count_messages)
