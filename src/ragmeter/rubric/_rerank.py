"""RAGaliq's retrieval shape for ``rubric run``: top-k by embedding, rerank, keep reranker
score > threshold, pass at most N chunks to the reader.

Source: chameleon-lizard/Ragaliq @ 1c0006d7, ``src/rag.py``: ``Chatbot.retrieve`` searches the
top 10 chunks (faiss L2 over normalized embeddings, i.e. cosine order), reranks them with a
cross-encoder (``bge-reranker-v2-m3``, raw logits), keeps ``sim > 0.1`` and
``send_question`` passes ``ranked[:6]`` to the reader.  Defaults here: ``top_k=10``,
``rerank_threshold=0.1``, ``max_context=6``.

Rerankers (the cross-encoder itself is not shipped):

- ``endpoint``: an HTTP ``/rerank`` endpoint.  ``api="vllm"`` sends
  ``{"model", "query", "documents"}`` and reads ``{"results": [{"index", "relevance_score"}]}``
  (vLLM, Jina and Cohere serve this); ``api="tei"`` sends ``{"query", "texts"}`` and reads
  ``[{"index", "score"}]`` (text-embeddings-inference).  Every reply is persisted in the store
  before it is read, and served from it on a re-run.  Scores are the server's own scale:
  TEI returns sigmoid scores unless ``raw_scores``; RAGaliq's 0.1 was applied to raw logits.
- ``yesno``: the reader backend's probability of "yes" to "is this passage relevant to the
  question?" (choice scoring through the runner, so cached like any call); the threshold then
  applies to a probability.
- ``cross-encoder``: a sentence-transformers cross-encoder saved in a folder
  (``reranker_model``; ``pip install 'ragmeter[st]'``), run here on the CPU; its scores are
  the model's raw outputs (no sigmoid), as RAGaliq's FlagReranker gives bge-reranker's logits,
  so the 0.1 threshold means what it meant there for such a model.
- ``none``: no reranking; the cosine order is kept and no threshold applies.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ragmeter.backends._types import Message, Request
from ragmeter.errors import ConfigError

__all__ = ["RetrievalShape", "EndpointReranker", "CrossEncoderReranker", "select_context",
           "relevance_requests", "relevance_scores", "RELEVANCE_PROMPT_VERSION", "RERANKERS"]

COMPONENT = "rubric"
RELEVANCE_PROMPT_VERSION = "ragmeter-rubric-relevance-1"
RERANKERS = ("yesno", "none", "endpoint", "cross-encoder")
_RELEVANCE_SYSTEM = ("You judge whether a passage helps answer a question. Answer with one "
                     "word: yes or no.")
_RELEVANCE_USER = "Question: {question}\n\nPassage: {passage}\n\nDoes the passage help answer " \
                  "the question? Answer yes or no."


@dataclass(frozen=True)
class RetrievalShape:
    """RAGaliq's retrieval shape (see module docstring for the source of each default)."""

    top_k: int = 10
    reranker: str = "yesno"  # yesno | none | endpoint | cross-encoder
    rerank_threshold: float = 0.1
    max_context: int = 6
    reranker_url: str | None = None
    reranker_model: str | None = None
    reranker_api: str = "vllm"  # vllm | tei

    def __post_init__(self) -> None:
        if self.reranker not in RERANKERS:
            raise ConfigError(f"rubric: unknown reranker {self.reranker!r}; use yesno, none, "
                              "endpoint or cross-encoder.")
        if self.reranker == "endpoint" and not self.reranker_url:
            raise ConfigError("rubric: --reranker endpoint needs --reranker-url "
                              "(e.g. http://127.0.0.1:8000/v1).")
        if self.reranker == "cross-encoder" and not self.reranker_model:
            raise ConfigError("rubric: --reranker cross-encoder needs --reranker-model, the "
                              "folder of a sentence-transformers cross-encoder.")
        if self.reranker_api not in ("vllm", "tei"):
            raise ConfigError(f"rubric: --reranker-api is {self.reranker_api!r}; use vllm or "
                              "tei.")

    def describe(self, reader_model: str) -> dict[str, Any]:
        """What ran, for the run record."""
        if self.reranker == "cross-encoder":
            from ragmeter.backends._embed import folder_identity, model_folder

            assert self.reranker_model is not None
            name = "cross-encoder:" + folder_identity(model_folder(
                self.reranker_model, "the cross-encoder", COMPONENT))
        else:
            name = {"yesno": f"yesno:{reader_model}:{RELEVANCE_PROMPT_VERSION}", "none": "none",
                    "endpoint": f"endpoint:{self.reranker_api}:{self.reranker_url}:"
                                f"{self.reranker_model or ''}"}[self.reranker]
        return {"top_k": self.top_k, "reranker": name,
                "rerank_threshold": None if self.reranker == "none" else self.rerank_threshold,
                "max_context": self.max_context}


def select_context(candidates: Sequence[tuple[float, str]], scores: Sequence[float] | None,
                   threshold: float | None, cap: int) -> list[tuple[float, str]]:
    """Chunks for the reader: by reranker score, descending (stable for ties), those above
    ``threshold``, at most ``cap``; with no scores, the candidates' own order, at most
    ``cap``.  Returns (score, chunk) pairs (the reranker's score when there is one)."""
    if scores is None:
        return list(candidates[:cap])
    if len(scores) != len(candidates):
        raise ValueError("select_context: one score per candidate is needed")
    ranked = sorted(((s, c) for s, (_, c) in zip(scores, candidates, strict=True)),
                    key=lambda x: -x[0])
    if threshold is not None:
        ranked = [(s, c) for s, c in ranked if s > threshold]
    return ranked[:cap]


def relevance_requests(question_ids: Sequence[str], questions: Sequence[str],
                       candidates: Sequence[Sequence[tuple[float, str]]]) -> list[Request]:
    """One yes/no choice request per (question, candidate chunk): id ``<qid>~<rank>``."""
    out = []
    for qid, q, cands in zip(question_ids, questions, candidates, strict=True):
        for rank, (_, chunk) in enumerate(cands):
            msgs = (Message("system", _RELEVANCE_SYSTEM),
                    Message("user", _RELEVANCE_USER.format(question=q, passage=chunk)))
            out.append(Request(id=f"{qid}~{rank}", messages=msgs, choices=("yes", "no")))
    return out


def relevance_scores(question_ids: Sequence[str], candidates: Sequence[Sequence[Any]],
                     outcomes: Sequence[Any]) -> tuple[list[list[float]], int]:
    """P(yes) / (P(yes) + P(no)) per candidate; a failed call scores 0.0 (the chunk is then
    dropped by the threshold) and is counted in the second value."""
    by_id = {o.request.id: o for o in outcomes}
    failed = 0
    out: list[list[float]] = []
    for qid, cands in zip(question_ids, candidates, strict=True):
        row = []
        for rank in range(len(cands)):
            o = by_id.get(f"{qid}~{rank}")
            probs = (o.response.choice_probs or {}) if o is not None and o.ok else {}
            total = float(probs.get("yes", 0.0)) + float(probs.get("no", 0.0))
            if total <= 0:
                failed += 1
                row.append(0.0)
            else:
                row.append(float(probs.get("yes", 0.0)) / total)
        out.append(row)
    return out, failed


class EndpointReranker:
    """A ``/rerank`` HTTP endpoint (see module docstring), with replies kept in the store."""

    def __init__(self, url: str, model: str | None = None, api: str = "vllm",
                 api_key: str | None = None, timeout_s: float = 60.0,
                 store: Any | None = None) -> None:
        base = url.rstrip("/")
        self.url = base if base.endswith("/rerank") else base + "/rerank"
        self.model = model
        self.api = api
        self.api_key = api_key
        self.timeout_s = timeout_s
        self.store = store

    @property
    def identity(self) -> dict[str, Any]:
        return {"backend": "rerank", "url": self.url, "model": self.model, "api": self.api}

    def _body(self, query: str, documents: Sequence[str]) -> dict[str, Any]:
        if self.api == "tei":
            return {"query": query, "texts": list(documents)}
        body: dict[str, Any] = {"query": query, "documents": list(documents)}
        if self.model:
            body["model"] = self.model
        return body

    def _parse(self, raw: str, n: int) -> list[float]:
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError:
            raise ConfigError(f"rubric: the reranker at {self.url} did not return JSON: "
                              f"{raw[:120]!r}") from None
        results = obj.get("results", obj.get("data")) if isinstance(obj, dict) else obj
        if not isinstance(results, list):
            raise ConfigError(f"rubric: the reranker at {self.url} returned no result list "
                              f"(got {raw[:120]!r}); check --reranker-api (vllm or tei).")
        scores: list[float | None] = [None] * n
        for r in results:
            if not isinstance(r, dict) or "index" not in r:
                continue
            value = r.get("relevance_score", r.get("score"))
            idx = r["index"]
            if isinstance(idx, int) and 0 <= idx < n and isinstance(value, (int, float)):
                scores[idx] = float(value)
        missing = [i for i, s in enumerate(scores) if s is None]
        if missing:
            raise ConfigError(f"rubric: the reranker at {self.url} gave no score for "
                              f"document(s) {missing[:5]}; check --reranker-api.")
        return [float(s) for s in scores if s is not None]

    def score(self, query: str, documents: Sequence[str]) -> list[float]:
        """Scores of ``documents`` for ``query`` in their given order."""
        from ragmeter.backends._http import post_stored

        text = post_stored(self.url, self._body(query, documents), self.identity,
                           store=self.store, api_key=self.api_key, timeout_s=self.timeout_s,
                           what="the reranker", component=COMPONENT, request_id="rerank")
        return self._parse(text, len(documents))


class CrossEncoderReranker:
    """A sentence-transformers cross-encoder saved in a folder (see the module docstring)."""

    def __init__(self, path: str) -> None:
        from ragmeter.backends._embed import model_folder
        from ragmeter.errors import MissingDependencyError

        folder = model_folder(path, "the cross-encoder", COMPONENT)
        try:
            import torch
            from sentence_transformers import CrossEncoder
        except ImportError:
            raise MissingDependencyError("the cross-encoder reranker",
                                         "pip install 'ragmeter[st]'") from None
        self._identity = torch.nn.Identity()
        self._model = CrossEncoder(str(folder), device="cpu", local_files_only=True)

    def score(self, query: str, documents: Sequence[str]) -> list[float]:
        """Raw scores of ``documents`` for ``query`` in their given order."""
        if not documents:
            return []
        scores = self._model.predict([(query, d) for d in documents],
                                     activation_fn=self._identity, show_progress_bar=False)
        if getattr(scores, "ndim", 1) != 1:
            raise ConfigError("rubric: the cross-encoder gives several scores per pair (a "
                              "classifier with more than one label); a reranker gives one.")
        return [float(s) for s in scores]
