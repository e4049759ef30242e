"""LBRAG's answer normalization (kanoes/LBRAG-NEW, ``lbrag/metrics.py``, ``normalize_text``).

Steps, as in the original: lowercase and strip; collapse whitespace; replace every run of
characters outside a whitelist of scripts by one space; collapse and strip again.
"""

from __future__ import annotations

import re

__all__ = ["normalize_text", "KEEP_CHARS"]

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
