"""The runtimes behind the ``local`` backend: transformers + torch, and llama-cpp-python.

A runtime turns chat messages into token ids, generates, and scores choices; the backend
(:mod:`ragmeter.backends._local._backend`) owns loading, locking and batching.  Neither module imports torch
at import time.  The transformers runtime loads the default GGUF through the converted cache
(:mod:`ragmeter.backends._local._cache`), so only the first load de-quantizes it (without
transformers, by :mod:`ragmeter.backends._local._gguf_convert`, when that converter handles the file).

Batched forms (:meth:`_TransformersRuntime.generate_batch`, :meth:`first_token_logprobs`) pad
on the left with an attention mask, as ``model.generate`` expects for decoder-only models.
"""

from __future__ import annotations

import contextlib
import functools
import math
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ragmeter.backends._types import Message

if TYPE_CHECKING:
    from ragmeter.backends._local._model import ModelLocation

DEFAULT_MAX_TOKENS = 256


@functools.lru_cache(maxsize=4)
def load_hf_tokenizer(directory: str, gguf_file: str | None) -> Any:
    """Load only the tokenizer (a few seconds for a GGUF file; cached per model)."""
    from transformers import AutoTokenizer

    kwargs: dict[str, Any] = {"local_files_only": True}
    if gguf_file:
        kwargs["gguf_file"] = gguf_file
    return AutoTokenizer.from_pretrained(directory, **kwargs)


def truncate_at_stop(text: str, stop: Sequence[str]) -> tuple[str, bool]:
    """Cut ``text`` before the first stop sequence (OpenAI semantics: the stop is not kept)."""
    cut = min((i for i in (text.find(s) for s in stop if s) if i >= 0), default=-1)
    return (text[:cut], True) if cut >= 0 else (text, False)


def left_pad(torch: Any, prompts: Sequence[list[int]], pad_id: int) -> tuple[Any, Any]:
    """(token ids, attention mask) of ``prompts`` padded on the left with ``pad_id``."""
    width = max(len(p) for p in prompts)
    ids = [[pad_id] * (width - len(p)) + list(p) for p in prompts]
    mask = [[0] * (width - len(p)) + [1] * len(p) for p in prompts]
    return torch.tensor(ids, dtype=torch.long), torch.tensor(mask, dtype=torch.long)


@dataclass(frozen=True)
class _Generation:
    text: str
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str


class _TransformersRuntime:
    """transformers + torch on the CPU."""

    def __init__(self, location: ModelLocation, threads: int, *, direct: bool = True) -> None:
        """``direct=False`` skips the transformers-free conversion of a GGUF
        (:func:`~ragmeter.backends._local._cache.convert_direct`): the GGUF is then de-quantized by
        transformers, unless a converted folder is already complete."""
        import torch
        import transformers

        self.torch = torch
        if torch.get_num_threads() != threads:
            torch.set_num_threads(threads)
        from ragmeter.backends._local import _cache as local_cache

        cache_dir = local_cache.converted_dir(location)
        if cache_dir is not None and not local_cache.is_complete(cache_dir, "f32") and direct:
            cache_dir = local_cache.convert_direct(location.path) or cache_dir
        if cache_dir is not None and local_cache.is_complete(cache_dir, "f32"):
            # the converted copy: memory-mapped float32 safetensors, no de-quantization
            self.tokenizer = load_hf_tokenizer(str(cache_dir), None)
            with _no_progress_bars():
                self.model = transformers.AutoModelForCausalLM.from_pretrained(
                    str(cache_dir), dtype=torch.float32, local_files_only=True)
        else:
            self.tokenizer, self.model = self._load_original(location)
            if cache_dir is not None:
                cache_dir = local_cache.transformers_model_dir(location.path)
                try:
                    local_cache.write_cache(cache_dir, self.model, self.tokenizer,
                                            local_cache.cache_key(location.path))
                except OSError as exc:  # a read-only home: run from the GGUF every time
                    warnings.warn(f"local: could not write the converted model to {cache_dir} "
                                  f"({exc}); the next load de-quantizes the GGUF again.",
                                  stacklevel=2)
        self.model.eval()
        self.pad_id = (self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None
                       else self.tokenizer.eos_token_id)
        self.eos = _eos_ids(self.model, self.tokenizer)
        self.max_context = int(getattr(self.model.config, "max_position_embeddings", 0) or 0)

    def _load_original(self, location: ModelLocation) -> tuple[Any, Any]:
        """Tokenizer and model from the GGUF file (de-quantized) or the Hugging Face folder."""
        import torch
        import transformers


        load_kwargs: dict[str, Any] = {"local_files_only": True}
        if location.gguf_file:
            load_kwargs["gguf_file"] = location.gguf_file
        gguf_utils = _quiet_gguf_progress()
        try:
            with _no_progress_bars(), _one_gguf_parse():
                tokenizer = load_hf_tokenizer(str(location.directory), location.gguf_file)
                model = transformers.AutoModelForCausalLM.from_pretrained(
                    str(location.directory), dtype=torch.float32, **load_kwargs)
        finally:
            if gguf_utils is not None:
                gguf_utils[0].tqdm = gguf_utils[1]
        return tokenizer, model

    def prompt_ids(self, messages: Sequence[Message]) -> list[int]:
        chat = [m.to_dict() for m in messages]
        if getattr(self.tokenizer, "chat_template", None):
            out = self.tokenizer.apply_chat_template(chat, add_generation_prompt=True,
                                                     tokenize=True, return_dict=True)
            return list(out["input_ids"])
        text = "\n\n".join(m.content for m in messages) + "\n"
        return list(self.tokenizer.encode(text))

    def choice_ids(self, choice: str) -> list[int]:
        return list(self.tokenizer.encode(choice, add_special_tokens=False))

    def generate(self, prompt: list[int], params: Mapping[str, Any]) -> _Generation:
        return self.generate_batch([prompt], params)[0]

    def _generate_kwargs(self, params: Mapping[str, Any]) -> dict[str, Any]:
        max_tokens = int(params.get("max_tokens") or DEFAULT_MAX_TOKENS)
        temperature = float(params.get("temperature") or 0.0)
        stop = _stop_list(params.get("stop"))
        kwargs: dict[str, Any] = {"max_new_tokens": max_tokens, "pad_token_id": self.pad_id}
        if temperature > 0:
            kwargs.update(do_sample=True, temperature=temperature,
                          top_p=float(params.get("top_p", 1.0)))
            if params.get("top_k") is not None:
                kwargs["top_k"] = int(params["top_k"])
            self.torch.manual_seed(int(params.get("seed", 0) or 0))
        else:
            kwargs.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        if params.get("repetition_penalty") is not None:
            kwargs["repetition_penalty"] = float(params["repetition_penalty"])
        if stop:
            kwargs.update(stop_strings=stop, tokenizer=self.tokenizer)
        return kwargs

    def generate_batch(self, prompts: Sequence[list[int]],
                       params: Mapping[str, Any]) -> list[_Generation]:
        """Generate for several prompts with the same parameters in one ``model.generate``
        call, left-padded.  One prompt is the unpadded call (the one-at-a-time path)."""
        torch = self.torch
        kwargs = self._generate_kwargs(params)
        max_tokens = int(kwargs["max_new_tokens"])
        stop = _stop_list(params.get("stop"))
        input_ids, mask = self._left_pad(prompts)
        with torch.inference_mode():
            # transformers types the Auto class as _BaseModelWithGenerate, which its own
            # generate() stub does not accept as self (a typing gap in transformers).
            out = self.model.generate(input_ids=input_ids,  # type: ignore[misc]
                                      attention_mask=mask, **kwargs)
        width = input_ids.shape[1]
        results = []
        for row, prompt in enumerate(prompts):
            new = self._own_tokens(out[row, width:].tolist(), stop, padded=len(prompts) > 1)
            hit_eos = bool(new) and new[-1] in self.eos
            text = self.tokenizer.decode(new, skip_special_tokens=True)
            text, hit_stop = truncate_at_stop(text, stop)
            finish = "stop" if (hit_eos or hit_stop or len(new) < max_tokens) else "length"
            results.append(_Generation(text, len(prompt), len(new), finish))
        return results

    def _own_tokens(self, new: list[int], stop: Sequence[str], padded: bool) -> list[int]:
        """A batch row's generated tokens, without the padding that follows its end.

        A row ends at its first end-of-sequence token (kept, as in a single call) or, when a
        stop string ended it, at the token that completed the stop string; ``generate`` fills
        the rest of a finished row with the pad token.
        """
        if not padded:
            return new
        end = next((k + 1 for k, tok in enumerate(new) if tok in self.eos), len(new))
        if stop and truncate_at_stop(self.tokenizer.decode(new[:end]), stop)[1]:
            for j in range(1, end + 1):  # the first token at which a stop string appears
                if truncate_at_stop(self.tokenizer.decode(new[:j]), stop)[1]:
                    return new[:j]
        if end == len(new) and self.pad_id not in self.eos:
            while end > 0 and new[end - 1] == self.pad_id:
                end -= 1
        return new[:end]

    def _left_pad(self, prompts: Sequence[list[int]]) -> tuple[Any, Any]:
        return left_pad(self.torch, prompts, self.pad_id)

    def choice_logprobs(self, prompt: list[int], choices: Sequence[list[int]]) -> list[float]:
        """Log-probability of each token sequence as the continuation of ``prompt``.

        One forward pass over the prompt gives every first token; multi-token choices are then
        scored together in one batch (right-padded) that reuses nothing but is one call.
        """
        torch = self.torch
        with torch.inference_mode():
            logits = self.model(input_ids=torch.tensor([prompt], dtype=torch.long)).logits
            first = torch.log_softmax(logits[0, -1].float(), dim=-1)
            return self._with_multi_token(prompt, choices,
                                          [float(first[ids[0]]) for ids in choices])

    def choice_logprobs_batch(self, prompts: Sequence[list[int]],
                              choices: Sequence[Sequence[list[int]]]) -> list[list[float]]:
        """:meth:`choice_logprobs` for several prompts: one left-padded forward pass gives
        every prompt's first-token distribution (position ids follow the mask, as in
        ``generate``); multi-token choices then take their own pass per prompt."""
        if len(prompts) == 1:
            return [self.choice_logprobs(prompts[0], choices[0])]
        torch = self.torch
        input_ids, mask = self._left_pad(prompts)
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        results = []
        with torch.inference_mode():
            # logits_to_keep=1: only the last position goes through the 49k-wide lm_head
            logits = self.model(input_ids=input_ids, attention_mask=mask,
                                position_ids=positions, logits_to_keep=1).logits
            first = torch.log_softmax(logits[:, -1].float(), dim=-1)
            for row, (prompt, ids) in enumerate(zip(prompts, choices, strict=True)):
                scores = [float(first[row, c[0]]) for c in ids]
                results.append(self._with_multi_token(prompt, ids, scores))
        return results

    def _with_multi_token(self, prompt: list[int], choices: Sequence[list[int]],
                          scores: list[float]) -> list[float]:
        """Replace the first-token scores of multi-token choices by their full-sequence sums
        (one right-padded pass; call under ``inference_mode``)."""
        torch = self.torch
        multi = [i for i, ids in enumerate(choices) if len(ids) > 1]
        if multi:
            seqs = [prompt + choices[i] for i in multi]
            width = max(len(s) for s in seqs)
            pad = self.tokenizer.pad_token_id or 0
            batch = torch.tensor([s + [pad] * (width - len(s)) for s in seqs])
            mask = torch.tensor([[1] * len(s) + [0] * (width - len(s)) for s in seqs])
            logp = torch.log_softmax(
                self.model(input_ids=batch, attention_mask=mask).logits.float(), dim=-1)
            for row, i in enumerate(multi):
                total = 0.0
                for j, tok in enumerate(choices[i]):
                    total += float(logp[row, len(prompt) - 1 + j, tok])
                scores[i] = total
        return scores


class _LlamaCppRuntime:
    """llama-cpp-python (only when importable; never installed by ragmeter itself)."""

    def __init__(self, location: ModelLocation, threads: int) -> None:
        import inspect

        import llama_cpp

        kwargs: dict[str, Any] = {"model_path": str(location.path), "n_ctx": 8192,
                                  "n_threads": threads, "verbose": False, "logits_all": False}
        accepted: Mapping[str, inspect.Parameter]
        try:
            accepted = inspect.signature(llama_cpp.Llama.__init__).parameters
        except (TypeError, ValueError):
            accepted = {}
        if "use_extra_bufts" in accepted:
            kwargs["use_extra_bufts"] = False  # segfaults on first decode otherwise (issue 3)
        self.llm = llama_cpp.Llama(**kwargs)
        self.max_context = int(self.llm.n_ctx())
        meta = getattr(self.llm, "metadata", {}) or {}
        template = meta.get("tokenizer.chat_template")
        self.formatter = None
        if template:
            from llama_cpp.llama_chat_format import Jinja2ChatFormatter

            def token_text(token_id: int) -> str:
                return self.llm.detokenize([token_id], special=True).decode("utf-8", "ignore")

            self.formatter = Jinja2ChatFormatter(template=template,
                                                 eos_token=token_text(self.llm.token_eos()),
                                                 bos_token=token_text(self.llm.token_bos()))

    def prompt_ids(self, messages: Sequence[Message]) -> list[int]:
        chat = [m.to_dict() for m in messages]
        if self.formatter is not None:
            text = self.formatter(messages=chat).prompt
        else:
            text = "\n\n".join(m.content for m in messages) + "\n"
        return list(self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=True))

    def choice_ids(self, choice: str) -> list[int]:
        return list(self.llm.tokenize(choice.encode("utf-8"), add_bos=False, special=False))

    def generate(self, prompt: list[int], params: Mapping[str, Any]) -> _Generation:
        max_tokens = int(params.get("max_tokens") or DEFAULT_MAX_TOKENS)
        temperature = float(params.get("temperature") or 0.0)
        stop = _stop_list(params.get("stop"))
        out = self.llm.create_completion(
            prompt=prompt, max_tokens=max_tokens, temperature=temperature,
            top_p=float(params.get("top_p", 1.0)), top_k=int(params.get("top_k") or 40),
            repeat_penalty=float(params.get("repetition_penalty") or 1.0),
            stop=stop or None, seed=int(params.get("seed", 0) or 0))
        choice = out["choices"][0]
        usage = out.get("usage") or {}
        return _Generation(choice.get("text", ""), int(usage.get("prompt_tokens", len(prompt))),
                           int(usage.get("completion_tokens", 0)),
                           choice.get("finish_reason") or "stop")

    def choice_logprobs(self, prompt: list[int], choices: Sequence[list[int]]) -> list[float]:
        import numpy as np

        def last_logprobs() -> Any:
            row = np.asarray(self.llm.scores[self.llm.n_tokens - 1], dtype=np.float64)
            top = row.max()
            return row - top - math.log(float(np.exp(row - top).sum()))

        self.llm.reset()
        self.llm.eval(prompt)
        first = last_logprobs()
        scores: list[float] = []
        for ids in choices:
            total = float(first[ids[0]])
            for j in range(1, len(ids)):
                self.llm.n_tokens = len(prompt) + j - 1  # rewind the KV cache to prompt + j-1
                self.llm.eval([ids[j - 1]])
                total += float(last_logprobs()[ids[j]])
            scores.append(total)
        return scores


@contextlib.contextmanager
def _no_progress_bars() -> Iterator[None]:
    """transformers' progress bars off for the duration (a load prints none)."""
    from transformers.utils import logging as hf_logging

    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if bars:
            hf_logging.enable_progress_bar()


@contextlib.contextmanager
def _one_gguf_parse() -> Iterator[None]:
    """Parse a GGUF file once per load: transformers reads the same file three times (for
    the config, the tokenizer and the weights), each time with a new ``gguf.GGUFReader``,
    whose parse of a 49k-token vocabulary takes seconds.  The reader only reads (a
    memory map), so the three calls can share one."""
    try:
        import gguf
    except ImportError:
        yield
        return
    original = gguf.GGUFReader
    readers: dict[tuple[str, str], Any] = {}

    def shared_reader(path: Any, mode: Any = "r") -> Any:
        key = (str(path), mode)
        if key not in readers:
            readers[key] = original(path, mode)
        return readers[key]

    gguf.GGUFReader = shared_reader  # type: ignore[misc,assignment]
    try:
        yield
    finally:
        gguf.GGUFReader = original  # type: ignore[misc]


def _quiet_gguf_progress() -> tuple[Any, Any] | None:
    """Silence transformers' GGUF de-quantization bar (plain tqdm, not behind its logging
    switch) for the duration of a load; returns (module, original) to restore."""
    try:
        from transformers import modeling_gguf_pytorch_utils as gguf_utils
    except ImportError:
        return None
    original = getattr(gguf_utils, "tqdm", None)
    if original is None:
        return None
    gguf_utils.tqdm = functools.partial(original, disable=True)
    return gguf_utils, original


def _stop_list(stop: Any) -> list[str]:
    if stop is None:
        return []
    if isinstance(stop, str):
        return [stop]
    return [str(s) for s in stop]


def _eos_ids(model: Any, tokenizer: Any) -> set[int]:
    ids: set[int] = set()
    eos = getattr(model.generation_config, "eos_token_id", None)
    for value in (eos if isinstance(eos, list) else [eos], [tokenizer.eos_token_id]):
        ids.update(int(v) for v in value if v is not None)
    return ids


