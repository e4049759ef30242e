"""Answer-matching metrics, exactly as LBRAG computes them (kanoes/LBRAG-NEW,
``lbrag/metrics.py``: ``exact_match``, ``f1_score``)."""

from __future__ import annotations

from collections import Counter

from ragmeter.text._languages import CHAR_TOKEN_LANGUAGES
from ragmeter.text._normalize import normalize_text

__all__ = ["exact_match", "token_f1", "f1_from_normalized", "f1_from_tokens", "tokens_for_f1",
           "multiset_overlap"]


def exact_match(prediction: str, gold: str) -> float:
    """1.0 when the normalized prediction equals the normalized gold answer, else 0.0."""
    return 1.0 if normalize_text(prediction) == normalize_text(gold) else 0.0


def tokens_for_f1(normalized: str, lang: str) -> list[str]:
    """Characters (spaces removed) for ja/zh/zh_cn/zh_tw, else whitespace tokens."""
    if lang in CHAR_TOKEN_LANGUAGES:
        return list(normalized.replace(" ", ""))
    return normalized.split()


def f1_from_normalized(pred_norm: str, gold_norm: str, lang: str) -> float:
    """Token F1 of two already normalized strings (see :func:`token_f1`)."""
    if not pred_norm and not gold_norm:
        return 1.0
    if not pred_norm or not gold_norm:
        return 0.0
    return f1_from_tokens(tokens_for_f1(pred_norm, lang), tokens_for_f1(gold_norm, lang))


def f1_from_tokens(pred_tokens: list[str], gold_tokens: list[str]) -> float:
    """Token F1 of two non-empty token lists: multiset overlap, then the harmonic mean of
    precision and recall (LBRAG's ``f1_score`` after tokenization)."""
    overlap = multiset_overlap(pred_tokens, gold_tokens)
    if overlap == 0:
        return 0.0
    precision = overlap / len(pred_tokens)
    recall = overlap / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def multiset_overlap(a: list[str], b: list[str]) -> int:
    """Size of the multiset intersection of ``a`` and ``b`` (``sum((Counter(a) & Counter(b))
    .values())``), without building Counters for the short lists that answers are: when
    neither list repeats a token, the multiset intersection is the set intersection."""
    unique_a = set(a)
    if len(unique_a) == len(a):
        unique_b = set(b)
        if len(unique_b) == len(b):
            return len(unique_a.intersection(unique_b))
    if len(a) * len(b) > 256:
        return sum((Counter(a) & Counter(b)).values())
    remaining = list(b)
    count = 0
    for token in a:
        if token in remaining:
            remaining.remove(token)
            count += 1
    return count


def token_f1(prediction: str, gold: str, lang: str) -> float:
    """Language-aware token F1 over normalized text.

    Both empty after normalization -> 1.0; exactly one empty -> 0.0; tokens are characters
    for ``ja``, ``zh``, ``zh_cn``, ``zh_tw`` and whitespace tokens otherwise; multiset
    overlap; harmonic mean of precision and recall.
    """
    return f1_from_normalized(normalize_text(prediction), normalize_text(gold), lang)
