"""A tiny RAG application to try ``ragmeter app run`` on, offline (standard library only).

It retrieves the passages of ``kb.md`` (one per line; the passage on line N is ``pNN``) that
share the most words with the question, and answers with the sentence of the best passage that
shares the most words with it.  Not a good RAG system: a small, fast, deterministic one whose
answers and contexts ragmeter can measure.

::

    ragmeter app run TEST_SET --function examples.rag_app.app:answer --out answers.jsonl
    python examples/rag_app/server.py          # the same behind HTTP (docs/app.md)
"""

from __future__ import annotations

import math
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

KB = Path(__file__).with_name("kb.md")
TOP_K = 3
_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset("a an and are as at be by do does for from how i in is it my of on or should "
                  "the to what when which why with you your".split())


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP}


@lru_cache(maxsize=1)
def passages() -> list[tuple[str, str]]:
    """``(id, text)`` of every passage: the non-blank lines of kb.md that are not headings."""
    out = []
    for number, line in enumerate(KB.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip() and not line.startswith("#"):
            out.append((f"p{number:02d}", line.strip()))
    return out


def retrieve(question: str, k: int = TOP_K) -> list[dict[str, Any]]:
    """The ``k`` passages sharing the most words with the question (ties: kb order)."""
    q = _words(question)
    scored = []
    for rank, (pid, text) in enumerate(passages()):
        overlap = len(q & _words(text))
        score = overlap / math.sqrt(len(_words(text)) or 1)
        scored.append((-score, rank, pid, text))
    scored.sort()
    return [{"id": pid, "text": text, "score": round(-neg, 4)}
            for neg, _, pid, text in scored[:k]]


def answer(question: str) -> dict[str, Any]:
    """The application: ``{"answer", "contexts", "retrieved_ids"}`` for one question."""
    hits = retrieve(question)
    q = _words(question)
    sentences = re.split(r"(?<=[.;:])\s+", hits[0]["text"]) if hits else [""]
    best = max(sentences, key=lambda s: len(q & _words(s)))
    return {"answer": best, "contexts": [h["text"] for h in hits],
            "retrieved_ids": [h["id"] for h in hits]}
