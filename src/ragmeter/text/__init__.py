"""Text handling: normalization, language codes, script classes, sentence splitting, token
overlap (EM, F1) and response-language consistency (RLC)."""

from __future__ import annotations

import typing

if typing.TYPE_CHECKING:
    from ragmeter.text._normalize import normalize_text

__all__ = [
    "normalize_text",
]


def __getattr__(name: str) -> typing.Any:
    """``normalize_text`` loads on first use: reading a file imports ``text._unicode`` through
    this package, and a judged command's start-up need not compile the normalizer's patterns
    (issue 26.5)."""
    if name == "normalize_text":
        from ragmeter.text._normalize import normalize_text

        return normalize_text
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
