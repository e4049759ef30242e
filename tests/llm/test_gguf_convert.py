"""The direct GGUF converter (:mod:`ragmeter.backends._local._gguf_convert`) against transformers' conversion,
on the REAL offline model.

Marked ``local_model`` (CI runs it).  Two homes: in one the GGUF is converted by the direct
converter (numpy, gguf, tokenizers), in the other by transformers
(``from_pretrained(dir, gguf_file=...)``, the reference).  What must hold: model.safetensors
byte-identical tensor by tensor, configs that read back the same, the same tokenizer (token ids
and decoding on a multilingual corpus, the chat template's rendering), bit-identical logits of
the fast runtime from either folder, and the transformers runtime loading the direct folder.
The texts are short and written for this test.
"""

from __future__ import annotations

import json
import mmap
import struct

import pytest

from ragmeter.backends._local import (
    _backend as local,
)
from ragmeter.backends._local import (
    _cache as local_cache,
)
from ragmeter.backends._local import (
    _gguf_convert as gguf_convert,
)
from ragmeter.backends._local._fast import FastLlamaRuntime, _ChatTokenizer, supports
from ragmeter.backends._local._gguf_read import read_gguf
from ragmeter.backends._local._runtimes import _TransformersRuntime
from ragmeter.backends._types import Request

pytestmark = pytest.mark.local_model

CORPUS = [
    "The quick brown fox jumps over the lazy dog.",
    "  leading spaces, trailing spaces   ",
    "tabs\tand\nnew\n\nlines\r\n and   runs      of whitespace",
    "Numbers: 0 7 42 1234567890 3.14159 -12,345.67 2026-11-24 10:30",
    "数据科学是一门跨学科的领域。人工智能正在改变世界。",
    "東京は日本の首都です。カタカナとひらがなと漢字。",
    "Москва — столица России. Съешь же ещё этих мягких французских булок.",
    "اللغة العربية تكتب من اليمين إلى اليسار.",
    "Emojis 😀🎉👩‍👩‍👧‍👦 🇫🇷 ❤️ and symbols ©®™ ∑∫√ ≤≥",
    "Ünïcödé àccents: naïve café façade Straße Ærøskøbing",
    "code: def f(x):\n    return x ** 2  # square\n",
    "<|im_start|>user\nHi<|im_end|>\n<|endoftext|> special tokens inline",
    "",
    "a",
    "don't won't it's I'm we'll they've y'all",
]
CHATS = [
    [{"role": "user", "content": "What is the capital of France?"}],
    [{"role": "system", "content": "Be terse."}, {"role": "user", "content": "Hi"},
     {"role": "assistant", "content": "Hello"}, {"role": "user", "content": "数字 12345?"}],
    [{"role": "user", "content": "Écris une phrase sur les chats 🐱."}],
]


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    gguf = local.default_model_path()
    if gguf is None:
        pytest.skip(f"default model not installed: {local.INSTALL_MODEL}")
    status = local.runtime_status()
    if not (status["torch"] and status["transformers"] and status["gguf"]):
        pytest.skip(f"no transformers runtime: {local.INSTALL_LOCAL}")
    location = local.resolve_model(None)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RAGMETER_HOME", str(tmp_path_factory.mktemp("direct-home")))
        direct = local_cache.convert_direct(gguf)
        assert direct is not None and local_cache.is_complete(direct)
        # the transformers runtime reads the direct folder (used for sampling requests)
        from_direct = _TransformersRuntime(location, threads=2)
        assert str(direct) in str(from_direct.model.config._name_or_path)
        mp.setenv("RAGMETER_HOME", str(tmp_path_factory.mktemp("transformers-home")))
        reference = _TransformersRuntime(location, threads=2, direct=False)  # from the GGUF
        by_transformers = local_cache.transformers_model_dir(gguf)
        assert local_cache.is_complete(by_transformers)
        yield direct, by_transformers, reference, from_direct


def _header(path):
    with path.open("rb") as fh:
        size = struct.unpack("<Q", fh.read(8))[0]
        return json.loads(fh.read(size)), 8 + size


def test_model_safetensors_is_byte_identical_tensor_by_tensor(folders):
    direct, by_transformers, _, _ = folders
    new, new_base = _header(direct / "model.safetensors")
    old, old_base = _header(by_transformers / "model.safetensors")
    assert list(new) == list(old)  # the same names in the same order, metadata included
    assert len(new) == 1 + 272  # 30 layers x 9 + embeddings + final norm (tied lm_head)
    with (direct / "model.safetensors").open("rb") as a, \
            (by_transformers / "model.safetensors").open("rb") as b:
        ma = mmap.mmap(a.fileno(), 0, access=mmap.ACCESS_READ)
        mb = mmap.mmap(b.fileno(), 0, access=mmap.ACCESS_READ)
        for name in new:
            if name == "__metadata__":
                continue
            assert new[name]["dtype"] == old[name]["dtype"] == "F32", name
            assert new[name]["shape"] == old[name]["shape"], name
            (s1, e1), (s2, e2) = new[name]["data_offsets"], old[name]["data_offsets"]
            assert ma[new_base + s1:new_base + e1] == mb[old_base + s2:old_base + e2], name
        assert ma[:] == mb[:]  # and the whole file, header padding included


def test_configs_read_back_the_same(folders):
    direct, by_transformers, _, _ = folders
    from transformers import AutoConfig, GenerationConfig

    def config(folder):
        out = AutoConfig.from_pretrained(str(folder), local_files_only=True).to_dict()
        out.pop("_name_or_path", None)
        out.pop("transformers_version", None)
        return out

    def generation(folder):
        out = GenerationConfig.from_pretrained(str(folder), local_files_only=True).to_dict()
        out.pop("transformers_version", None)
        return out

    assert config(direct) == config(by_transformers)
    assert generation(direct) == generation(by_transformers)
    assert supports(direct)
    written = json.loads((direct / "config.json").read_text(encoding="utf-8"))
    full = json.loads((by_transformers / "config.json").read_text(encoding="utf-8"))
    assert all(full[key] == value for key, value in written.items())  # a subset, same values


def test_tokenizer_gives_the_same_ids_decoding_and_chat_prompts(folders):
    direct, by_transformers, reference, from_direct = folders
    assert (direct / "tokenizer.json").read_bytes() == \
        (by_transformers / "tokenizer.json").read_bytes()
    assert (direct / "chat_template.jinja").read_bytes() == \
        (by_transformers / "chat_template.jinja").read_bytes()
    new, old = _ChatTokenizer(direct), _ChatTokenizer(by_transformers)
    assert new.special == old.special and new.eos_token_id == old.eos_token_id
    assert new.pad_token_id == old.pad_token_id
    for text in CORPUS:
        ids = reference.tokenizer.encode(text, add_special_tokens=False)
        assert new.encode(text, add_special_tokens=False) == ids, text
        assert from_direct.tokenizer.encode(text, add_special_tokens=False) == ids, text
        assert new.encode(text) == reference.tokenizer.encode(text), text
        for skip in (False, True):
            expected = reference.tokenizer.decode(ids, skip_special_tokens=skip)
            assert new.decode(ids, skip_special_tokens=skip) == expected, text
            assert from_direct.tokenizer.decode(ids, skip_special_tokens=skip) == expected
    for chat in CHATS:
        messages = Request.chat("t", chat).messages
        assert new.render_chat(chat) == old.render_chat(chat)
        assert from_direct.prompt_ids(messages) == reference.prompt_ids(messages)


def test_fast_runtime_logits_are_identical_from_either_folder(folders):
    direct, by_transformers, reference, from_direct = folders
    import torch

    new = FastLlamaRuntime(direct, 2, lambda: from_direct)
    old = FastLlamaRuntime(by_transformers, 2, lambda: reference)
    for chat in CHATS:
        prompt = old.prompt_ids(Request.chat("t", chat).messages)
        assert new.prompt_ids(Request.chat("t", chat).messages) == prompt
        ids = torch.tensor([prompt])
        positions = torch.arange(len(prompt))[None]
        with torch.inference_mode():
            a = new.model.forward(ids, positions, None, [])
            b = old.model.forward(ids, positions, None, [])
        assert torch.equal(a, b)
    prompts = [old.prompt_ids(Request.chat("t", c).messages) for c in CHATS]
    params = {"max_tokens": 4}
    assert new.generate_batch(prompts, params) == old.generate_batch(prompts, params)


def test_transformers_runtime_from_the_direct_folder_has_the_gguf_logits(folders):
    _, _, reference, from_direct = folders
    import torch

    prompt = reference.prompt_ids(Request.chat("t", CHATS[0]).messages)
    with torch.inference_mode():
        a = from_direct.model(input_ids=torch.tensor([prompt])).logits
        b = reference.model(input_ids=torch.tensor([prompt])).logits
    assert torch.equal(a, b)


def test_direct_folder_is_keyed_by_its_converter_and_libraries(folders):
    direct, by_transformers, _, _ = folders
    info = json.loads((direct / local_cache.CACHE_INFO).read_text(encoding="utf-8"))
    assert info["converter"] == gguf_convert.CONVERTER
    assert set(info) == {"gguf", "gguf_sha256", "converter", "gguf_py", "numpy", "tokenizers",
                         "format"}
    old = json.loads((by_transformers / local_cache.CACHE_INFO).read_text(encoding="utf-8"))
    assert {"torch", "transformers"} <= set(old) and old["gguf_sha256"] == info["gguf_sha256"]
    assert direct.name != by_transformers.name


def test_header_reader_agrees_with_gguf_reader():
    gguf_path = local.default_model_path()
    if gguf_path is None:
        pytest.skip(f"default model not installed: {local.INSTALL_MODEL}")
    gguf = pytest.importorskip("gguf")
    theirs = gguf.GGUFReader(str(gguf_path))
    ours = read_gguf(gguf_path)
    try:
        for key, field in theirs.fields.items():
            if key.startswith("GGUF."):
                continue
            value = field.contents()
            assert ours.metadata[key] == value, key
        assert set(ours.metadata) == {k for k in theirs.fields if not k.startswith("GGUF.")}
        assert [t.name for t in ours.tensors] == [t.name for t in theirs.tensors]
        for mine, their in zip(ours.tensors, theirs.tensors, strict=True):
            assert mine.ggml_type == int(their.tensor_type)
            assert ours.data_start + mine.offset == their.data_offset
            assert mine.shape == tuple(int(d) for d in reversed(their.shape))
        assert gguf_convert.unsupported(ours) is None
    finally:
        ours.close()
