"""The numpy forward pass (:mod:`ragmeter.backends._local._numpy`) on a tiny random Llama, against
the torch forward pass of :mod:`ragmeter.backends._local._fast` on the same weights (no real model:
seconds; the real-model comparisons are in ``test_local_fast.py``, marked ``local_model``).

The weights are random (seeded), written as a safetensors file by hand so that both runtimes
memory-map the same bytes.  What must hold: logits within float32 noise of torch's at every
position, with GQA, several prompts of different lengths (packed, each attending to itself
only) and a key/value cache; greedy decoding of a batch equal to one prompt at a time.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ragmeter.backends._local import _numpy as local_numpy
from ragmeter.backends._local._numpy import _balanced_groups, _KVCache, _NumpyLlama

CONFIG = {"model_type": "llama", "hidden_act": "silu", "hidden_size": 48,
          "intermediate_size": 96, "num_hidden_layers": 2, "num_attention_heads": 6,
          "num_key_value_heads": 2, "head_dim": 8, "rms_norm_eps": 1e-5, "vocab_size": 64,
          "max_position_embeddings": 512, "tie_word_embeddings": True,
          "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0}}


def _write_safetensors(path: Path, tensors: dict[str, np.ndarray]) -> None:
    header, blobs, offset = {}, [], 0
    for name, array in tensors.items():
        data = np.ascontiguousarray(array, dtype=np.float32).tobytes()
        header[name] = {"dtype": "F32", "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    raw = json.dumps(header).encode("utf-8")
    raw += b" " * (-len(raw) % 8)
    path.write_bytes(len(raw).to_bytes(8, "little") + raw + b"".join(blobs))


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("tiny-llama")
    rng = np.random.default_rng(14)
    h, inter, kv = CONFIG["hidden_size"], CONFIG["intermediate_size"], 2 * 8
    tensors = {"model.embed_tokens.weight": rng.normal(0, 1, (64, h)),
               "model.norm.weight": rng.uniform(0.5, 1.5, h)}
    for i in range(CONFIG["num_hidden_layers"]):
        p = f"model.layers.{i}."
        tensors.update({
            p + "input_layernorm.weight": rng.uniform(0.5, 1.5, h),
            p + "post_attention_layernorm.weight": rng.uniform(0.5, 1.5, h),
            p + "self_attn.q_proj.weight": rng.normal(0, 0.3, (h, h)),
            p + "self_attn.k_proj.weight": rng.normal(0, 0.3, (kv, h)),
            p + "self_attn.v_proj.weight": rng.normal(0, 0.3, (kv, h)),
            p + "self_attn.o_proj.weight": rng.normal(0, 0.3, (h, h)),
            p + "mlp.gate_proj.weight": rng.normal(0, 0.3, (inter, h)),
            p + "mlp.up_proj.weight": rng.normal(0, 0.3, (inter, h)),
            p + "mlp.down_proj.weight": rng.normal(0, 0.3, (h, inter))})
    _write_safetensors(folder / "model.safetensors", tensors)
    return folder


PROMPTS = [[1, 5, 9, 33, 2, 7, 7, 63], [4, 4, 12], [60, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12],
           [0], [17, 18, 19, 20, 21]]


def _torch_logits(folder: Path, prompt: list[int]) -> np.ndarray:
    torch = pytest.importorskip("torch")
    from ragmeter.backends._local._fast import _Llama

    model = _Llama(folder, CONFIG)
    with torch.inference_mode():
        return model.forward(torch.tensor([prompt]), torch.arange(len(prompt))[None], None,
                             []).numpy()[0]


def test_numpy_logits_match_torch_at_every_position(tiny):
    model = _NumpyLlama(tiny, CONFIG, threads=2)
    with model.blas.single():
        packed = model.prefill(PROMPTS, None, [(0, len(p)) for p in PROMPTS])
    for prompt, got in zip(PROMPTS, packed, strict=True):
        want = _torch_logits(tiny, prompt)
        assert got.shape == want.shape and got.dtype == np.float32
        scale = max(1.0, float(np.abs(want).max()))
        assert np.abs(got - want).max() < 1e-5 * scale  # float32 noise (torch: MKL)
        alone = model.prefill([prompt], None, [(0, len(prompt))])[0]
        assert np.abs(alone - got).max() < 1e-5 * scale  # packed with others = alone
        assert (alone.argmax(-1) == want.argmax(-1)).all()


def test_decoding_with_the_cache_matches_a_full_pass(tiny):
    """Prefill into the left-padded cache, then decode token by token: each step's logits
    are the full pass's logits at that position."""
    model = _NumpyLlama(tiny, CONFIG, threads=1)
    prompts = [PROMPTS[0][:5], PROMPTS[2][:2], PROMPTS[4][:4]]
    rest = [PROMPTS[0][5:8], PROMPTS[2][2:5], PROMPTS[4][4:5] + [9, 9]]
    cache = _KVCache(np, model.layers, [len(p) for p in prompts], model.kv_heads,
                     model.head_dim, 3)
    model.prefill(prompts, cache, [(len(p) - 1, len(p)) for p in prompts])
    full = [p + r for p, r in zip(prompts, rest, strict=True)]
    want = model.prefill(full, None, [(len(p), len(p) + 3) for p in prompts])
    positions = np.array([len(p) for p in prompts])
    for step in range(3):
        tokens = np.array([r[step] for r in rest])
        got = model.decode(tokens, positions + step, cache)
        for row in range(3):
            assert np.abs(got[row] - want[row][step]).max() < 1e-4


def test_balanced_groups():
    assert _balanced_groups([5, 1, 1, 5], 2) == [[0, 1], [2, 3]]
    assert _balanced_groups([3], 4) == [[0]]
    assert sorted(r for g in _balanced_groups([9, 8, 7, 1, 2, 3, 4, 5], 2) for r in g) == list(
        range(8))
    assert _balanced_groups([1, 2, 3], 1) == [[0, 1, 2]]


def test_blas_thread_scope_restores_the_count():
    blas = local_numpy._Blas()
    before = blas.threads()
    if not before:
        pytest.skip("threadpoolctl finds no BLAS library here")
    with blas.single():
        assert blas.threads() == [1] * len(before)
    assert blas.threads() == before


def _prefix_case(shared: int, tails: list[list[int]]) -> tuple[list[int], list[list[int]]]:
    prefix = [(7 * i + 3) % 64 for i in range(shared)]
    return prefix, [prefix + t for t in tails]


@pytest.mark.parametrize("shared", [10, 250])  # 250: the tails cross a 256-query block
def test_prefill_after_a_shared_prefix_is_the_full_pass(tiny, shared):
    """Prompts that start alike: the prefix's keys and values computed once, then each
    prompt's remaining tokens attending to them, give the full pass's logits at every
    position (float32 noise), and a cache filled that way decodes like the full pass."""
    model = _NumpyLlama(tiny, CONFIG, threads=2)
    tails = [[1, 2, 3], [63], [7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7]]
    prefix_tokens, full = _prefix_case(shared, tails)
    with model.blas.single():
        want = model.prefill(full, None, [(shared, len(p)) for p in full])
        prefix = model.prefix_kv(prefix_tokens)
        got = model.prefill(tails, None, [(0, len(t)) for t in tails], prefix)
    assert prefix.length == shared and len(prefix.keys) == CONFIG["num_hidden_layers"]
    for g, w in zip(got, want, strict=True):
        scale = max(1.0, float(np.abs(w).max()))
        assert g.shape == w.shape and np.abs(g - w).max() < 1e-5 * scale
    # decoding after a prefix-filled cache = decoding after a full prefill
    caches = [_KVCache(np, model.layers, [len(p) for p in full], model.kv_heads,
                       model.head_dim, 2) for _ in range(2)]
    model.prefill(full, caches[0], [(len(p) - 1, len(p)) for p in full])
    model.prefill(tails, caches[1], [(len(t) - 1, len(t)) for t in tails], prefix)
    positions = np.array([len(p) for p in full])
    for step in range(2):
        tokens = np.array([5 + step] * len(full))
        a = model.decode(tokens, positions + step, caches[0])
        b = model.decode(tokens, positions + step, caches[1])
        assert np.abs(a - b).max() < 1e-4


def _runtime(tiny, minimum=4, kept=2):
    """The runtime's prefix bookkeeping over the tiny model (no tokenizer needed)."""
    from collections import OrderedDict

    runtime = local_numpy.NumpyLlamaRuntime.__new__(local_numpy.NumpyLlamaRuntime)
    runtime.np = np
    runtime.model = _NumpyLlama(tiny, CONFIG, threads=1)
    runtime._prefixes = OrderedDict()
    runtime.MIN_PREFIX, runtime.KEPT_PREFIXES = minimum, kept
    return runtime


def test_shared_prefixes_are_found_kept_and_reused(tiny):
    runtime = _runtime(tiny)
    base, prompts = _prefix_case(6, [[1, 2], [3]])
    first = runtime._shared_prefix(prompts)
    assert first is not None and first.length == 6
    # a later batch, even of one prompt, that starts with a kept prefix reuses it
    assert runtime._shared_prefix([base + [9, 9, 9]]) is first
    # one prompt alone computes nothing new; fewer shared tokens than MIN_PREFIX neither
    assert runtime._shared_prefix([[1, 2, 3, 4, 5, 6, 7]]) is None
    assert runtime._shared_prefix([[1, 2, 3, 9], [1, 2, 3, 8]]) is None
    # a prompt that is all prefix keeps its last token to be computed (its logits are read)
    whole = runtime._shared_prefix([base[:5], base[:5] + [1]])
    assert whole is not None and whole.length == 4
    # only KEPT_PREFIXES are kept, the least recently used dropped
    runtime._shared_prefix([[40] * 8, [40] * 9])
    assert len(runtime._prefixes) == 2 and tuple(base) not in runtime._prefixes
    # and at most KEPT_TOKENS tokens in all, the newest always
    runtime.KEPT_TOKENS = 10
    runtime._shared_prefix([[41] * 12, [41] * 13])
    assert list(runtime._prefixes) == [(41,) * 11]
    runtime.share_prefix = False
    assert runtime._shared_prefix([[40] * 8, [40] * 9]) is None


def test_greedy_with_shared_prefixes_is_greedy_without(tiny):
    """Whole generations: the same tokens with prefix sharing on and off, batched and alone."""
    on, off = _runtime(tiny), _runtime(tiny)
    off.share_prefix = False
    _, prompts = _prefix_case(40, [[1, 2, 3], [63], [9, 9, 9, 9, 9]])
    for runtime in (on, off):
        runtime.pad_id, runtime.eos, runtime._generation_eos = 0, {0}, [0]
        runtime._results = lambda prompts, out, max_tokens: out
    assert on._greedy(prompts, 6) == off._greedy(prompts, 6)
    assert len(on._prefixes) == 1
    assert [on._greedy([p], 6)[0] for p in prompts] == off._greedy(prompts, 6)


def test_a_batch_of_two_kinds_of_prompt_shares_a_prefix_per_kind(tiny):
    """No prefix is common to the whole batch (two system prompts, and one prompt like
    neither): each group of prompts that start alike gets its own, a lone prompt none, and
    the logits and greedy tokens are those of the pass without sharing."""
    on, off = _runtime(tiny), _runtime(tiny)
    off.share_prefix = False
    _, english = _prefix_case(12, [[1, 2, 3], [63], [9, 9, 9, 9, 9]])
    _, chinese = _prefix_case(30, [[4], [5, 6]])
    chinese = [[40 + t % 20 for t in p] for p in chinese]  # another start than english's
    prompts = [english[0], chinese[0], [7, 8, 9, 10, 11, 12, 13], english[1], chinese[1],
               english[2]]
    prefixes = on._row_prefixes(prompts)
    assert [None if f is None else f.length for f in prefixes] == [12, 30, None, 12, 30, 12]
    assert prefixes[0] is prefixes[3] is prefixes[5] and prefixes[1] is prefixes[4]
    skip = [0 if f is None else f.length for f in prefixes]
    rows = list(zip(prompts, skip, strict=True))
    with on.model.blas.single():
        got = on.model.prefill([p[n:] for p, n in rows], None,
                               [(0, len(p) - n) for p, n in rows], prefixes)
        want = on.model.prefill(prompts, None, [(n, len(p)) for p, n in rows])
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape and np.abs(g - w).max() < 1e-5 * max(1.0, np.abs(w).max())
    for runtime in (on, off):
        runtime.pad_id, runtime.eos, runtime._generation_eos = 0, {0}, [0]
        runtime._results = lambda prompts, out, max_tokens: out
    assert on._greedy(prompts, 6) == off._greedy(prompts, 6)
    # a later lone prompt of either kind reuses its group's prefix
    assert on._row_prefixes([english[2]]) == [prefixes[0]]
