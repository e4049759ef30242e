"""LBRAG's answer normalization (kanoes/LBRAG-NEW, ``lbrag/metrics.py``, ``normalize_text``).

Steps, as in the original: lowercase and strip; collapse whitespace; replace every run of
characters outside a whitelist of scripts by one space; collapse and strip again.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy only inside the batch function: a small score never imports it
    import numpy as np

__all__ = ["normalize_text", "normalize_many", "normalize_squad", "NORMALIZERS", "KEEP_CHARS"]

# The whitelist of the original: digits, a-z, Latin-1 supplement and Latin Extended-A/B,
# Cyrillic, Hebrew, Arabic (+ presentation forms A and B), Thai, Hangul Jamo and syllables,
# Hiragana, Katakana, CJK Unified Ideographs.
KEEP_CHARS = (
    "0-9a-z"
    "\u00c0-\u024f"
    "\u0400-\u04ff"
    "\u0590-\u05ff"
    "\u0600-\u06ff"
    "\ufb50-\ufdff"
    "\ufe70-\ufeff"
    "\u0e00-\u0e7f"
    "\u1100-\u11ff"
    "\uac00-\ud7af"
    "\u3040-\u309f"
    "\u30a0-\u30ff"
    "\u4e00-\u9fff"
)
_DROP = re.compile(f"[^{KEEP_CHARS}]+")
_SPACES = re.compile(r"\s+")


def normalize_text(text: str) -> str:
    """Normalize an answer the LBRAG way (lowercase, script whitelist, single spaces)."""
    text = _SPACES.sub(" ", text.lower().strip())
    text = _DROP.sub(" ", text)
    return _SPACES.sub(" ", text).strip()


_SEP = "\x00"
_RANGES = ((0x30, 0x39), (0x61, 0x7A), (0xC0, 0x24F), (0x400, 0x4FF), (0x590, 0x5FF),
           (0x600, 0x6FF), (0xFB50, 0xFDFF), (0xFE70, 0xFEFF), (0xE00, 0xE7F), (0x1100, 0x11FF),
           (0xAC00, 0xD7AF), (0x3040, 0x309F), (0x30A0, 0x30FF), (0x4E00, 0x9FFF))


@lru_cache(maxsize=1)
def _keep_table() -> np.ndarray:
    """Boolean table over all code points: True for the whitelist (and the NUL separator)."""
    import numpy as np

    table = np.zeros(0x110000, dtype=bool)
    for lo, hi in _RANGES:
        table[lo:hi + 1] = True
    table[0] = True
    return table


def normalize_many(texts: list[str]) -> list[str]:
    """``[normalize_text(t) for t in texts]``, computed over one joined string with numpy.

    Whitespace is outside the whitelist, so replacing each maximal run of non-whitelisted
    characters by one space already leaves single spaces; the original's whitespace collapses
    then change nothing and its strips reduce to one final strip.  The texts are joined by NUL,
    which no step changes (kept as a separator; it breaks the final-sigma context of
    ``str.lower`` as a string end does).  When a text contains NUL itself, each text is
    normalized on its own.  Property tests check equality with :func:`normalize_text`.
    """
    import numpy as np

    if not texts:
        return []
    joined = _SEP.join(texts)
    if joined.count(_SEP) != len(texts) - 1:
        return [normalize_text(t) for t in texts]
    low = joined.lower()
    cps = np.frombuffer(low.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    if cps.size == 0:
        return [""] * len(texts)
    keep = _keep_table()[cps]
    start_of_run = ~keep
    start_of_run[1:] &= keep[:-1]  # first character of a run of dropped characters
    out = np.where(keep, cps, np.uint32(0x20))[keep | start_of_run]
    # the final strip, over the whole array: a space (only runs of dropped characters leave
    # one) at either end or beside a separator goes
    edge = np.ones(out.size + 1, dtype=bool)
    edge[1:-1] = out[1:] == 0
    edge[1:-1] |= out[:-1] == 0
    out = out[(out != 0x20) | ~(edge[:-1] | edge[1:])]
    return out.tobytes().decode("utf-32-le", "surrogatepass").split(_SEP)


_SQUAD_PUNCT = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
_SQUAD_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize_squad(text: str) -> str:
    """SQuAD v1.1's ``normalize_answer`` (its official evaluate-v1.1.py): lower case, remove
    ASCII punctuation, remove the articles a/an/the, collapse whitespace.  Unlike LBRAG's
    normalization it keeps every script's characters and drops articles."""
    text = "".join(ch for ch in text.lower() if ch not in _SQUAD_PUNCT)
    text = _SQUAD_ARTICLES.sub(" ", text)
    return " ".join(text.split())


# name -> one-text normalizer; "lbrag" is the default and the only one with a batched form.
NORMALIZERS = {"lbrag": normalize_text, "squad": normalize_squad}
