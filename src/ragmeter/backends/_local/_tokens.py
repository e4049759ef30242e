"""Offline token counts for the local model: the model's own tokenizer (only the tokenizer is
loaded, never the weights), chat messages counted after the model's chat template (see
:mod:`ragmeter.backends._tokens`)."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

from ragmeter.backends._local._runtimes import load_hf_tokenizer
from ragmeter.backends._types import TokenCounter, _approximate_counter

__all__ = ["local_counter"]


def local_counter(model: str | None) -> TokenCounter:
    from ragmeter.backends._local._model import resolve_model, runtime_status
    from ragmeter.errors import UserError

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
        from ragmeter.backends._local._cache import tokenizer_source

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
    from ragmeter.backends._local._model import INSTALL_LOCAL

    return _approximate_counter(f"no local tokenizer runtime: {INSTALL_LOCAL}")


def _converted_counter(location: Any) -> TokenCounter | None:
    """The counter of a GGUF model that the numpy forward pass runs: its converted folder's
    ``tokenizer.json`` and chat template, exactly as the runtime builds each prompt
    (:meth:`~ragmeter.backends._local._fast._ChatTokenizer.chat_ids`), without transformers.  A
    model not converted yet is converted first (without transformers: seconds; the run
    needs it anyway).  None when the direct converter or the forward pass does not handle
    the model (the transformers tokenizer counts it then)."""
    from ragmeter.backends._local import _cache as local_cache
    from ragmeter.backends._local import _fast as local_fast

    folder = local_cache.converted_dir(location)
    if folder is None:
        return None
    if not local_cache.is_complete(folder):
        folder = local_cache.convert_for_numpy(location.path)[0] or folder
    if not local_cache.is_complete(folder) or not local_fast.supports(folder):
        return None
    tokenizer = local_fast._ChatTokenizer(folder)

    def count(text: str) -> int:
        return len(tokenizer.encode(text, add_special_tokens=False))

    def count_messages(chat: Sequence[Mapping[str, str]]) -> int:
        return len(tokenizer.chat_ids([dict(m) for m in chat]))

    return TokenCounter(f"local:{location.model_id}", True, count, count_messages)


@functools.lru_cache(maxsize=4)
def _llama_vocab(path: str) -> Any:
    import llama_cpp

    return llama_cpp.Llama(model_path=path, vocab_only=True, verbose=False)
