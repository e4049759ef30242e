"""Convert a Llama GGUF file into the cache folder directly: numpy, ``gguf`` and ``tokenizers``,
no torch and no transformers.

The folder is the one :mod:`ragmeter.backends._local._cache` used to write from
``transformers.AutoModelForCausalLM.from_pretrained(dir, gguf_file=...)`` (transformers 5's GGUF
loader for the ``llama`` architecture, ``modeling_gguf_pytorch_utils.load_gguf_checkpoint``,
and its tokenizer builder ``integrations/gguf/gguf_tokenizer_mapping.py``), with the same
content, made without importing either library:

* ``model.safetensors``: every tensor de-quantized by ``gguf.quants.dequantize`` (the function
  transformers calls) to float32, the GGUF names mapped to Llama's, the rows of ``attn_q`` and
  ``attn_k`` put back in Hugging Face's rotary order (llama.cpp's converter interleaves the two
  halves of each head), the tied ``lm_head`` left out.  Tensors are written in name order with
  the same header as ``safetensors.torch.save_file`` (tested: the file is byte-identical), one
  tensor at a time, de-quantized in slices of rows, so memory stays small.
* ``config.json``: the GGUF's hyper-parameters under Llama's names plus the Llama settings the
  architecture fixes (SiLU, no biases, default rotary), what transformers' config reads back
  the same (tested).  ``generation_config.json``: the special token ids.
* ``tokenizer.json``: the byte-level BPE transformers builds for ``tokenizer.ggml.model ==
  "gpt2"`` (vocabulary respelled in the byte alphabet, the file's merges, the GPT-2 split,
  control tokens as special tokens), ``tokenizer_config.json`` with the special tokens, and
  ``chat_template.jinja``.

Files this converter does not handle exactly (another architecture, biases, rotary scaling,
another tokenizer or pre-tokenizer, user-defined tokens...) are named by :func:`unsupported`,
and :mod:`ragmeter.backends._local._cache` converts them with transformers instead.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ragmeter.backends._local._gguf_read import GgufFile, TensorInfo

__all__ = ["CONVERTER", "BLOCKS_FORMAT", "F32_FILE", "BLOCKS_FILE", "unsupported",
           "blocks_unsupported", "convert", "write_weights", "hf_name"]

# Names the conversion in the cache key; bump it when the output of this module changes.
CONVERTER = "ragmeter-gguf-llama-v1"

_F32 = 0
_BLOCK_TYPES = {3: "Q4_1", 8: "Q8_0"}  # what ragmeter.backends._local._kernels.c multiplies
BLOCKS_FORMAT = "ragmeter-blocks-1"
F32_FILE = "model.safetensors"
BLOCKS_FILE = "model-blocks.safetensors"
_CHUNK_ELEMENTS = 1 << 22  # rows de-quantized at a time: about 16 MB of float32

# GGUF tensor names (ggml's "standardized tensor names") -> Llama's
_TOP = {"token_embd": "model.embed_tokens", "output_norm": "model.norm", "output": "lm_head"}
_BLOCK = {"attn_norm": "input_layernorm", "attn_q": "self_attn.q_proj",
          "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
          "attn_output": "self_attn.o_proj", "ffn_norm": "post_attention_layernorm",
          "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj"}
_BLOCK_RE = re.compile(r"blk\.(\d+)\.(\w+)\.weight")

# llama.* metadata -> config key; the first group must be present
_REQUIRED = {"context_length": "max_position_embeddings", "block_count": "num_hidden_layers",
             "feed_forward_length": "intermediate_size", "embedding_length": "hidden_size",
             "attention.head_count": "num_attention_heads",
             "attention.layer_norm_rms_epsilon": "rms_norm_eps", "rope.freq_base": "rope_theta"}
_OPTIONAL = {"attention.head_count_kv": "num_key_value_heads",
             "rope.dimension_count": "head_dim", "vocab_size": "vocab_size"}
_TOKEN_IDS = {"bos_token_id": "bos_token_id", "eos_token_id": "eos_token_id",
              "unknown_token_id": "unk_token_id", "padding_token_id": "pad_token_id"}
_SPECIAL = {"bos_token": "bos_token_id", "eos_token": "eos_token_id",
            "unk_token": "unknown_token_id", "pad_token": "padding_token_id"}
# pre-tokenizers transformers 5 leaves at the byte-level GPT-2 split (its table of other splits
# names none of these); any other name gets the transformers conversion
_GPT2_SPLIT_PRE = {"default", "gpt-2", "gpt2", "smollm"}
_NORMAL, _CONTROL = 1, 3


def hf_name(gguf_name: str) -> str | None:
    """The Llama state-dict name of a GGUF tensor, or None for a name Llama does not have."""
    if gguf_name.endswith(".weight") and gguf_name[:-7] in _TOP:
        return _TOP[gguf_name[:-7]] + ".weight"
    match = _BLOCK_RE.fullmatch(gguf_name)
    if match and match[2] in _BLOCK:
        return f"model.layers.{match[1]}.{_BLOCK[match[2]]}.weight"
    return None


def unsupported(gguf: GgufFile) -> str | None:
    """Why this converter cannot reproduce transformers' conversion of ``gguf``, or None."""
    meta = gguf.metadata
    arch = meta.get("general.architecture")
    if arch != "llama":
        return f"architecture {arch!r} (it converts 'llama' only)"
    if "mistral" in str(meta.get("general.name", "")).lower():
        return "a Mistral model stored as 'llama' (transformers loads it as Mistral)"
    known = {f"llama.{k}" for k in (*_REQUIRED, *_OPTIONAL)}
    extra = sorted(k for k in meta if k.startswith("llama.") and k not in known)
    if extra:
        return f"metadata it does not map ({', '.join(extra[:4])})"
    missing = [f"llama.{k}" for k in _REQUIRED if f"llama.{k}" not in meta]
    if missing:
        return f"missing metadata ({', '.join(missing)})"
    names = {t.name for t in gguf.tensors}
    strange = sorted(n for n in names if hf_name(n) is None)
    if strange:
        return f"tensors it does not map ({', '.join(strange[:4])})"
    layers = int(meta["llama.block_count"])
    expected = {"token_embd.weight", "output_norm.weight"} | {
        f"blk.{i}.{part}.weight" for i in range(layers) for part in _BLOCK}
    if not expected <= names or len(names - expected - {"output.weight"}) > 0:
        return "a tensor list that is not a plain Llama's"
    types = sorted({t.ggml_type for t in gguf.tensors})
    if not all(_dequantizable(t) for t in types):
        return f"tensor types gguf cannot de-quantize with numpy ({types})"
    return _tokenizer_unsupported(meta)


def _dequantizable(ggml_type: int) -> bool:
    import numpy as np
    from gguf import GGML_QUANT_SIZES, GGMLQuantizationType
    from gguf.quants import dequantize

    try:
        kind = GGMLQuantizationType(ggml_type)
        dequantize(np.zeros((1, GGML_QUANT_SIZES[kind][1]), dtype=np.uint8), kind)
    except (ValueError, KeyError, NotImplementedError):
        return False
    return True


def _tokenizer_unsupported(meta: dict[str, Any]) -> str | None:
    model = meta.get("tokenizer.ggml.model")
    if model != "gpt2":
        return f"tokenizer {model!r} (it builds the byte-level BPE 'gpt2' only)"
    pre = meta.get("tokenizer.ggml.pre", "default")
    if pre not in _GPT2_SPLIT_PRE:
        return f"pre-tokenizer {pre!r}"
    if "tokenizer.ggml.merges" not in meta or "tokenizer.ggml.tokens" not in meta:
        return "a tokenizer without tokens or merges"
    if meta.get("tokenizer.ggml.add_bos_token") or meta.get("tokenizer.ggml.add_eos_token"):
        return "a tokenizer that adds BOS/EOS tokens"
    types = meta.get("tokenizer.ggml.token_type") or []
    if set(types) - {_NORMAL, _CONTROL}:
        return "token types other than normal and control"
    tokens = meta["tokenizer.ggml.tokens"]
    if types and len(types) != len(tokens):
        return "a token-type list of another length than the vocabulary"
    control = {i for i, kind in enumerate(types) if kind == _CONTROL}
    for key in _SPECIAL.values():
        token_id = meta.get(f"tokenizer.ggml.{key}")
        if token_id is not None and (token_id >= len(tokens) or token_id not in control):
            return f"a special token ({key}) that is not a control token"
    return None


# --------------------------------------------------------------------------- config

def llama_config(gguf: GgufFile) -> dict[str, Any]:
    """``config.json``: what transformers' ``LlamaConfig`` holds after a GGUF load, for the
    keys the file or the architecture decides (the rest are the config class's defaults)."""
    meta = gguf.metadata
    config: dict[str, Any] = {k: meta[f"llama.{g}"] for g, k in
                              {**_REQUIRED, **_OPTIONAL}.items() if f"llama.{g}" in meta}
    config.setdefault("num_key_value_heads", config["num_attention_heads"])
    config.setdefault("head_dim", config["hidden_size"] // config["num_attention_heads"])
    if "vocab_size" not in config:
        config["vocab_size"] = len(meta["tokenizer.ggml.tokens"])
    if "general.name" in meta:
        config["_model_name_or_path"] = meta["general.name"]
    for gguf_key, key in _TOKEN_IDS.items():
        if f"tokenizer.ggml.{gguf_key}" in meta:
            config[key] = meta[f"tokenizer.ggml.{gguf_key}"]
    config["rope_parameters"] = {"rope_theta": float(config.pop("rope_theta")),
                                 "rope_type": "default"}
    config.update(model_type="llama", hidden_act="silu", attention_bias=False,
                  mlp_bias=False, attention_dropout=0.0, dtype="float32",
                  tie_word_embeddings=all(t.name != "output.weight" for t in gguf.tensors))
    return dict(sorted(config.items()))


def generation_config(config: dict[str, Any]) -> dict[str, Any]:
    """``generation_config.json`` as transformers derives it from the model config (which
    also copies the model config's defaults for attentions, hidden states and the cache)."""
    out: dict[str, Any] = {"_from_model_config": True, "output_attentions": False,
                           "output_hidden_states": False, "use_cache": True}
    for key in ("bos_token_id", "eos_token_id", "pad_token_id"):
        if config.get(key) is not None:
            out[key] = config[key]
    return out


# --------------------------------------------------------------------------- weights

def _tensor_bytes(info: TensorInfo) -> int:
    from gguf import GGML_QUANT_SIZES, GGMLQuantizationType

    block, size = GGML_QUANT_SIZES[GGMLQuantizationType(info.ggml_type)]
    count = 1
    for d in info.shape:
        count *= d
    return count // block * size


def _raw(gguf: GgufFile, info: TensorInfo) -> Any:
    """The stored bytes (rows x bytes per row), or the values of an F32 tensor, as a view."""
    import numpy as np

    nbytes = _tensor_bytes(info)
    if info.ggml_type == _F32:
        return np.frombuffer(gguf.buffer, dtype="<f4", count=nbytes // 4,
                             offset=gguf.data_start + info.offset).reshape(info.shape)
    rows = 1
    for d in info.shape[:-1]:
        rows *= d
    data = np.frombuffer(gguf.buffer, dtype=np.uint8, count=nbytes,
                         offset=gguf.data_start + info.offset)
    return data.reshape(rows, nbytes // rows)


def _float_chunks(gguf: GgufFile, info: TensorInfo, config: dict[str, Any]) -> Iterator[Any]:
    """The tensor as float32, C order, in slices of whole rows (Hugging Face's row order)."""
    from gguf import GGMLQuantizationType
    from gguf.quants import dequantize

    kind = GGMLQuantizationType(info.ggml_type)
    raw = _raw(gguf, info)
    if info.ggml_type == _F32:
        yield raw
        return
    name = info.name
    if ".attn_q." in name or ".attn_k." in name:
        heads = int(config["num_attention_heads"] if ".attn_q." in name
                    else config["num_key_value_heads"])
        yield _unpermute(dequantize(raw, kind).reshape(info.shape), heads)
        return
    row_elements = max(1, info.shape[-1])
    step = max(1, _CHUNK_ELEMENTS // row_elements)
    for start in range(0, raw.shape[0], step):
        yield dequantize(raw[start:start + step], kind)


def _unpermute(weights: Any, heads: int) -> Any:
    """Undo llama.cpp's rotary permutation of q/k rows: within each head, its converter wrote
    the rows as (pair, half) where Hugging Face has (half, pair)."""
    half = weights.shape[0] // heads // 2
    grouped = weights.reshape(heads, half, 2, *weights.shape[1:])
    return grouped.swapaxes(2, 1).reshape(weights.shape)


def _safetensors_header(entries: list[tuple[str, tuple[int, ...]]]) -> bytes:
    """The header ``safetensors.torch.save_file(..., metadata={"format": "pt"})`` writes for
    float32 tensors: compact JSON, tensors by name, padded with spaces to 8 bytes."""
    header: dict[str, Any] = {"__metadata__": {"format": "pt"}}
    start = 0
    for name, shape in entries:
        count = 1
        for d in shape:
            count *= d
        header[name] = {"dtype": "F32", "shape": list(shape),
                        "data_offsets": [start, start + 4 * count]}
        start += 4 * count
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    return len(text).to_bytes(8, "little") + text


def write_model(gguf: GgufFile, path: Path, config: dict[str, Any]) -> None:
    """``model.safetensors``, written tensor by tensor."""
    import numpy as np

    tied = bool(config["tie_word_embeddings"])
    chosen = sorted(((hf_name(t.name) or "", t) for t in gguf.tensors
                     if not (tied and t.name == "output.weight")), key=lambda e: e[0])
    with path.open("wb") as fh:
        fh.write(_safetensors_header([(name, info.shape) for name, info in chosen]))
        for _, info in chosen:
            for chunk in _float_chunks(gguf, info, config):
                fh.write(np.ascontiguousarray(chunk, dtype="<f4").data)


# --------------------------------------------------------------------------- blocks

# the fused matrices of the blocks file: (name, parts in row order)
_FUSED = (("self_attn.qkv_proj", ("attn_q", "attn_k", "attn_v")),
          ("self_attn.o_proj", ("attn_output",)),
          ("mlp.gate_up_proj", ("ffn_gate", "ffn_up")),
          ("mlp.down_proj", ("ffn_down",)))


def blocks_unsupported(gguf: GgufFile) -> str | None:
    """Why the blocks file cannot hold this GGUF's weights (the float32 file then serves),
    or None: every matrix in Q4_1 or Q8_0 (the block kernel's types), the parts of a fused
    matrix of one type, rows a whole number of blocks."""
    infos = {t.name: t for t in gguf.tensors}
    layers = int(gguf.metadata["llama.block_count"])
    matrices = [infos["token_embd.weight"]] + ([infos["output.weight"]]
                                               if "output.weight" in infos else [])
    for i in range(layers):
        for _, parts in _FUSED:
            kinds = {infos[f"blk.{i}.{p}.weight"].ggml_type for p in parts}
            if len(kinds) != 1:
                return f"layer {i}: {'/'.join(parts)} in different types"
            matrices += [infos[f"blk.{i}.{p}.weight"] for p in parts]
    other = sorted({t.ggml_type for t in matrices} - set(_BLOCK_TYPES))
    if other:
        return f"tensor types {other} (the kernel multiplies Q4_1 and Q8_0)"
    if any(t.shape[-1] % 32 for t in matrices):
        return "rows that are not whole blocks of 32"
    return None


def _block_tensors(gguf: GgufFile, config: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    """(name, raw uint8 rows or float32 values, (type, columns) or None), in name order."""
    import numpy as np

    infos = {t.name: t for t in gguf.tensors}
    out: list[tuple[str, Any, Any]] = []

    def rows(gguf_name: str) -> Any:
        info = infos[gguf_name]
        raw = _raw(gguf, info)
        if ".attn_q." in gguf_name or ".attn_k." in gguf_name:
            heads = int(config["num_attention_heads"] if ".attn_q." in gguf_name
                        else config["num_key_value_heads"])
            raw = _unpermute(raw, heads)
        return raw

    for gguf_name, name in (("token_embd.weight", "model.embed_tokens.weight"),
                            ("output.weight", "lm_head.weight")):
        if gguf_name in infos:
            info = infos[gguf_name]
            out.append((name, rows(gguf_name), (info.ggml_type, info.shape[-1])))
    out.append(("model.norm.weight", _raw(gguf, infos["output_norm.weight"]), None))
    for i in range(int(config["num_hidden_layers"])):
        prefix = f"model.layers.{i}."
        out.append((prefix + "input_layernorm.weight",
                    _raw(gguf, infos[f"blk.{i}.attn_norm.weight"]), None))
        out.append((prefix + "post_attention_layernorm.weight",
                    _raw(gguf, infos[f"blk.{i}.ffn_norm.weight"]), None))
        for fused, parts in _FUSED:
            names = [f"blk.{i}.{p}.weight" for p in parts]
            info = infos[names[0]]
            data = np.concatenate([rows(n) for n in names]) if len(names) > 1 else rows(names[0])
            out.append((prefix + fused + ".weight", data, (info.ggml_type, info.shape[-1])))
    return sorted(out, key=lambda entry: entry[0])


def write_blocks(gguf: GgufFile, path: Path, config: dict[str, Any]) -> None:
    """The blocks file: a safetensors file whose matrices keep the GGUF's quantized blocks
    (stored as uint8 rows of blocks, rows in Hugging Face's order, q/k/v and gate/up fused
    into one matrix each) and whose norms are float32; the metadata names each matrix's
    block type and column count.  About the GGUF's size."""
    import numpy as np

    entries = _block_tensors(gguf, config)
    types = {name: [_BLOCK_TYPES[kind[0]], int(kind[1])] for name, _, kind in entries if kind}
    header: dict[str, Any] = {"__metadata__": {"format": BLOCKS_FORMAT,
                                               "blocks": json.dumps(types, sort_keys=True)}}
    start = 0
    for name, data, kind in entries:
        nbytes = int(data.nbytes)
        header[name] = {"dtype": "U8" if kind else "F32", "shape": list(data.shape),
                        "data_offsets": [start, start + nbytes]}
        start += nbytes
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-(len(text) + 8) % 64)  # the data starts 64-byte aligned
    with path.open("wb") as fh:
        fh.write(len(text).to_bytes(8, "little") + text)
        for _, data, kind in entries:
            fh.write(np.ascontiguousarray(data, dtype=np.uint8 if kind else "<f4").data)


# --------------------------------------------------------------------------- tokenizer

def _byte_alphabet() -> dict[int, str]:
    """GPT-2's printable spelling of the 256 byte values (``bytes_to_unicode``)."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1),
                 *range(ord("®"), ord("ÿ") + 1)]
    spelling = {b: chr(b) for b in printable}
    extra = 0
    for b in range(256):
        if b not in spelling:
            spelling[b] = chr(256 + extra)
            extra += 1
    return spelling


def build_tokenizer(meta: dict[str, Any]) -> Any:
    """The ``tokenizers.Tokenizer`` transformers builds from a 'gpt2' GGUF vocabulary."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors

    spelling = _byte_alphabet()
    alphabet = set(spelling.values())
    tokens: list[str] = meta["tokenizer.ggml.tokens"]
    vocab = {tok if set(tok) <= alphabet else "".join(spelling[b] for b in tok.encode("utf-8")):
             i for i, tok in enumerate(tokens)}
    merges = [tuple(m.split(" ")) for m in meta["tokenizer.ggml.merges"]]
    tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=merges, dropout=None,
                                     continuing_subword_prefix="", end_of_word_suffix="",
                                     fuse_unk=False))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    types = meta.get("tokenizer.ggml.token_type") or []
    control = [AddedToken(tok, normalized=False, special=True)
               for tok, kind in zip(tokens, types, strict=False)
               if kind == _CONTROL and set(tok) <= alphabet]
    tokenizer.add_special_tokens(control)
    tokenizer.post_processor = processors.TemplateProcessing(single="$A:0", pair="$A:0 $B:1",
                                                             special_tokens=[])
    return tokenizer


def tokenizer_config(meta: dict[str, Any]) -> dict[str, Any]:
    """``tokenizer_config.json`` as transformers saves a tokenizer built from a GGUF."""
    tokens = meta["tokenizer.ggml.tokens"]
    config: dict[str, Any] = {"backend": "tokenizers",
                              "model_max_length": int(1e30),
                              "tokenizer_class": "TokenizersBackend"}
    for name, key in _SPECIAL.items():
        token_id = meta.get(f"tokenizer.ggml.{key}")
        config[name] = tokens[token_id] if token_id is not None else None
    return dict(sorted(config.items()))


# --------------------------------------------------------------------------- the folder

def write_weights(gguf: GgufFile, folder: Path, kind: str,
                  config: dict[str, Any] | None = None) -> Path:
    """Write the weights file of ``kind`` (``"f32"``: :data:`F32_FILE`, ``"blocks"``:
    :data:`BLOCKS_FILE`) into ``folder``; returns its path."""
    config = llama_config(gguf) if config is None else config
    if kind == "blocks":
        path = folder / BLOCKS_FILE
        write_blocks(gguf, path, config)
    else:
        path = folder / F32_FILE
        write_model(gguf, path, config)
    return path


def convert(gguf: GgufFile, folder: Path, weights: str = "f32") -> None:
    """Write the converted model into ``folder`` (which exists and is empty), with the
    weights file of kind ``weights``.  Call only when :func:`unsupported` returned None (and,
    for ``"blocks"``, :func:`blocks_unsupported`)."""
    config = llama_config(gguf)
    write_weights(gguf, folder, weights, config)
    (folder / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True),
                                        encoding="utf-8")
    (folder / "generation_config.json").write_text(
        json.dumps(generation_config(config), indent=2, sort_keys=True), encoding="utf-8")
    meta = gguf.metadata
    build_tokenizer(meta).save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(
        json.dumps(tokenizer_config(meta), indent=2, sort_keys=True), encoding="utf-8")
    template = meta.get("tokenizer.chat_template")
    if isinstance(template, str):
        (folder / "chat_template.jinja").write_text(template, encoding="utf-8")
