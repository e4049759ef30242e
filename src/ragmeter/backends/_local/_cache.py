"""A converted, memory-mappable copy of a GGUF model, made once and loaded in seconds.

The first load of a GGUF writes ``$RAGMETER_HOME/models/<model>-<key>/``:

* the weights the runtime reads: ``model-blocks.safetensors`` for the numpy runtime with its
  block kernel (:mod:`ragmeter.backends._local._kernel`: the GGUF's Q4_1/Q8_0 blocks as they
  are, about the GGUF's size), or ``model.safetensors``, the de-quantized float32 state dict
  (tied weights stored once, 5.5 times the Q4_1 GGUF), for the torch and transformers
  runtimes and for the numpy runtime without the kernel; a folder gets the other file when a
  runtime asks for it,
* ``config.json`` and ``generation_config.json``,
* the tokenizer (``tokenizer.json``, its config and chat template),
* ``ragmeter-cache.json``: what the key was made of.

Later loads memory-map that folder.  A Llama GGUF with a byte-level BPE vocabulary (the
default SmolLM2) is converted by :mod:`ragmeter.backends._local._gguf_convert` with numpy, ``gguf`` and
``tokenizers`` only: about 3 s and 175 MiB on 2 cores, where
``AutoModelForCausalLM.from_pretrained(dir, gguf_file=...)`` took about 30 s and 1.2 GiB; its
``model.safetensors`` and ``tokenizer.json`` are byte-identical to what the transformers load
wrote (``tests/llm/test_gguf_convert.py``).  Any other GGUF (an architecture or tokenizer that
converter does not reproduce exactly; it says which) is converted with transformers as before.

The key is the SHA-256 of the GGUF file together with what made the folder: for the direct
converter its name (:data:`~ragmeter.backends._local._gguf_convert.CONVERTER`) and the gguf, numpy and
tokenizers versions; for transformers the torch and transformers versions; and
:data:`CACHE_FORMAT`.  A new GGUF or a library upgrade gets a new folder; a folder either way
made serves the next load.  Hashing 100 MB takes a fraction of a second; the digest is
remembered per (path, size, mtime) in ``models/gguf-hashes.json`` so a warm load does not read
the file at all.  The folder is written under a temporary name and renamed into place, so a
killed conversion leaves nothing that a later load would trust.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ragmeter.backends._local._model import ModelLocation

__all__ = ["CACHE_FORMAT", "CACHE_INFO", "models_dir", "gguf_sha256", "cache_key", "direct_key",
           "cached_model_dir", "direct_model_dir", "transformers_model_dir", "converted_dir", "tokenizer_source",
           "is_complete", "write_cache", "convert_direct", "convert_for_numpy",
           "WEIGHT_FILES"]

CACHE_FORMAT = "safetensors-f32-v1"
CACHE_INFO = "ragmeter-cache.json"
_HASHES = "gguf-hashes.json"


def models_dir() -> Path:
    """``$RAGMETER_HOME/models`` (or the per-user data folder's)."""
    from ragmeter._util._home import data_home

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
    """What a folder converted by transformers depends on: the GGUF's bytes and the versions."""
    torch_version, transformers_version = _versions()
    return {"gguf": gguf.name, "gguf_sha256": gguf_sha256(gguf), "torch": torch_version,
            "transformers": transformers_version, "format": CACHE_FORMAT}


def direct_key(gguf: Path) -> dict[str, str] | None:
    """What a folder made by :mod:`ragmeter.backends._local._gguf_convert` depends on: the GGUF's bytes, the
    converter and the gguf, numpy and tokenizers versions; None when one is not installed."""
    from importlib.metadata import PackageNotFoundError, version

    from ragmeter.backends._local._gguf_convert import CONVERTER

    try:
        versions = {name: version(name) for name in ("gguf", "numpy", "tokenizers")}
    except PackageNotFoundError:
        return None
    return {"gguf": gguf.name, "gguf_sha256": gguf_sha256(gguf), "converter": CONVERTER,
            "gguf_py": versions["gguf"], "numpy": versions["numpy"],
            "tokenizers": versions["tokenizers"], "format": CACHE_FORMAT}


def _folder(gguf: Path, key: dict[str, str]) -> Path:
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode("utf-8")).hexdigest()[:16]
    return models_dir() / f"{gguf.stem}-{digest}"


def direct_model_dir(gguf: Path) -> Path | None:
    """The folder the direct converter writes for this GGUF (may not exist yet); None when
    gguf, numpy or tokenizers is not installed."""
    key = direct_key(gguf)
    return _folder(gguf, key) if key is not None else None


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
    """The folder for this GGUF and the installed libraries (may not exist yet): a complete
    direct conversion, else a complete transformers conversion, else where the direct
    converter writes (where transformers writes when the direct key cannot be made)."""
    key = direct_key(gguf)
    direct = _folder(gguf, key) if key is not None else None
    if direct is not None and is_complete(direct):
        return direct
    try:
        by_transformers = transformers_model_dir(gguf)
    except ImportError:  # importlib.metadata.PackageNotFoundError: no torch/transformers
        by_transformers = None
    if by_transformers is not None and is_complete(by_transformers):
        return by_transformers
    if direct is not None:
        return direct
    if by_transformers is None:
        raise FileNotFoundError("neither gguf/numpy/tokenizers nor torch/transformers installed")
    return by_transformers


def transformers_model_dir(gguf: Path) -> Path:
    """The folder a transformers conversion of this GGUF writes (may not exist yet)."""
    return _folder(gguf, cache_key(gguf))


WEIGHT_FILES = {"f32": "model.safetensors", "blocks": "model-blocks.safetensors"}


def is_complete(folder: Path | None, weights: str | None = None) -> bool:
    """True when ``folder`` holds a finished conversion (the info file is written last) with
    the weights file ``weights`` names (``"f32"``, ``"blocks"``; None: either)."""
    if folder is None or not (folder / CACHE_INFO).is_file():
        return False
    names = WEIGHT_FILES.values() if weights is None else [WEIGHT_FILES[weights]]
    return any((folder / name).is_file() for name in names)


def _write_atomically(folder: Path, fill: Callable[[Path], None], key: dict[str, str]) -> Path:
    """Run ``fill`` on a fresh temporary folder beside ``folder``, write the info file last and
    rename the whole into place: an interrupted conversion leaves no complete folder."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
    tmp.chmod(0o755)
    try:
        fill(tmp)
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


def write_cache(folder: Path, model: Any, tokenizer: Any, key: dict[str, str]) -> Path:
    """Write ``model`` (float32, de-quantized by transformers) and ``tokenizer`` into
    ``folder`` atomically.

    ``save_pretrained`` refuses a model loaded from GGUF, so the state dict is written with
    safetensors directly; a tied ``lm_head`` is left out (``from_pretrained`` ties it again).
    """
    from safetensors.torch import save_file

    def fill(tmp: Path) -> None:
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

    return _write_atomically(folder, fill, key)


# GGUF files the direct converter declined in this process, with why (said once per file)
_DECLINED: dict[str, str] = {}


def convert_direct(gguf: Path, weights: str = "f32") -> Path | None:
    """The complete cache folder for ``gguf`` with the weights file ``weights`` (``"f32"`` or
    ``"blocks"``), converted without transformers when needed
    (:mod:`ragmeter.backends._local._gguf_convert`); a folder that lacks only that file gets
    it.  None when that converter does not handle this file (a warning says why, once), when
    the blocks file cannot hold its weights (the caller then asks for ``"f32"``), or when the
    folder cannot be written (a warning says so)."""
    if weights == "f32":
        found = cached_model_dir(gguf)
        if is_complete(found, "f32"):
            return found
    key = direct_key(gguf)
    if key is None or str(gguf) in _DECLINED:
        return None
    folder = _folder(gguf, key)
    if is_complete(folder, weights):
        return folder
    if weights == "blocks" and str(gguf) in _NO_BLOCKS:
        return None
    from ragmeter.backends._local import _gguf_convert as gguf_convert
    from ragmeter.backends._local._gguf_read import GgufFormatError, read_gguf

    try:
        parsed = read_gguf(gguf)
    except GgufFormatError as exc:
        _decline(gguf, str(exc))
        return None
    try:
        reason = gguf_convert.unsupported(parsed)
        if reason:
            _decline(gguf, reason)
            return None
        if weights == "blocks" and gguf_convert.blocks_unsupported(parsed):
            _NO_BLOCKS.add(str(gguf))
            return None
        try:
            if is_complete(folder):  # the other weights file is there: add this one
                _add_file(folder, WEIGHT_FILES[weights],
                          lambda tmp: gguf_convert.write_weights(parsed, tmp, weights))
                return folder
            return _write_atomically(
                folder, lambda tmp: gguf_convert.convert(parsed, tmp, weights), key)
        except OSError as exc:  # a read-only home: the caller runs from the GGUF
            _DECLINED[str(gguf)] = f"an unwritable cache ({exc})"  # not tried again
            warnings.warn(f"local: could not write the converted model to {folder} ({exc}).",
                          stacklevel=2)
            return None
        except (ValueError, KeyError, TypeError, IndexError) as exc:
            _decline(gguf, f"this file ({type(exc).__name__}: {exc})")
            return None
    finally:
        parsed.close()


def convert_for_numpy(gguf: Path) -> tuple[Path | None, Any]:
    """(folder, kernel) for the numpy runtime: the blocks file and the block kernel when
    the kernel can be had and the blocks file holds this GGUF's weights, else the float32
    file and None; (None, None) when neither can be made."""
    from ragmeter.backends._local._kernel import kernel

    found = kernel()
    if found is not None:
        folder = convert_direct(gguf, "blocks")
        if folder is not None:
            return folder, found
    return convert_direct(gguf, "f32"), None


def _add_file(folder: Path, name: str, write: Callable[[Path], Path]) -> None:
    """Write one more weights file into a complete folder: into a temporary folder beside it,
    then renamed into place (a killed write leaves no half file under the real name)."""
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
    try:
        made = write(tmp)
        made.chmod(0o644)
        os.replace(made, folder / name)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# GGUF files whose weights the blocks file cannot hold, in this process
_NO_BLOCKS: set[str] = set()


def _decline(gguf: Path, reason: str) -> None:
    _DECLINED[str(gguf)] = reason
    warnings.warn(f"local: {gguf.name}: the direct GGUF converter does not handle {reason}; "
                  "converting it with transformers instead (slower, more memory).",
                  stacklevel=3)
