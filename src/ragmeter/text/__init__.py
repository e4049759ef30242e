"""Text handling: normalization, language codes, script classes, sentence splitting."""

from ragmeter.text.normalize import normalize_text

__all__ = ["normalize_text"]
