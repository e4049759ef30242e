"""The converted model run without transformers: a Llama forward pass in plain torch.

Importing ``transformers`` and building a model with ``from_pretrained`` takes most of the
local backend's load time (measured on 2 cores: ~1.5 s for ``import torch`` against 5-10 s
for transformers' modules, config and model classes).  A converted Llama-architecture model
(:mod:`ragmeter.backends._local._cache`) needs none of that: its weights are memory-mapped from
``model.safetensors`` (no copy), its tokenizer is ``tokenizers.Tokenizer`` with the chat
template rendered by jinja2 as transformers renders it, and the forward pass below repeats
``transformers.models.llama.modeling_llama`` (transformers 5) operation by operation:
RMSNorm in float32, rotary embeddings from ``position_ids``, SDPA attention with the same
mask, GQA and ``is_causal`` choices as ``integrations/sdpa_attention.py`` and
``masking_utils.create_causal_mask``, a key/value cache grown with ``torch.cat``.  Greedy
generation repeats ``GenerationMixin._sample`` (last-position logits, argmax, end of
sequence, finished rows fed the pad token).  The same kernels on the same inputs give the
same logits, so greedy texts are those of the transformers runtime
(``tests/llm/test_local_fast.py`` compares both on the real model, single and batched).

Sampling (temperature > 0), repetition penalties and stop strings are not repeated here:
such a request goes to the transformers runtime, loaded on first need from the same folder.
Choice scoring keeps only the positions it reads (the transformers path computes the
49k-wide logits for every prompt position): the probabilities agree within 1e-6, not bit for
bit, and memory stays small.
"""

from __future__ import annotations

import json
import mmap
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ragmeter.backends._local._runtimes import (
    DEFAULT_MAX_TOKENS,
    _Generation,
    _stop_list,
    left_pad,
    truncate_at_stop,
)
from ragmeter.backends._types import Message

__all__ = ["FastLlamaRuntime", "LlamaRuntimeBase", "supports", "load_safetensors",
           "safetensors_layout"]

_DTYPES = {"F32": "float32", "F16": "float16", "BF16": "bfloat16"}


def supports(folder: Path) -> bool:
    """True when ``folder`` (a converted model) is a plain Llama this module runs exactly."""
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    rope = config.get("rope_parameters") or {}
    return (config.get("model_type") == "llama" and config.get("hidden_act") == "silu"
            and not config.get("attention_bias") and not config.get("mlp_bias")
            and rope.get("rope_type", "default") == "default" and "rope_theta" in rope
            and (folder / "tokenizer.json").is_file())


def safetensors_layout(path: Path) -> tuple[mmap.mmap, list[tuple[str, str, list[int], int,
                                                                    int]]]:
    """One read-only memory map of a safetensors file and its tensors as (name, dtype
    code, shape, byte offset in the map, byte length)."""
    with path.open("rb") as fh:
        mapped = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    size = int.from_bytes(mapped[:8], "little")
    header = json.loads(mapped[8:8 + size])
    base = 8 + size
    return mapped, [(name, info["dtype"], list(info["shape"]), base + info["data_offsets"][0],
                     info["data_offsets"][1] - info["data_offsets"][0])
                    for name, info in header.items() if name != "__metadata__"]


def load_safetensors(path: Path) -> dict[str, Any]:
    """The tensors of a safetensors file as read-only views of one memory map (no copy:
    pages are read on first use and stay shareable with the page cache)."""
    import torch

    mapped, layout = safetensors_layout(path)
    tensors: dict[str, Any] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "buffer is not writable": the weights are never written
        for name, code, shape, offset, length in layout:
            dtype = getattr(torch, _DTYPES[code])
            flat = torch.frombuffer(mapped, dtype=dtype, count=length // dtype.itemsize,
                                    offset=offset)
            tensors[name] = flat.view(shape)
    return tensors


class _ChatTokenizer:
    """``tokenizer.json`` through ``tokenizers`` and the chat template through jinja2, set up
    as transformers' ``TokenizersBackend`` and ``apply_chat_template`` do."""

    def __init__(self, folder: Path) -> None:
        from tokenizers import Tokenizer

        self.backend = Tokenizer.from_file(str(folder / "tokenizer.json"))
        config: dict[str, Any] = {}
        if (folder / "tokenizer_config.json").is_file():
            config = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
        self.special = {key: _token_text(config.get(key)) for key in
                        ("bos_token", "eos_token", "unk_token", "pad_token")}
        self.eos_token_id = self._id(self.special["eos_token"])
        self.pad_token_id = self._id(self.special["pad_token"])
        template = config.get("chat_template")
        if (folder / "chat_template.jinja").is_file():
            template = (folder / "chat_template.jinja").read_text(encoding="utf-8")
        self.chat_template = template if isinstance(template, str) else None
        self._compiled: Any = None
        self.clean_up = bool(config.get("clean_up_tokenization_spaces", False))

    def _id(self, token: str | None) -> int | None:
        return self.backend.token_to_id(token) if token else None

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        return list(self.backend.encode(text, add_special_tokens=add_special_tokens).ids)

    def decode(self, ids: Sequence[int], skip_special_tokens: bool = False) -> str:
        if self.clean_up:
            raise RuntimeError("clean_up_tokenization_spaces is not repeated here")
        return str(self.backend.decode(list(ids), skip_special_tokens=skip_special_tokens))

    def chat_ids(self, chat: list[dict[str, Any]]) -> list[int]:
        """The prompt's ids: after the chat template when the model has one, else the
        contents joined by blank lines (with the tokenizer's special tokens)."""
        if self.chat_template:
            return self.encode(self.render_chat(chat), add_special_tokens=False)
        return self.encode("\n\n".join(str(m.get("content", "")) for m in chat) + "\n")

    def render_chat(self, chat: list[dict[str, Any]]) -> str:
        if self._compiled is None:
            self._compiled = _compile_template(str(self.chat_template))
        values = {k: v for k, v in self.special.items() if v is not None}
        return str(self._compiled.render(messages=chat, tools=None, documents=None,
                                         add_generation_prompt=True, **values))


def _token_text(value: Any) -> str | None:
    if isinstance(value, dict):
        value = value.get("content")
    return value if isinstance(value, str) else None


def _compile_template(template: str) -> Any:
    """The jinja2 environment of transformers' ``_compile_jinja_template`` (sandboxed,
    trim/lstrip blocks, loop controls, ``tojson``, ``raise_exception``, ``strftime_now``)."""
    from datetime import datetime

    import jinja2.ext
    from jinja2.exceptions import TemplateError
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    def raise_exception(message: str) -> None:
        raise TemplateError(message)

    def tojson(x: Any, ensure_ascii: bool = False, indent: Any = None, separators: Any = None,
               sort_keys: bool = False) -> str:
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: datetime.now().strftime(fmt)
    return env.from_string(template)


class _Llama:
    """The forward pass of ``LlamaForCausalLM`` over memory-mapped weights."""

    def __init__(self, folder: Path, config: Mapping[str, Any]) -> None:
        import torch

        self.torch = torch
        self.w = load_safetensors(folder / "model.safetensors")
        if "lm_head.weight" not in self.w:  # tied embeddings: one tensor serves both
            self.w["lm_head.weight"] = self.w["model.embed_tokens.weight"]
        self.layers = int(config["num_hidden_layers"])
        self.heads = int(config["num_attention_heads"])
        self.kv_heads = int(config.get("num_key_value_heads") or self.heads)
        self.head_dim = int(config.get("head_dim")
                            or int(config["hidden_size"]) // self.heads)
        self.groups = self.heads // self.kv_heads
        self.scaling = self.head_dim ** -0.5
        self.eps = float(config["rms_norm_eps"])
        base = float(config["rope_parameters"]["rope_theta"])
        dim = self.head_dim
        self.inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float) / dim))
        self._layer_w = [self._layer(i) for i in range(self.layers)]

    def _layer(self, i: int) -> tuple[Any, ...]:
        p = f"model.layers.{i}."
        names = ("input_layernorm", "self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj",
                 "self_attn.o_proj", "post_attention_layernorm", "mlp.gate_proj",
                 "mlp.up_proj", "mlp.down_proj")
        return tuple(self.w[p + n + ".weight"] for n in names)

    def _norm(self, h: Any, weight: Any) -> Any:
        torch = self.torch
        dtype = h.dtype
        h = h.to(torch.float32)
        variance = h.pow(2).mean(-1, keepdim=True)
        h = h * torch.rsqrt(variance + self.eps)
        return weight * h.to(dtype)

    def _rotate_half(self, x: Any) -> Any:
        half = x.shape[-1] // 2
        return self.torch.cat((-x[..., half:], x[..., :half]), dim=-1)

    def forward(self, ids: Any, positions: Any, mask2d: Any | None, cache: list[Any],
                keep: Any = None) -> Any:
        """Logits for ``ids`` (batch, length) after ``cache`` (a list, per layer, of
        (keys, values), grown in place).  ``mask2d``: the (batch, past + length) padding mask,
        None for no padding.  ``keep``: which positions reach the lm_head (a slice or index
        tensor; None: all)."""
        torch = self.torch
        functional = torch.nn.functional
        batch, length = ids.shape
        past = cache[0][0].shape[-2] if cache else 0
        h = functional.embedding(ids, self.w["model.embed_tokens.weight"])
        attn_mask = None
        if mask2d is not None and not bool(mask2d.all()):
            pad = mask2d.to(torch.bool)
            q_idx = torch.arange(length) + past
            kv_idx = torch.arange(past + length)
            attn_mask = (torch.ones((), dtype=torch.bool)
                         & (kv_idx[None, None, None, :] <= q_idx[None, None, :, None])
                         & pad[:, None, None, :])
            attn_mask = attn_mask.expand(batch, -1, length, past + length)
        freqs = positions[..., None].float() * self.inv_freq.to(dtype=torch.float)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos = (emb.cos() * 1.0).to(dtype=h.dtype).unsqueeze(1)
        sin = (emb.sin() * 1.0).to(dtype=h.dtype).unsqueeze(1)
        for i, (ln1, wq, wk, wv, wo, ln2, wg, wu, wd) in enumerate(self._layer_w):
            residual = h
            x = self._norm(h, ln1)
            shape = (batch, length, -1, self.head_dim)
            q = functional.linear(x, wq).view(shape).transpose(1, 2)
            k = functional.linear(x, wk).view(shape).transpose(1, 2)
            v = functional.linear(x, wv).view(shape).transpose(1, 2)
            q = (q * cos) + (self._rotate_half(q) * sin)
            k = (k * cos) + (self._rotate_half(k) * sin)
            if len(cache) <= i:
                empty = torch.tensor([], dtype=k.dtype)
                cache.append((empty, empty))
            k = torch.cat([cache[i][0], k], dim=-2)
            v = torch.cat([cache[i][1], v], dim=-2)
            cache[i] = (k, v)
            out = self._attention(q, k, v, attn_mask, length)
            out = out.reshape(batch, length, -1).contiguous()
            h = residual + functional.linear(out, wo)
            residual = h
            x = self._norm(h, ln2)
            x = functional.linear(functional.silu(functional.linear(x, wg))
                                  * functional.linear(x, wu), wd)
            h = residual + x
        h = self._norm(h, self.w["model.norm.weight"])
        if keep is not None:
            h = h[:, keep]
        return functional.linear(h, self.w["lm_head.weight"])

    def _attention(self, q: Any, k: Any, v: Any, mask: Any | None, length: int) -> Any:
        """``sdpa_attention_forward`` on the CPU: GQA inside SDPA without a mask, query
        heads packed per key head for one masked query, repeated keys otherwise."""
        functional = self.torch.nn.functional
        extra: dict[str, Any] = {}
        if self.groups > 1:
            if mask is None and k.shape[-1] == v.shape[-1] <= 256:
                extra["enable_gqa"] = True
            elif length == 1:
                b, heads, _, dim = q.shape
                q = q.reshape(b, heads // self.groups, self.groups, dim)
            else:
                k = _repeat_kv(k, self.groups)
                v = _repeat_kv(v, self.groups)
        out = functional.scaled_dot_product_attention(
            q, k, v, attn_mask=mask, dropout_p=0.0, scale=self.scaling,
            is_causal=length > 1 and mask is None, **extra)
        out = out.reshape(out.shape[0], -1, length, v.shape[-1])
        return out.transpose(1, 2).contiguous()


def _repeat_kv(x: Any, n_rep: int) -> Any:
    batch, heads, length, dim = x.shape
    x = x[:, :, None, :, :].expand(batch, heads, n_rep, length, dim)
    return x.reshape(batch, heads * n_rep, length, dim)


class LlamaRuntimeBase:
    """What every transformers-free runtime of a converted Llama shares, without its forward
    pass: config, tokenizer, end-of-sequence and pad ids, the transformers runtime as the
    fallback (when given), and the greedy/sampling split.  Nothing here imports torch or
    numpy."""

    def __init__(self, folder: Path, fallback: Callable[[], Any] | None = None) -> None:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        generation: dict[str, Any] = {}
        if (folder / "generation_config.json").is_file():
            generation = json.loads((folder / "generation_config.json").read_text("utf-8"))
        self.folder = folder
        self.config = config
        self.tokenizer = _ChatTokenizer(folder)
        eos = generation.get("eos_token_id", config.get("eos_token_id"))
        pad = (self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None
               else self.tokenizer.eos_token_id)
        if pad is None:
            raise RuntimeError(f"{folder}: the tokenizer names no pad or end-of-sequence token")
        self.pad_id: int = int(pad)
        self.eos = {int(v) for v in (eos if isinstance(eos, list) else [eos]) if v is not None}
        if self.tokenizer.eos_token_id is not None:
            self.eos.add(int(self.tokenizer.eos_token_id))
        self._generation_eos = [int(v) for v in (eos if isinstance(eos, list) else [eos])
                                if v is not None]
        self.max_context = int(config.get("max_position_embeddings") or 0)
        self._fallback_factory = fallback
        self._fallback: Any = None

    def fallback(self) -> Any:
        """The transformers runtime for what this one does not repeat (loaded once)."""
        if self._fallback is None:
            if self._fallback_factory is None:
                raise RuntimeError("this runtime has no fallback")
            self._fallback = self._fallback_factory()
        return self._fallback

    # ------------------------------------------------------------------ tokens

    def prompt_ids(self, messages: Sequence[Message]) -> list[int]:
        return self.tokenizer.chat_ids([m.to_dict() for m in messages])

    def choice_ids(self, choice: str) -> list[int]:
        return self.tokenizer.encode(choice, add_special_tokens=False)

    @staticmethod
    def _exact(params: Mapping[str, Any]) -> bool:
        """Greedy, no penalty, no stop strings: what ``generate_batch`` repeats."""
        return (not float(params.get("temperature") or 0.0) > 0
                and params.get("repetition_penalty") is None
                and not _stop_list(params.get("stop")))

    def generate(self, prompt: list[int], params: Mapping[str, Any]) -> _Generation:
        return self.generate_batch([prompt], params)[0]

    def generate_batch(self, prompts: Sequence[list[int]],
                       params: Mapping[str, Any]) -> list[_Generation]:
        raise NotImplementedError

    def _results(self, prompts: Sequence[list[int]], out: list[list[int]],
                 max_tokens: int, stop: Sequence[str] = (),
                 ends: Mapping[int, int] | None = None) -> list[_Generation]:
        """Generations from each row's new tokens as ``generate`` returns them (a finished
        row of a batch continues with the pad token); ``ends``: the number of tokens of the
        rows a ``stop`` string ended, whose text is cut before it."""
        results = []
        for row, prompt in enumerate(prompts):
            if ends and row in ends:
                new = out[row][:ends[row]]
            else:
                new = self._own_tokens(out[row], padded=len(prompts) > 1)
            hit_eos = bool(new) and new[-1] in self.eos
            text = self.tokenizer.decode(new, skip_special_tokens=True)
            text, hit_stop = truncate_at_stop(text, stop)
            finish = "stop" if (hit_eos or hit_stop or len(new) < max_tokens) else "length"
            results.append(_Generation(text, len(prompt), len(new), finish))
        return results

    def _own_tokens(self, new: list[int], padded: bool) -> list[int]:
        """A batch row's tokens up to its end of sequence (as ``_TransformersRuntime``)."""
        if not padded:
            return new
        end = next((k + 1 for k, tok in enumerate(new) if tok in self.eos), len(new))
        if end == len(new) and self.pad_id not in self.eos:
            while end > 0 and new[end - 1] == self.pad_id:
                end -= 1
        return new[:end]

    def choice_logprobs(self, prompt: list[int], choices: Sequence[list[int]]) -> list[float]:
        return self.choice_logprobs_batch([prompt], [choices])[0]

    def choice_logprobs_batch(self, prompts: Sequence[list[int]],
                              choices: Sequence[Sequence[list[int]]]) -> list[list[float]]:
        raise NotImplementedError


class FastLlamaRuntime(LlamaRuntimeBase):
    """The runtime interface of ``_TransformersRuntime`` over :class:`_Llama`; requests it
    does not repeat exactly go to ``fallback()`` (the transformers runtime, loaded once)."""

    def __init__(self, folder: Path, threads: int,
                 fallback: Callable[[], Any]) -> None:
        import torch

        self.torch = torch
        if torch.get_num_threads() != threads:
            torch.set_num_threads(threads)
        super().__init__(folder, fallback)
        self.model = _Llama(folder, self.config)

    def _left_pad(self, prompts: Sequence[list[int]]) -> tuple[Any, Any]:
        return left_pad(self.torch, prompts, self.pad_id)

    # ------------------------------------------------------------------ generation

    def generate_batch(self, prompts: Sequence[list[int]],
                       params: Mapping[str, Any]) -> list[_Generation]:
        """Greedy decoding as ``model.generate`` does it: one prompt unpadded, several
        left-padded with a mask (position ids from the mask, finished rows fed the pad)."""
        if not self._exact(params):
            return list(self.fallback().generate_batch(prompts, params))
        torch = self.torch
        max_tokens = int(params.get("max_tokens") or DEFAULT_MAX_TOKENS)
        ids, mask = self._left_pad(prompts)
        positions = (mask.long().cumsum(-1) - 1).masked_fill(mask == 0, 0)
        mask2d: Any = None if bool(mask.all()) else mask  # generate drops an all-ones mask
        eos = torch.tensor(self._generation_eos or sorted(self.eos), dtype=torch.long)
        unfinished = torch.ones(len(prompts), dtype=torch.long)
        cache: list[Any] = []
        step_ids, step_pos = ids, positions
        generated: list[Any] = []
        with torch.inference_mode():
            for _ in range(max_tokens):
                logits = self.model.forward(step_ids, step_pos, mask2d, cache,
                                            keep=slice(-1, None))
                scores = logits[:, -1].to(copy=True, dtype=torch.float32)
                next_tokens = torch.argmax(scores, dim=-1)
                next_tokens = next_tokens * unfinished + self.pad_id * (1 - unfinished)
                generated.append(next_tokens)
                unfinished = unfinished & ~torch.isin(next_tokens, eos)
                if not bool(unfinished.any()):
                    break
                step_ids = next_tokens[:, None]
                step_pos = step_pos[:, -1:] + 1
                if mask2d is not None:
                    mask2d = torch.cat([mask2d, mask2d.new_ones((mask2d.shape[0], 1))], dim=-1)
        out = torch.stack(generated, dim=1).tolist() if generated else [[] for _ in prompts]
        return self._results(prompts, out, max_tokens)

    # ------------------------------------------------------------------ choices

    def choice_logprobs_batch(self, prompts: Sequence[list[int]],
                              choices: Sequence[Sequence[list[int]]]) -> list[list[float]]:
        """First-token log-probabilities from one (left-padded) pass; multi-token choices
        from a right-padded pass per prompt, as the transformers runtime does."""
        torch = self.torch
        ids, mask = self._left_pad(prompts)
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        results = []
        with torch.inference_mode():
            logits = self.model.forward(ids, positions, mask, [], keep=slice(-1, None))
            first = torch.log_softmax(logits[:, -1].float(), dim=-1)
            for row, (prompt, options) in enumerate(zip(prompts, choices, strict=True)):
                scores = [float(first[row, c[0]]) for c in options]
                results.append(self._with_multi_token(prompt, options, scores))
        return results

    def _with_multi_token(self, prompt: list[int], choices: Sequence[list[int]],
                          scores: list[float]) -> list[float]:
        torch = self.torch
        multi = [i for i, ids in enumerate(choices) if len(ids) > 1]
        if not multi:
            return scores
        seqs = [prompt + choices[i] for i in multi]
        width = max(len(s) for s in seqs)
        pad = self.tokenizer.pad_token_id or 0
        batch = torch.tensor([s + [pad] * (width - len(s)) for s in seqs])
        mask = torch.tensor([[1] * len(s) + [0] * (width - len(s)) for s in seqs])
        positions = torch.arange(width).unsqueeze(0)
        start = len(prompt) - 1
        longest = max(len(choices[i]) for i in multi)
        logits = self.model.forward(batch, positions, mask, [],
                                    keep=slice(start, start + longest))
        logp = torch.log_softmax(logits.float(), dim=-1)
        for row, i in enumerate(multi):
            scores[i] = sum((float(logp[row, j, tok]) for j, tok in enumerate(choices[i])),
                            0.0)
        return scores
