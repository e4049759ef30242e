"""The converted model run on numpy alone: the local backend's default forward pass.

``import torch`` alone costs about 220 MB of resident memory and 1.5-3 s on 2 cores, more than
everything else the local backend needs for SmolLM2-135M (the weights, memory-mapped, are
~513 MB; numpy and ``tokenizers`` ~30 MB).  This module runs the same Llama forward pass as
:mod:`ragmeter.backends._local._fast` (and transformers 5's ``modeling_llama``) in float32 numpy:

* the weights are read-only ``np.frombuffer`` views of one memory map of
  ``model.safetensors`` (no copy; pages are read on first use and shared with the page cache);
* RMSNorm, rotary embeddings from the position ids, attention with grouped key/value heads,
  SiLU MLP, the tied lm_head; every matrix product goes through numpy's BLAS;
* a key/value cache preallocated per generation and laid out as a left-padded batch (every
  row's prompt ends at the same column, new tokens are written at the same column for all
  rows; the padded columns are masked out as in ``generate``'s attention mask);
* prompts are packed without their padding for the projections and the MLP, and each row's
  prompt attends only to its own tokens (what the padding mask lets through, with the same
  position ids ``generate`` derives from it): padding costs no arithmetic;
* logits only for the positions read: the last prompt position, each decoding step, and the
  positions a multi-token choice needs;
* tokens that every prompt of a greedy batch starts with (a system prompt, the chat
  template's opening: ~55% of the demo's prompt tokens) are computed once, their keys and
  values kept for later batches that start the same way; the other tokens attend to them
  with the queries in the same blocks of absolute positions as in one whole pass.  Logits
  then differ from the whole pass's by float32 noise, as a batch's do from one prompt's
  (4.7e-5 at most on logits of a real batch); greedy answers are unchanged (tested, and the
  demo's 50 stored answers are identical with and without).

Greedy generation follows ``GenerationMixin._sample`` as :class:`FastLlamaRuntime` does
(argmax of the last position, end of sequence, finished rows fed the pad token, stop when
every row has ended or ``max_tokens`` is reached).  A different BLAS adds in a different
order, so logits differ from torch's in the last bits (~1e-5 here); greedy outputs equal the
torch runtime's and choice probabilities agree within 1e-4 (``tests/llm/test_local_numpy.py``
on the real model).  Sampling, stop strings and repetition penalties go to the transformers
runtime, loaded on first need, as from :class:`FastLlamaRuntime`.
"""

from __future__ import annotations

import functools
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragmeter.backends._local._choose import Chooser as _Chooser
from ragmeter.backends._local._choose import log_softmax as _log_softmax
from ragmeter.backends._local._fast import LlamaRuntimeBase
from ragmeter.backends._local._runtimes import (
    DEFAULT_MAX_TOKENS,
    _Generation,
    _stop_list,
    truncate_at_stop,
)
from ragmeter.backends._local._weights import (
    Blocks,
    Layer,
    load_safetensors_numpy,
    load_weights,
)

__all__ = ["NumpyLlamaRuntime", "load_safetensors_numpy"]

_QUERY_BLOCK = 256  # prompt positions per attention block (bounds the score matrix's memory)


@dataclass(frozen=True)
class Prefix:
    """Keys and values of every layer, ``(kv_heads, length, head_dim)`` each, for the first
    ``length`` tokens that every prompt of a batch shares (:meth:`_NumpyLlama.prefix_kv`)."""

    length: int
    keys: tuple[Any, ...]
    values: tuple[Any, ...]


class _KVCache:
    """Keys and values of a batch, per layer ``(batch, kv_heads, capacity, head_dim)``, laid
    out left-padded: row ``r``'s prompt fills columns ``[width - len_r, width)``, step ``t``
    writes column ``width + t`` of every row.  ``bias`` is 0 on a row's own columns and
    ``-inf`` on its padding (the additive form of the attention mask)."""

    def __init__(self, np: Any, layers: int, lengths: Sequence[int], kv_heads: int,
                 head_dim: int, new_tokens: int) -> None:
        self.width = max(lengths)
        self.lengths = list(lengths)
        capacity = self.width + new_tokens
        shape = (len(lengths), kv_heads, capacity, head_dim)
        # zeros, not empty: a masked column's weight is exactly 0, and 0 * (garbage NaN)
        # would not be
        self.keys = [np.zeros(shape, dtype=np.float32) for _ in range(layers)]
        self.values = [np.zeros(shape, dtype=np.float32) for _ in range(layers)]
        self.bias = np.zeros((len(lengths), 1, 1, capacity), dtype=np.float32)
        for row, length in enumerate(lengths):
            self.bias[row, ..., :self.width - length] = -np.inf
        self.filled = self.width  # columns written so far (all rows alike)


class _NumpyLlama:
    """The forward pass of ``LlamaForCausalLM`` over memory-mapped numpy weights."""

    def __init__(self, folder: Path, config: Mapping[str, Any], threads: int,
                 kernel: Any = None) -> None:
        import numpy as np

        self.np = np
        self.threads = max(1, int(threads))
        self.blas = _Blas()
        self._pool: Any = None
        self.weights = load_weights(folder, config, kernel)
        if kernel is not None and self.weights.kind == "blocks":
            kernel.set_threads(self.threads)
        self.vocab = self.weights.vocab
        self.final_norm = self.weights.final_norm
        self.layers = int(config["num_hidden_layers"])
        self.heads = int(config["num_attention_heads"])
        self.kv_heads = int(config.get("num_key_value_heads") or self.heads)
        self.head_dim = int(config.get("head_dim") or int(config["hidden_size"]) // self.heads)
        self.groups = self.heads // self.kv_heads
        self.scaling = np.float32(self.head_dim ** -0.5)
        self.eps = np.float32(config["rms_norm_eps"])
        base = float(config["rope_parameters"]["rope_theta"])
        dim = self.head_dim
        self.inv_freq = (1.0 / (base ** (np.arange(0, dim, 2, dtype=np.float32) / dim))
                         ).astype(np.float32)
        self._sizes = (self.heads * dim, self.kv_heads * dim, self.kv_heads * dim)
        #: the whole decoding step in one C call (:meth:`decode`), when the kernel does it
        self.step = self._decode_step(kernel, config)

    def _decode_step(self, kernel: Any, config: Mapping[str, Any]) -> Any:
        """The kernel's :class:`~ragmeter.backends._local._kernel.DecodeStep` over these
        weights, when the kernel is asked for it and the weights are all blocks; else None."""
        found = self.weights.step_weights() if kernel is not None and kernel.whole_step else None
        if found is None:
            return None
        from ragmeter.backends._local._kernel import DecodeStep

        dims = {"layers": self.layers, "hidden": int(config["hidden_size"]),
                "heads": self.heads, "kv_heads": self.kv_heads, "head_dim": self.head_dim,
                "intermediate": int(config["intermediate_size"]), "vocab": self.vocab}
        return DecodeStep(kernel, *found, dims, float(self.eps), float(self.scaling))

    def weight_bytes_per_token(self) -> int:
        """Bytes of weights one decode step reads (``benchmarks/bench_decode.py``'s
        ceiling): every layer's, the final norm, the lm_head and one embedding row."""
        return self.weights.bytes_per_token()

    # ------------------------------------------------------------------ pieces

    def _norm(self, h: Any, weight: Any) -> Any:
        np = self.np
        variance = np.mean(np.square(h), axis=-1, keepdims=True)
        return weight * (h * (1.0 / np.sqrt(variance + self.eps)))

    def _rotary(self, positions: Any) -> tuple[Any, Any]:
        """cos and sin ``(tokens, 1, head_dim)`` for float32 position ids."""
        np = self.np
        freqs = positions[:, None] * self.inv_freq[None, :]
        emb = np.concatenate((freqs, freqs), axis=-1)
        return np.cos(emb)[:, None, :], np.sin(emb)[:, None, :]

    def _rotate(self, x: Any, cos: Any, sin: Any) -> Any:
        """``x * cos + rotate_half(x) * sin`` (``rotate_half``: ``[-x2, x1]``)."""
        np = self.np
        half = x.shape[-1] // 2
        rotated = np.concatenate((-x[..., half:], x[..., :half]), axis=-1)
        return x * cos + rotated * sin

    @staticmethod
    def _softmax_(np: Any, scores: Any) -> Any:
        """Softmax over the last axis, in place."""
        scores -= scores.max(axis=-1, keepdims=True)
        np.exp(scores, out=scores)
        scores /= scores.sum(axis=-1, keepdims=True)
        return scores

    def _mlp(self, x: Any, layer: Layer) -> Any:
        np = self.np
        gate, up = layer.gate_up(x)
        # silu(g) = g * sigmoid(g) = g / (1 + exp(-g))
        silu = gate / (1.0 + np.exp(-gate))
        silu *= up
        return layer.down(silu)

    # ------------------------------------------------------------------ passes

    def prefill(self, prompts: Sequence[Sequence[int]], cache: _KVCache | None,
                keep: Sequence[tuple[int, int]],
                prefix: Prefix | Sequence[Prefix | None] | None = None) -> list[Any]:
        """Run every prompt from position 0 and return, per row, the logits ``(k, vocab)`` of
        its positions ``keep[row] = (start, stop)``.  With a cache, each row's keys and values
        are written into it, ending at column ``cache.width``.  With a ``prefix`` (the keys
        and values of tokens every row starts with, :meth:`prefix_kv`), ``prompts`` are what
        follows it: their positions start after it, they attend to it, and a cache receives
        the prefix's keys and values before theirs (``keep`` counts from the first token
        after the prefix).  ``prefix`` may also be one per row (a :class:`Prefix` or None
        each): rows that start differently each follow their own.

        Rows are independent, so several prompts are split into ``threads`` groups of about
        equal length, each run on its own thread with a one-thread BLAS (numpy releases the
        GIL in BLAS and large element-wise operations); a lone prompt runs on this thread.  A
        multi-threaded BLAS is not used: it waits for its threads on every product, which on a
        busy 2-core machine made small products 100x slower (see :class:`_Blas`)."""
        rows = list(range(len(prompts)))
        prefixes: list[Prefix | None] = (
            [prefix] * len(prompts) if prefix is None or isinstance(prefix, Prefix)
            else list(prefix))
        groups = _balanced_groups([len(p) for p in prompts], self.threads)
        if len(groups) == 1:
            return self._prefill_rows(prompts, rows, cache, keep, prefixes)
        if self._pool is None:
            from concurrent.futures import ThreadPoolExecutor

            self._pool = ThreadPoolExecutor(max_workers=self.threads,
                                            thread_name_prefix="ragmeter-numpy")
        futures = [self._pool.submit(self._prefill_rows, prompts, group, cache, keep, prefixes)
                   for group in groups]
        out: list[Any] = [None] * len(prompts)
        for group, future in zip(groups, futures, strict=True):
            for row, logits in zip(group, future.result(), strict=True):
                out[row] = logits
        return out

    def prefix_kv(self, tokens: Sequence[int]) -> Prefix:
        """The keys and values of every layer for ``tokens`` (one row, from position 0), to
        pass as :meth:`prefill`'s ``prefix``."""
        captured: list[tuple[Any, Any]] = []
        with self.blas.single():
            self._prefill_rows([tokens], [0], None, [(0, 0)], [None], captured)
        return Prefix(len(tokens), tuple(k for k, _ in captured), tuple(v for _, v in captured))

    def _prefill_rows(self, prompts: Sequence[Sequence[int]], rows: Sequence[int],
                      cache: _KVCache | None, keep: Sequence[tuple[int, int]],
                      prefixes: Sequence[Prefix | None],
                      capture: list[tuple[Any, Any]] | None = None) -> list[Any]:
        """:meth:`prefill` of ``rows`` (packed: no padding), on the calling thread, each
        after its prefix ``prefixes[row]`` (``capture``: receives the single row's keys and
        values, layer by layer)."""
        np = self.np
        starts = [0 if (f := prefixes[r]) is None else f.length for r in rows]
        counts = [len(prompts[r]) for r in rows]
        ids = np.fromiter((t for r in rows for t in prompts[r]), dtype=np.int64,
                          count=sum(counts))
        positions = np.concatenate([np.arange(start, start + n, dtype=np.float32)
                                    for start, n in zip(starts, counts, strict=True)])
        cos, sin = self._rotary(positions)
        offsets = [0]
        for n in counts:
            offsets.append(offsets[-1] + n)
        h = self.weights.embed(ids)
        tokens = len(ids)
        for i, layer in enumerate(self.weights.layers):
            x = self._norm(h, layer.ln1)
            xq, xk, xv = layer.qkv(x, self._sizes)
            q = self._rotate(xq.reshape(tokens, self.heads, self.head_dim), cos, sin)
            k = self._rotate(xk.reshape(tokens, self.kv_heads, self.head_dim), cos, sin)
            v = xv.reshape(tokens, self.kv_heads, self.head_dim)
            out = np.empty((tokens, self.heads, self.head_dim), dtype=np.float32)
            for j, row in enumerate(rows):
                a, b = offsets[j], offsets[j + 1]
                start, prefix = starts[j], prefixes[row]
                kr = np.ascontiguousarray(k[a:b].transpose(1, 0, 2))  # (kv_heads, n, dim)
                vr = np.ascontiguousarray(v[a:b].transpose(1, 0, 2))
                if prefix is not None:  # the row's keys: its prefix's, then its own
                    kr = np.concatenate((prefix.keys[i], kr), axis=1)
                    vr = np.concatenate((prefix.values[i], vr), axis=1)
                if capture is not None:
                    capture.append((kr, vr))
                if cache is not None:
                    lo = cache.width - (start + b - a)
                    cache.keys[i][row, :, lo:cache.width] = kr
                    cache.values[i][row, :, lo:cache.width] = vr
                out[a:b] = self._causal_attention(q[a:b], kr, vr, start)
            h = h + layer.o(out.reshape(tokens, -1))
            h = h + self._mlp(self._norm(h, layer.ln2), layer)
        picked = [h[offsets[j] + keep[row][0]:offsets[j] + keep[row][1]]
                  for j, row in enumerate(rows)]
        logits = self.weights.head(self._norm(np.concatenate(picked), self.final_norm))
        bounds = np.cumsum([0] + [len(x) for x in picked])
        return [logits[bounds[j]:bounds[j + 1]] for j in range(len(rows))]

    def _causal_attention(self, q: Any, k: Any, v: Any, start: int = 0) -> Any:
        """One row's prompt attending to itself, causally: q ``(n, heads, dim)`` at positions
        ``start ..``, k and v ``(kv_heads, start + n, dim)`` (a shared prefix's first);
        returns ``(n, heads, dim)``.  Query heads are grouped per key head (GQA without
        repeating keys); queries go in blocks of absolute positions, each against the keys up
        to its last position, so a query scores the same keys in the same block shape with or
        without a prefix computed apart."""
        np = self.np
        n = q.shape[0]
        groups, kv_heads, dim = self.groups, self.kv_heads, self.head_dim
        # (kv_heads, groups, n, dim): head h = kv_head * groups + g, as repeat_kv orders them
        qg = q.reshape(n, kv_heads, groups, dim).transpose(1, 2, 0, 3)
        out = np.empty((n, kv_heads, groups, dim), dtype=np.float32)
        first = start - start % _QUERY_BLOCK
        for block_start in range(first, start + n, _QUERY_BLOCK):
            lo = max(block_start, start)  # absolute positions [lo, hi)
            hi = min(start + n, block_start + _QUERY_BLOCK)
            rows = hi - lo
            block = np.ascontiguousarray(qg[:, :, lo - start:hi - start]).reshape(
                kv_heads, groups * rows, dim)
            scores = (block @ k[:, :hi].transpose(0, 2, 1)).reshape(kv_heads, groups, rows, hi)
            scores *= self.scaling
            if rows > 1:  # key j is hidden from query i when j > i: + -inf there, + 0 else
                scores += _causal_bias(np, lo, hi)  # (bit-identical to setting -inf)
            self._softmax_(np, scores)
            got = scores.reshape(kv_heads, groups * rows, hi) @ v[:, :hi]
            out[lo - start:hi - start] = got.reshape(kv_heads, groups, rows, dim).transpose(
                2, 0, 1, 3)
        return out.reshape(n, kv_heads * groups, dim)

    def decode(self, tokens: Any, positions: Any, cache: _KVCache) -> Any:
        """One new token per row (``tokens``, ``positions``: ``(batch,)``), written at column
        ``cache.filled`` of every row; returns the logits ``(batch, vocab)``."""
        np = self.np
        batch = len(tokens)
        col = cache.filled
        cos, sin = self._rotary(positions.astype(np.float32))
        if self.step is not None and batch <= Blocks.KERNEL_ROWS:
            logits = self.step(tokens, cos, sin, cache.keys, cache.values, cache.bias, col)
            cache.filled = col + 1
            return logits
        h = self.weights.embed(tokens)
        bias = cache.bias[..., :col + 1]
        for i, layer in enumerate(self.weights.layers):
            x = self._norm(h, layer.ln1)
            xq, xk, xv = layer.qkv(x, self._sizes)
            q = self._rotate(xq.reshape(batch, self.heads, self.head_dim), cos, sin)
            cache.keys[i][:, :, col] = self._rotate(
                xk.reshape(batch, self.kv_heads, self.head_dim), cos, sin)
            cache.values[i][:, :, col] = xv.reshape(batch, self.kv_heads, self.head_dim)
            keys = cache.keys[i][:, :, :col + 1]
            values = cache.values[i][:, :, :col + 1]
            qg = q.reshape(batch, self.kv_heads, self.groups, self.head_dim)
            scores = qg @ keys.transpose(0, 1, 3, 2)  # (batch, kv_heads, groups, columns)
            scores *= self.scaling
            scores += bias
            self._softmax_(np, scores)
            out = (scores @ values).reshape(batch, -1)
            h = h + layer.o(out)
            h = h + self._mlp(self._norm(h, layer.ln2), layer)
        cache.filled = col + 1
        return self.weights.head(self._norm(h, self.final_norm))


class NumpyLlamaRuntime(LlamaRuntimeBase):
    """The runtime interface of ``_TransformersRuntime`` over :class:`_NumpyLlama`: greedy
    decoding, sampling, repetition penalties, stop strings and choice scoring, without torch."""

    #: prompts of a batch that start with the same tokens (a system prompt, a template)
    #: compute those once: at least MIN_PREFIX shared tokens; the last KEPT_PREFIXES
    #: prefixes computed are kept for later batches, at most KEPT_TOKENS tokens in all (the
    #: newest always: SmolLM2-135M's keys and values take 46 kB a token)
    share_prefix = True
    MIN_PREFIX = 32
    KEPT_PREFIXES = 4
    KEPT_TOKENS = 4096

    def __init__(self, folder: Path, threads: int,
                 fallback: Callable[[], Any] | None = None, kernel: Any = None) -> None:
        import numpy as np

        self.np = np
        super().__init__(folder, fallback)
        self.model = _NumpyLlama(folder, self.config, threads, kernel)
        self._prefixes: OrderedDict[tuple[int, ...], Prefix] = OrderedDict()

    def _shared_prefix(self, prompts: Sequence[list[int]]) -> Prefix | None:
        """The keys and values of the tokens every prompt starts with (all but each prompt's
        last token, whose logits are read): a kept prefix when one fits, else computed when
        two or more prompts share at least :attr:`MIN_PREFIX` tokens (and kept)."""
        if not self.share_prefix or not prompts:
            return None
        limit = min(len(p) for p in prompts) - 1
        first = prompts[0]
        for key in sorted(self._prefixes, key=len, reverse=True):
            n = len(key)
            if n <= limit and all(tuple(p[:n]) == key for p in prompts):
                self._prefixes.move_to_end(key)
                return self._prefixes[key]
        if len(prompts) < 2:
            return None
        shared = 0
        while shared < limit and all(p[shared] == first[shared] for p in prompts):
            shared += 1
        if shared < self.MIN_PREFIX:
            return None
        prefix = self.model.prefix_kv(first[:shared])
        self._prefixes[tuple(first[:shared])] = prefix
        while len(self._prefixes) > self.KEPT_PREFIXES or (
                len(self._prefixes) > 1
                and sum(map(len, self._prefixes)) > self.KEPT_TOKENS):
            self._prefixes.popitem(last=False)
        return prefix

    def _row_prefixes(self, prompts: Sequence[list[int]]) -> list[Prefix | None]:
        """Each row's prefix: the one every prompt shares (:meth:`_shared_prefix`); when
        there is none, the one its group shares, the prompts grouped by their first
        :attr:`MIN_PREFIX` tokens (a batch of English and Chinese questions: one per system
        prompt), or a kept one that fits it alone."""
        shared = self._shared_prefix(prompts)
        if shared is not None or len(prompts) < 2 or not self.share_prefix:
            return [shared] * len(prompts)
        groups: dict[tuple[int, ...], list[int]] = {}
        for row, prompt in enumerate(prompts):
            groups.setdefault(tuple(prompt[:self.MIN_PREFIX]), []).append(row)
        out: list[Prefix | None] = [None] * len(prompts)
        for rows in groups.values():
            found = self._shared_prefix([prompts[r] for r in rows])
            for row in rows:
                out[row] = found
        return out

    def generate_batch(self, prompts: Sequence[list[int]],
                       params: Mapping[str, Any]) -> list[_Generation]:
        """Decoding as ``model.generate`` does it on a left-padded batch (see the module
        docstring): greedy, or sampled and penalized by :class:`_Chooser`; a row whose text
        contains a ``stop`` string ends there.  One prompt is a batch of one."""
        with self.model.blas.single():
            return self._generate(prompts, params)

    def _generate(self, prompts: Sequence[list[int]],
                  params: Mapping[str, Any]) -> list[_Generation]:
        np = self.np
        model = self.model
        max_tokens = int(params.get("max_tokens") or DEFAULT_MAX_TOKENS)
        stop = _stop_list(params.get("stop"))
        chooser = _Chooser.of(np, params, prompts, model.vocab)
        cache = _KVCache(np, model.layers, [len(p) for p in prompts], model.kv_heads,
                         model.head_dim, max_tokens)
        eos = np.array(self._generation_eos or sorted(self.eos), dtype=np.int64)
        unfinished = np.ones(len(prompts), dtype=bool)
        positions = np.array([len(p) for p in prompts], dtype=np.int64)
        prefixes = self._row_prefixes(prompts)
        skip = [0 if f is None else f.length for f in prefixes]
        rows = list(zip(prompts, skip, strict=True))
        logits = np.concatenate(model.prefill([p[n:] for p, n in rows], cache,
                                              [(len(p) - n - 1, len(p) - n) for p, n in rows],
                                              prefixes))
        generated: list[Any] = []
        ends: dict[int, int] = {}  # rows a stop string ended: their number of tokens
        next_tokens: Any = None
        for step in range(max_tokens):
            if step:
                logits = model.decode(next_tokens, positions, cache)
                positions += 1
            chosen = np.argmax(logits, axis=-1) if chooser is None else chooser.pick(logits)
            next_tokens = np.where(unfinished, chosen, self.pad_id)
            generated.append(next_tokens)
            unfinished &= ~np.isin(next_tokens, eos)
            if stop:
                self._end_at_stop(generated, unfinished, stop, ends)
            if not unfinished.any():
                break
        out = (np.stack(generated, axis=1).tolist() if generated
               else [[] for _ in prompts])
        if stop:
            return self._results(prompts, out, max_tokens, stop, ends)
        return self._results(prompts, out, max_tokens)

    def _greedy(self, prompts: Sequence[list[int]], max_tokens: int) -> list[_Generation]:
        """Greedy decoding of ``prompts`` (no stop strings)."""
        return self._generate(prompts, {"max_tokens": max_tokens})

    def _end_at_stop(self, generated: Sequence[Any], unfinished: Any, stop: Sequence[str],
                     ends: dict[int, int]) -> None:
        """End the rows whose text now contains a stop string (the text is cut before it
        later, as OpenAI does; the tokens counted are those generated up to it)."""
        for row in self.np.flatnonzero(unfinished).tolist():
            text = self.tokenizer.decode([int(g[row]) for g in generated],
                                         skip_special_tokens=True)
            if truncate_at_stop(text, stop)[1]:
                unfinished[row] = False
                ends[row] = len(generated)

    def choice_logprobs_batch(self, prompts: Sequence[list[int]],
                              choices: Sequence[Sequence[list[int]]]) -> list[list[float]]:
        """First-token log-probabilities from one packed pass over the prompts; each
        multi-token choice from a pass over prompt + choice (its positions only)."""
        with self.model.blas.single():
            return self._choices(prompts, choices)

    def _choices(self, prompts: Sequence[list[int]],
                 choices: Sequence[Sequence[list[int]]]) -> list[list[float]]:
        first = self.model.prefill(prompts, None, [(len(p) - 1, len(p)) for p in prompts])
        results = []
        for prompt, options, logits in zip(prompts, choices, first, strict=True):
            logp = _log_softmax(self.np, logits[0])
            results.append(self._with_multi_token(prompt, options,
                                                  [float(logp[c[0]]) for c in options]))
        return results

    def _with_multi_token(self, prompt: list[int], choices: Sequence[list[int]],
                          scores: list[float]) -> list[float]:
        multi = [i for i, ids in enumerate(choices) if len(ids) > 1]
        if not multi:
            return scores
        start = len(prompt) - 1
        seqs = [prompt + choices[i][:-1] for i in multi]  # the last token is never input
        logits = self.model.prefill(seqs, None,
                                    [(start, start + len(choices[i])) for i in multi])
        for i, rows in zip(multi, logits, strict=True):
            logp = _log_softmax(self.np, rows)
            scores[i] = sum((float(logp[j, tok]) for j, tok in enumerate(choices[i])), 0.0)
        return scores


@functools.lru_cache(maxsize=8)
def _causal_bias(np: Any, lo: int, hi: int) -> Any:
    """``(hi - lo, hi)`` float32: -inf where key ``j`` comes after query ``lo + i``, else 0
    (read-only: shared by every layer and thread).  Adding it to finite scores gives exactly
    what writing -inf into the hidden ones gives, about 10x faster than a boolean mask."""
    bias = np.triu(np.full((hi - lo, hi), -np.inf, dtype=np.float32), lo + 1)
    bias.flags.writeable = False
    return bias


def _balanced_groups(lengths: Sequence[int], parts: int) -> list[list[int]]:
    """Row indices in at most ``parts`` groups of about equal total length (longest first,
    each to the lightest group), each group in row order."""
    groups: list[list[int]] = [[] for _ in range(max(1, min(parts, len(lengths))))]
    load = [0] * len(groups)
    for row in sorted(range(len(lengths)), key=lambda r: -lengths[r]):
        lightest = load.index(min(load))
        groups[lightest].append(row)
        load[lightest] += lengths[row]
    return [sorted(g) for g in groups if g]


class _Blas:
    """One BLAS thread for the forward pass, through threadpoolctl (the controller is built
    once: it finds numpy's BLAS among the loaded libraries; without one it limits nothing).

    The forward pass runs its small products (decoding, attention) on one BLAS thread: a
    multi-threaded OpenBLAS synchronizes its threads on every call, which costs more than a
    small product (measured on 2 busy cores: 8x576 by 576x1536 took 0.36 ms on one thread,
    35 ms on two)."""

    def __init__(self) -> None:
        import numpy  # noqa: F401  (loads its BLAS before the controller looks for it)
        from threadpoolctl import ThreadpoolController

        self.controller = ThreadpoolController()

    def threads(self) -> list[int]:
        """The thread counts of the BLAS libraries found (empty when none)."""
        return [int(info["num_threads"]) for info in self.controller.info()
                if info.get("user_api") == "blas"]

    def single(self) -> Any:
        """A context with one BLAS thread, restoring the previous count after."""
        return self.controller.limit(limits=1, user_api="blas")
