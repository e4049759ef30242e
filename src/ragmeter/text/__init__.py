"""Text handling: normalization, language codes, script classes, sentence splitting, token
overlap (EM, F1) and response-language consistency (RLC)."""

from __future__ import annotations

from ragmeter.text._normalize import (
    normalize_text,
)

__all__ = [
    "normalize_text",
]
