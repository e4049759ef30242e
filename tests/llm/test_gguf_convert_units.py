"""The direct GGUF converter on tiny GGUF files written here with ``gguf.GGUFWriter`` (random
weights, a 300-token byte-level vocabulary): what it converts, what it declines, and that an
interrupted conversion leaves nothing a later load would trust.  No torch, no transformers, no
real model (the comparison with transformers' conversion is test_gguf_convert.py)."""

from __future__ import annotations

import json
import warnings

import pytest

from ragmeter.backends._local import _cache as local_cache
from ragmeter.backends._local import _gguf_convert as gguf_convert
from ragmeter.backends._local._gguf_read import read_gguf

np = pytest.importorskip("numpy")
gguf = pytest.importorskip("gguf")
pytest.importorskip("tokenizers")

HIDDEN, HEADS, KV_HEADS, FFN = 64, 4, 2, 128
HEAD_DIM = HIDDEN // HEADS
Q8_0, Q4_1 = gguf.GGMLQuantizationType.Q8_0, gguf.GGMLQuantizationType.Q4_1


def _vocab():
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    spelling = gguf_convert._byte_alphabet()
    letters = [spelling[b] for b in range(256)]
    merges = ["h e", "l l", "he ll", "Ġ w", "o r", "Ġw or", "l d"]
    words = [m.replace(" ", "") for m in merges]
    tokens = specials + letters + words
    return tokens, [3] * 3 + [1] * (len(tokens) - 3), merges


def write_tiny(path, *, arch="llama", pre="smollm", extra_tensor=None, add_bos=False,
               token_type_4=False, seed=0, down_type=None):
    rng = np.random.default_rng(seed)
    tokens, types, merges = _vocab()
    if token_type_4:
        types = [*types[:-1], 4]
    writer = gguf.GGUFWriter(str(path), arch)
    writer.add_name("tiny test model")
    writer.add_context_length(128)
    writer.add_block_count(2)
    writer.add_embedding_length(HIDDEN)
    writer.add_feed_forward_length(FFN)
    writer.add_head_count(HEADS)
    writer.add_head_count_kv(KV_HEADS)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_rope_freq_base(10000.0)
    writer.add_rope_dimension_count(HEAD_DIM)
    writer.add_vocab_size(len(tokens))
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre(pre)
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    writer.add_token_merges(merges)
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    writer.add_unk_token_id(0)
    writer.add_pad_token_id(2)
    writer.add_add_bos_token(add_bos)
    writer.add_chat_template("{% for m in messages %}<|im_start|>{{ m['content'] }}<|im_end|>"
                             "{% endfor %}")

    def quantized(name, shape, kind):
        data = rng.standard_normal(shape).astype(np.float32)
        writer.add_tensor(name, gguf.quants.quantize(data, kind), raw_dtype=kind)

    quantized("token_embd.weight", (len(tokens), HIDDEN), Q8_0)
    writer.add_tensor("output_norm.weight", rng.standard_normal(HIDDEN).astype(np.float32))
    for i in range(2):
        writer.add_tensor(f"blk.{i}.attn_norm.weight", np.ones(HIDDEN, dtype=np.float32))
        writer.add_tensor(f"blk.{i}.ffn_norm.weight", np.ones(HIDDEN, dtype=np.float32))
        quantized(f"blk.{i}.attn_q.weight", (HIDDEN, HIDDEN), Q4_1)
        quantized(f"blk.{i}.attn_k.weight", (KV_HEADS * HEAD_DIM, HIDDEN), Q4_1)
        quantized(f"blk.{i}.attn_v.weight", (KV_HEADS * HEAD_DIM, HIDDEN), Q4_1)
        quantized(f"blk.{i}.attn_output.weight", (HIDDEN, HIDDEN), Q4_1)
        quantized(f"blk.{i}.ffn_gate.weight", (FFN, HIDDEN), Q4_1)
        quantized(f"blk.{i}.ffn_up.weight", (FFN, HIDDEN), Q4_1)
        quantized(f"blk.{i}.ffn_down.weight", (HIDDEN, FFN), down_type or Q8_0)
    if extra_tensor:
        writer.add_tensor(extra_tensor, np.zeros(HIDDEN, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def _safetensors(path):
    raw = path.read_bytes()
    size = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8:8 + size])
    out = {}
    for name, info in header.items():
        if name != "__metadata__":
            start, end = info["data_offsets"]
            data = np.frombuffer(raw, dtype="<f4", count=(end - start) // 4, offset=8 + size + start)
            out[name] = data.reshape(info["shape"])
    return out


def _llama_cpp_permute(weights, heads):
    """llama.cpp's convert_hf_to_gguf ``permute``: Hugging Face rows -> GGUF rows."""
    return (weights.reshape(heads, 2, weights.shape[0] // heads // 2, *weights.shape[1:])
            .swapaxes(1, 2).reshape(weights.shape))


def test_tiny_llama_converts_to_the_de_quantized_weights(tmp_path, _isolated_home):
    path = write_tiny(tmp_path / "tiny.gguf")
    folder = local_cache.convert_direct(path)
    assert folder is not None and local_cache.is_complete(folder)
    weights = _safetensors(folder / "model.safetensors")
    source = gguf.GGUFReader(str(path))
    stored = {t.name: gguf.quants.dequantize(t.data, t.tensor_type) for t in source.tensors}
    assert len(weights) == len(stored)  # tied: no lm_head
    assert np.array_equal(weights["model.embed_tokens.weight"], stored["token_embd.weight"])
    assert np.array_equal(weights["model.layers.1.mlp.down_proj.weight"],
                          stored["blk.1.ffn_down.weight"])
    assert np.array_equal(weights["model.norm.weight"], stored["output_norm.weight"])
    for i in range(2):  # q/k rows back in Hugging Face's order: llama.cpp's permute undone
        q = weights[f"model.layers.{i}.self_attn.q_proj.weight"]
        k = weights[f"model.layers.{i}.self_attn.k_proj.weight"]
        assert np.array_equal(_llama_cpp_permute(q, HEADS), stored[f"blk.{i}.attn_q.weight"])
        assert np.array_equal(_llama_cpp_permute(k, KV_HEADS), stored[f"blk.{i}.attn_k.weight"])
        assert not np.array_equal(q, stored[f"blk.{i}.attn_q.weight"])
    config = json.loads((folder / "config.json").read_text())
    assert config["num_key_value_heads"] == KV_HEADS and config["tie_word_embeddings"] is True
    assert config["rope_parameters"] == {"rope_theta": 10000.0, "rope_type": "default"}
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    ids = tokenizer.encode("hello world<|im_end|>").ids
    assert ids[-1] == 2 and tokenizer.decode(ids, skip_special_tokens=True) == "hello world"
    info = json.loads((folder / local_cache.CACHE_INFO).read_text())
    assert info["converter"] == gguf_convert.CONVERTER and "transformers" not in info
    assert local_cache.cached_model_dir(path) == folder  # the next load finds it


@pytest.mark.parametrize(("options", "reason"), [
    ({"arch": "qwen2"}, "architecture 'qwen2'"),
    ({"pre": "qwen2"}, "pre-tokenizer 'qwen2'"),
    ({"extra_tensor": "blk.0.attn_q.bias"}, "tensors it does not map"),
    ({"extra_tensor": "rope_freqs.weight"}, "tensors it does not map"),
    ({"add_bos": True}, "adds BOS"),
    ({"token_type_4": True}, "token types"),
])
def test_what_it_does_not_reproduce_is_named(tmp_path, options, reason):
    parsed = read_gguf(write_tiny(tmp_path / "m.gguf", **options))
    try:
        assert reason in (gguf_convert.unsupported(parsed) or "")
    finally:
        parsed.close()


def test_a_declined_file_warns_once_and_leaves_the_conversion_to_transformers(
        tmp_path, _isolated_home):
    path = write_tiny(tmp_path / "q.gguf", arch="qwen2")
    with pytest.warns(UserWarning, match="does not handle architecture 'qwen2'.*transformers"):
        assert local_cache.convert_direct(path) is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert local_cache.convert_direct(path) is None  # said once per file and process
    assert not any(p.is_dir() for p in (_isolated_home / "models").iterdir())


def test_an_interrupted_conversion_leaves_nothing_trusted(tmp_path, _isolated_home, monkeypatch):
    path = write_tiny(tmp_path / "k.gguf")
    real_write = gguf_convert.write_model

    def killed(parsed, target, config):
        real_write(parsed, target, config)  # the weights are out, the rest never comes
        raise KeyboardInterrupt

    monkeypatch.setattr(gguf_convert, "write_model", killed)
    with pytest.raises(KeyboardInterrupt):
        local_cache.convert_direct(path)
    folder = local_cache.cached_model_dir(path)
    assert not local_cache.is_complete(folder) and not folder.exists()
    assert list((_isolated_home / "models").glob(".*")) == []  # the temporary folder is gone
    monkeypatch.setattr(gguf_convert, "write_model", real_write)
    assert local_cache.convert_direct(path) == folder and local_cache.is_complete(folder)


def test_a_complete_folder_made_either_way_serves_the_next_load(tmp_path, _isolated_home):
    pytest.importorskip("transformers")
    path = write_tiny(tmp_path / "e.gguf")
    earlier = local_cache.transformers_model_dir(path)  # as an earlier transformers conversion
    earlier.mkdir(parents=True)
    (earlier / "model.safetensors").write_bytes(b"")
    (earlier / local_cache.CACHE_INFO).write_text("{}")
    assert local_cache.cached_model_dir(path) == earlier
    assert local_cache.convert_direct(path) == earlier  # nothing converted again
    assert [p for p in (_isolated_home / "models").iterdir() if p.is_dir()] == [earlier]
    (earlier / local_cache.CACHE_INFO).unlink()  # incomplete: the direct converter writes its own
    made = local_cache.convert_direct(path)
    assert made is not None and made != earlier and local_cache.cached_model_dir(path) == made
