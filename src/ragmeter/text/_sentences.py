"""Sentence splitting beyond English, and RAGBench's sentence keys and rendering.

Splitting uses ``sentencex`` (Wikimedia's rule-based segmenter, ~300 languages, rules shipped
inside the package, no download), imported when first needed; it is the ``ragmeter[text]``
extra.  Line breaks always end a sentence, as in RAGBench's ``documents_sentences`` (a
document's ``Title: ...`` line is its own sentence there, e.g. RAGBench covidqa row 1, key
``0a``).

Keys (RAGBench, Friel et al. 2024, arXiv:2407.11005, Appendix 7.4, verified on the released
test splits): document sentences ``<document index><letters>`` (``0a``, ``0b``, ...), response
sentences ``<letters>`` (``a``, ``b``, ...).  The letters are bijective base 26:
``a``..``z``, then ``aa``..``az``, ``ba``, ... (RAGBench emanual has keys ``0ay``, ``0az``,
``0ba``).  Rendering for the labelling prompt: one sentence per line prefixed by its key and a
dot (``0a. The team ...``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import cast

from ragmeter.errors import MissingDependencyError

__all__ = [
    "split_sentences",
    "letter_key",
    "letter_index",
    "key_document_sentences",
    "key_response_sentences",
    "key_documents",
    "render_keyed",
    "parse_key",
]

_LINE_BREAK = re.compile(r"\s*[\r\n]+\s*")
_KEY = re.compile(r"^(\d*)([a-z]+)$")


def _segmenter():  # pragma: no cover - trivial import wrapper
    try:
        from sentencex import segment
    except ImportError:
        raise MissingDependencyError(
            "sentencex (sentence splitting)", "pip install 'ragmeter[text]'",
            detail="needed to split documents and responses into sentences") from None
    return segment


def split_sentences(text: str, language: str = "en") -> list[str]:
    """Split ``text`` into sentences: at line breaks, then by ``sentencex`` rules of
    ``language`` (an ISO 639 code; unknown codes fall back to sentencex's generic rules).

    Sentences are stripped; empty ones are dropped.  An empty text has no sentences.
    """
    segment = _segmenter()
    lang = (language or "en").strip().lower().replace("_", "-").split("-")[0] or "en"
    out: list[str] = []
    for line in _LINE_BREAK.split(text.strip()):
        if not line:
            continue
        for sentence in segment(lang, line):
            s = sentence.strip()
            if s:
                out.append(s)
    return out


def letter_key(index: int) -> str:
    """0 -> ``a``, 25 -> ``z``, 26 -> ``aa``, 52 -> ``ba`` (bijective base 26)."""
    if index < 0:
        raise ValueError("sentence index must be >= 0")
    letters = ""
    n = index + 1
    while n:
        n, rem = divmod(n - 1, 26)
        letters = chr(ord("a") + rem) + letters
    return letters


def letter_index(letters: str) -> int:
    """Inverse of :func:`letter_key`: ``a`` -> 0, ``aa`` -> 26."""
    n = 0
    for ch in letters:
        if not "a" <= ch <= "z":
            raise ValueError(f"not a letter key: {letters!r}")
        n = n * 26 + (ord(ch) - ord("a") + 1)
    if n == 0:
        raise ValueError("empty letter key")
    return n - 1


def parse_key(key: str) -> tuple[int | None, int] | None:
    """``"2c"`` -> ``(2, 2)``; ``"b"`` -> ``(None, 1)``; None when ``key`` is not a key."""
    m = _KEY.match(key)
    if not m:
        return None
    doc = int(m.group(1)) if m.group(1) else None
    return doc, letter_index(m.group(2))


def key_document_sentences(doc_index: int, sentences: Sequence[str]) -> list[tuple[str, str]]:
    """``[("0a", s0), ("0b", s1), ...]`` for document ``doc_index``."""
    return [(f"{doc_index}{letter_key(i)}", s) for i, s in enumerate(sentences)]


def key_response_sentences(sentences: Sequence[str]) -> list[tuple[str, str]]:
    """``[("a", s0), ("b", s1), ...]``."""
    return [(letter_key(i), s) for i, s in enumerate(sentences)]


def key_documents(documents: Sequence[str], language: str = "en") -> list[list[tuple[str, str]]]:
    """Split and key every document: RAGBench's ``documents_sentences`` layout."""
    return [key_document_sentences(d, split_sentences(doc, language))
            for d, doc in enumerate(documents)]


def render_keyed(keyed: Sequence[tuple[str, str]] | Sequence[Sequence[tuple[str, str]]]) -> str:
    """One sentence per line prefixed by ``key.``; a list of documents is flattened in order."""
    lines: list[str] = []
    for item in keyed:
        if not item or isinstance(item[0], (list, tuple)):  # a document (maybe empty)
            lines.extend(f"{k}. {s}" for k, s in cast("Sequence[tuple[str, str]]", item))
        else:
            k, s = cast("tuple[str, str]", item)
            lines.append(f"{k}. {s}")
    return "\n".join(lines)
