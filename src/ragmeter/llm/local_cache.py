"""A converted, memory-mappable copy of a GGUF model, made once and loaded in seconds.

``AutoModelForCausalLM.from_pretrained(dir, gguf_file=...)`` de-quantizes the GGUF to float32
and rebuilds its tokenizer from the GGUF's vocabulary on every load (about 30 s on 2 cores for
SmolLM2-135M).  The first load writes what it produced to
``$RAGMETER_HOME/models/<model>-<key>/``:

* ``model.safetensors``: the de-quantized float32 state dict (tied weights stored once),
* ``config.json`` and ``generation_config.json`` (without the GGUF quantization entry),
* the tokenizer (``tokenizer.json``, its config and chat template),
* ``ragmeter-cache.json``: what the key was made of.

Later loads read that folder with ``from_pretrained`` (safetensors are memory-mapped).  The
weights are the very float32 tensors the GGUF load produced, so the logits are identical
(``tests/llm/test_local_cache.py`` checks it on the real model).

The key is the SHA-256 of the GGUF file together with the torch and transformers versions and
:data:`CACHE_FORMAT`: a new GGUF or a library upgrade gets a new folder.  Hashing 100 MB takes
a fraction of a second; the digest is remembered per (path, size, mtime) in
``models/gguf-hashes.json`` so a warm load does not read the file at all.  The folder is
written under a temporary name and renamed into place, so a killed conversion leaves nothing
that a later load would trust.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ragmeter.llm.local import ModelLocation

__all__ = ["CACHE_FORMAT", "CACHE_INFO", "models_dir", "gguf_sha256", "cache_key",
           "cached_model_dir", "converted_dir", "tokenizer_source", "is_complete", "write_cache"]

CACHE_FORMAT = "safetensors-f32-v1"
CACHE_INFO = "ragmeter-cache.json"
_HASHES = "gguf-hashes.json"


def models_dir() -> Path:
    """``$RAGMETER_HOME/models`` (or the per-user data folder's)."""
    from ragmeter.store import data_home

    return data_home() / "models"


def gguf_sha256(path: Path) -> str:
    """SHA-256 of a file, remembered per (resolved path, size, mtime_ns)."""
    stat = path.stat()
    fingerprint = f"{path.resolve()}|{stat.st_size}|{stat.st_mtime_ns}"
    memo_path = models_dir() / _HASHES
    memo: dict[str, str] = {}
    try:
        memo = json.loads(memo_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        memo = {}
    if isinstance(memo, dict) and isinstance(memo.get(fingerprint), str):
        return memo[fingerprint]
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    value = digest.hexdigest()
    memo = memo if isinstance(memo, dict) else {}
    memo[fingerprint] = value
    try:
        from ragmeter.io import write_text

        write_text(memo_path, json.dumps(memo, indent=1, sort_keys=True))
    except OSError:
        pass  # the memo only saves time; without it the file is hashed again next load
    return value


def _versions() -> tuple[str, str]:
    from importlib.metadata import version

    return version("torch"), version("transformers")


def cache_key(gguf: Path) -> dict[str, str]:
    """What the cached folder depends on: the GGUF's bytes and the library versions."""
    torch_version, transformers_version = _versions()
    return {"gguf": gguf.name, "gguf_sha256": gguf_sha256(gguf), "torch": torch_version,
            "transformers": transformers_version, "format": CACHE_FORMAT}


def converted_dir(location: ModelLocation) -> Path | None:
    """The cache folder for a GGUF model (it may not exist yet); None for a Hugging Face
    folder, which ``from_pretrained`` already reads quickly."""
    if location.kind != "gguf":
        return None
    return cached_model_dir(location.path)


def tokenizer_source(directory: str, gguf_file: str | None) -> tuple[str, str | None]:
    """Where to load a tokenizer from: the converted folder when one is complete (no GGUF
    parsing), else the GGUF itself."""
    if gguf_file:
        folder = cached_model_dir(Path(directory) / gguf_file)
        if is_complete(folder):
            return str(folder), None
    return directory, gguf_file


def cached_model_dir(gguf: Path) -> Path:
    """The folder for this GGUF and the installed library versions (may not exist yet)."""
    key = cache_key(gguf)
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode("utf-8")).hexdigest()[:16]
    return models_dir() / f"{gguf.stem}-{digest}"


def is_complete(folder: Path) -> bool:
    """True when ``folder`` holds a finished conversion (the info file is written last)."""
    return (folder / CACHE_INFO).is_file() and (folder / "model.safetensors").is_file()


def write_cache(folder: Path, model: Any, tokenizer: Any, key: dict[str, str]) -> Path:
    """Write ``model`` (float32, de-quantized) and ``tokenizer`` into ``folder`` atomically.

    ``save_pretrained`` refuses a model loaded from GGUF, so the state dict is written with
    safetensors directly; a tied ``lm_head`` is left out (``from_pretrained`` ties it again).
    """
    from safetensors.torch import save_file

    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
    tmp.chmod(0o755)
    try:
        tied = bool(getattr(model.config, "tie_word_embeddings", False))
        state = {name: tensor.detach().contiguous()
                 for name, tensor in model.state_dict().items()
                 if not (tied and name == "lm_head.weight")}
        save_file(state, str(tmp / "model.safetensors"), metadata={"format": "pt"})
        (tmp / "model.safetensors").chmod(0o644)
        config = model.config.to_dict()
        config.pop("quantization_config", None)
        config.pop("_name_or_path", None)
        (tmp / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True,
                                                    default=str), encoding="utf-8")
        model.generation_config.save_pretrained(str(tmp))
        tokenizer.save_pretrained(str(tmp))
        (tmp / CACHE_INFO).write_text(json.dumps(key, indent=2, sort_keys=True),
                                      encoding="utf-8")
        try:
            os.replace(tmp, folder)
        except OSError:
            if not is_complete(folder):  # not another process's finished copy: a real error
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return folder
