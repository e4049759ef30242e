"""Chunking a knowledge base for ``rubric build``, and sampling chunks with a seed.

Two chunkers:

- ``sections`` (default): Markdown sections.  A section starts at a heading line (``#`` to
  ``######``); a heading with no text before the next heading is joined to that next section;
  a section longer than ``chunk_size`` characters is cut at blank lines (a single paragraph
  longer than that at the last whitespace before the limit).  RAGaliq's generation chunks
  (the ``context`` of ``questions_en.json``) are such heading sections, 117 to 5,415
  characters long.
- ``lines``: one line, one chunk; the distinct non-blank lines that ``rubric run``'s reference
  pipeline retrieves (:func:`ragmeter.rubric._pipeline.read_kb`, RAGaliq's ``eval.py``).

Chunks shorter than ``min_chars`` are skipped (a heading alone cannot hold a question).
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ragmeter.errors import ConfigError, InputError

__all__ = ["Chunk", "chunk_text", "chunk_files", "sample_chunks", "Chunking"]

COMPONENT = "rubric"
Chunking = Literal["sections", "lines"]
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s")


@dataclass(frozen=True)
class Chunk:
    """One chunk: ``id`` is ``<file name>#<index>`` (stable for a file and settings)."""

    id: str
    source: str
    index: int
    text: str


def _split_long(text: str, size: int) -> list[str]:
    if len(text) <= size:
        return [text]
    pieces: list[str] = []
    current = ""
    for para in re.split(r"\n\s*\n", text):
        candidate = f"{current}\n\n{para}" if current else para
        if len(candidate) <= size:
            current = candidate
            continue
        if current:
            pieces.append(current)
        while len(para) > size:
            cut = para.rfind(" ", 0, size)
            cut = cut if cut > size // 2 else size
            pieces.append(para[:cut])
            para = para[cut:].lstrip()
        current = para
    if current:
        pieces.append(current)
    return pieces


def chunk_text(text: str, chunking: Chunking = "sections", chunk_size: int = 4000,
               min_chars: int = 50) -> list[str]:
    """The chunks of one document, in order (pure)."""
    if chunk_size < 100:
        raise ConfigError(f"rubric: --chunk-size must be at least 100 characters, got "
                          f"{chunk_size}.")
    if chunking == "lines":
        seen: set[str] = set()
        lines = []
        for line in text.splitlines():  # as pipeline.read_kb
            s = line.strip()
            if s and s not in seen:
                seen.add(s)
                lines.append(s)
        return [s for s in lines if len(s) >= min_chars]
    sections: list[list[str]] = [[]]
    for line in text.splitlines():
        if _HEADING.match(line) and any(not _HEADING.match(x) and x.strip()
                                         for x in sections[-1]):
            sections.append([])
        sections[-1].append(line)
    out: list[str] = []
    for sec in sections:
        body = "\n".join(sec).strip()
        if body:
            out.extend(p.strip() for p in _split_long(body, chunk_size))
    return [c for c in out if len(c) >= min_chars]


def chunk_files(paths: Sequence[str | Path], chunking: Chunking = "sections",
                chunk_size: int = 4000, min_chars: int = 50) -> list[Chunk]:
    """Chunks of every knowledge-base file, in file order."""
    out: list[Chunk] = []
    for path in paths:
        p = Path(path)
        if chunking == "lines":
            from ragmeter.rubric._pipeline import read_kb

            read_kb(p)  # the reference pipeline's errors for a missing/empty/non-UTF-8 file
        try:
            text = p.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise InputError("does not exist.", component=COMPONENT, path=p,
                             fix="give a knowledge base text or Markdown file.") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"cannot be read as UTF-8 text ({exc}).", component=COMPONENT,
                             path=p, fix="re-save it as UTF-8.") from None
        texts = chunk_text(text, chunking, chunk_size, min_chars)
        out.extend(Chunk(f"{p.name}#{i}", p.name, i, t) for i, t in enumerate(texts))
    if not out:
        raise InputError(f"no chunk of at least {min_chars} characters.", component=COMPONENT,
                         path=Path(paths[0]) if paths else None,
                         fix="give a longer knowledge base, or lower --min-chunk-chars.")
    return out


def sample_chunks(chunks: Sequence[Chunk], n: int | None, seed: int = 0) -> list[Chunk]:
    """``n`` chunks drawn without replacement with ``random.Random(seed)``, kept in document
    order; all chunks when ``n`` is None or not smaller than their number."""
    if n is None or n >= len(chunks):
        return list(chunks)
    if n < 1:
        raise ConfigError(f"rubric: --sample must be at least 1, got {n}.")
    picked = sorted(random.Random(seed).sample(range(len(chunks)), n))
    return [chunks[i] for i in picked]
