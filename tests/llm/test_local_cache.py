"""The converted-model cache's keys and lookups (no model needed; the real conversion and
its logits are tested in test_local_batch.py, marker local_model)."""

from __future__ import annotations

import hashlib
import json

from ragmeter.backends._local import _cache as local_cache
from ragmeter.backends._local._backend import resolve_model


def test_key_is_the_files_hash_and_library_versions(tmp_path, _isolated_home):
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF one")
    assert local_cache.gguf_sha256(gguf) == hashlib.sha256(b"GGUF one").hexdigest()
    memo = json.loads((_isolated_home / "models" / "gguf-hashes.json").read_text())
    assert list(memo.values()) == [hashlib.sha256(b"GGUF one").hexdigest()]
    key = local_cache.cache_key(gguf)
    assert set(key) == {"gguf", "gguf_sha256", "torch", "transformers", "format"}
    first = local_cache.cached_model_dir(gguf)
    assert first.parent == _isolated_home / "models" and first.name.startswith("m-")
    gguf.write_bytes(b"GGUF two, another size")  # new bytes: a new folder
    assert local_cache.cached_model_dir(gguf) != first


def test_tokenizer_comes_from_a_complete_conversion_only(tmp_path, _isolated_home):
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    location = resolve_model(str(gguf))
    folder = local_cache.converted_dir(location)
    assert folder is not None
    assert local_cache.tokenizer_source(str(tmp_path), "m.gguf") == (str(tmp_path), "m.gguf")
    folder.mkdir(parents=True)
    (folder / "model.safetensors").write_bytes(b"")
    assert not local_cache.is_complete(folder)  # no info file: an interrupted conversion
    (folder / local_cache.CACHE_INFO).write_text("{}")
    assert local_cache.tokenizer_source(str(tmp_path), "m.gguf") == (str(folder), None)


def test_hugging_face_folders_are_not_converted(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    assert local_cache.converted_dir(resolve_model(str(tmp_path))) is None
