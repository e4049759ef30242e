"""Answer-matching metrics, exactly as LBRAG computes them (kanoes/LBRAG-NEW,
``lbrag/metrics.py``: ``exact_match``, ``f1_score``)."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from itertools import count
from typing import TYPE_CHECKING

from ragmeter.text._languages import CHAR_TOKEN_LANGUAGES
from ragmeter.text._normalize import normalize_text

if TYPE_CHECKING:  # numpy only inside the batch function: a small score never imports it
    import numpy as np

__all__ = ["exact_match", "token_f1", "f1_from_normalized", "f1_from_tokens", "tokens_for_f1",
           "multiset_overlap", "f1_many"]


def exact_match(prediction: str, gold: str) -> float:
    """1.0 when the normalized prediction equals the normalized gold answer, else 0.0."""
    return 1.0 if normalize_text(prediction) == normalize_text(gold) else 0.0


def tokens_for_f1(normalized: str, lang: str) -> list[str]:
    """Characters (spaces removed) for ja/zh/zh_cn/zh_tw, else whitespace tokens."""
    return _tokens(normalized, lang in CHAR_TOKEN_LANGUAGES)


def _tokens(normalized: str, char_tokens: bool) -> list[str]:
    """:func:`tokens_for_f1` given whether the language's tokens are characters."""
    if char_tokens:
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


def f1_many(preds: Sequence[str], golds: Sequence[str], char_tokens: np.ndarray,
            rows: np.ndarray) -> np.ndarray:
    """Token F1 of many pairs of normalized answers at once, as float64: for each row where
    ``rows`` (a bool array) is set, the F1 of ``tokens_for_f1`` of the prediction and of the
    gold (characters without spaces where ``char_tokens`` is set, else whitespace tokens):
    :func:`f1_from_tokens`, 0.0 when either side has no token; 0.0 at the other rows.

    Equal to the per-row functions value for value (property-tested): each token becomes an
    integer (its code point for characters; an index into this call's table of distinct
    whitespace tokens otherwise), each row's multiset overlap is the sum over its distinct
    tokens of the smaller count on either side (sorted keys), and precision, recall and F1
    are the same IEEE operations in the same order on the same integers.
    """
    import numpy as np

    out = np.zeros(len(preds), dtype=np.float64)
    word = np.flatnonzero(rows & ~char_tokens)
    chars = np.flatnonzero(rows & char_tokens)
    m, k = len(word), len(chars)
    if not m + k:
        return out
    held_p = np.empty(len(preds), dtype=object)
    held_p[:] = preds
    held_g = np.empty(len(golds), dtype=object)
    held_g[:] = golds
    # texts 0..2m-1: the word rows' predictions then golds; 2m..: the character rows' alike
    parts: list[tuple[np.ndarray, np.ndarray]] = []  # (text of each token, token)
    lengths: list[np.ndarray] = []
    if m:
        texts = [*held_p[word].tolist(), *held_g[word].tolist()]
        tokens = " \x00 ".join(texts).split()  # whitespace keeps tokens of two texts apart
        ids: defaultdict[str, int] = defaultdict(count().__next__)
        tok = np.fromiter(map(ids.__getitem__, tokens), dtype=np.int64, count=len(tokens))
        sep = tok == ids["\x00"]
        if int(sep.sum()) != 2 * m - 1:  # a text holds a lone NUL token: row by row
            for i in np.flatnonzero(rows).tolist():
                pt, gt = _tokens(preds[i], bool(char_tokens[i])), _tokens(golds[i], bool(char_tokens[i]))
                out[i] = f1_from_tokens(pt, gt) if pt and gt else 0.0
            return out
        text = np.cumsum(sep)[~sep]
        parts.append((text, tok[~sep]))
        lengths.append(np.bincount(text, minlength=2 * m))
    if k:
        texts = [*held_p[chars].tolist(), *held_g[chars].tolist()]
        cps = np.frombuffer("".join(texts).encode("utf-32-le", "surrogatepass"),
                            dtype=np.uint32).astype(np.int64)
        owner = np.repeat(np.arange(2 * m, 2 * m + 2 * k),
                          np.fromiter(map(len, texts), dtype=np.int64, count=2 * k))
        counted = cps != 0x20  # spaces are no tokens
        parts.append((owner[counted], cps[counted]))
        lengths.append(np.bincount(owner[counted] - 2 * m, minlength=2 * k))
    text = np.concatenate([p[0] for p in parts])
    tok = np.concatenate([p[1] for p in parts])
    # the pair (0..m+k-1) and the side (gold or not) of each text
    is_gold = (text >= m) & (text < 2 * m) | (text >= 2 * m + k)
    pair = np.where(text < 2 * m, text % max(m, 1), m + (text - 2 * m) % max(k, 1))
    width = int(tok.max()) + 1 if tok.size else 1
    key = pair * width + tok
    kp, cp = np.unique(key[~is_gold], return_counts=True)
    kg, cg = np.unique(key[is_gold], return_counts=True)
    overlap: np.ndarray = np.zeros(m + k, dtype=np.float64)
    if kp.size and kg.size:  # the keys on both sides, each with its smaller count
        at = np.minimum(np.searchsorted(kg, kp), kg.size - 1)
        hit = kg[at] == kp
        overlap = np.bincount(kp[hit] // width, weights=np.minimum(cp[hit], cg[at[hit]]),
                              minlength=m + k)
    len_p = np.concatenate([ln[:len(ln) // 2] for ln in lengths]).astype(np.float64)
    len_g = np.concatenate([ln[len(ln) // 2:] for ln in lengths]).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        precision = overlap / len_p
        recall = overlap / len_g
        f1 = 2 * precision * recall / (precision + recall)
    out[np.concatenate([word, chars])] = np.where(overlap > 0, f1, 0.0)
    return out


def token_f1(prediction: str, gold: str, lang: str) -> float:
    """Language-aware token F1 over normalized text.

    Both empty after normalization -> 1.0; exactly one empty -> 0.0; tokens are characters
    for ``ja``, ``zh``, ``zh_cn``, ``zh_tw`` and whitespace tokens otherwise; multiset
    overlap; harmonic mean of precision and recall.
    """
    return f1_from_normalized(normalize_text(prediction), normalize_text(gold), lang)
